package edtbackend

import (
	"context"
	"fmt"

	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/edt"
)

// Reset implements shaper.Writer: it removes the program's filter (and a
// clsact only gtpqos added), any GTP-U classifier filter of gtpqos's on
// the device (on N3, the ingress program that marks stock gtp5g's uplink),
// the tree rooted at 6765: and the pins, and nothing else; one line per
// thing removed.
func (b *Backend) Reset(ctx context.Context) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conn == nil {
		return nil, errClosed
	}
	link, err := b.link()
	if err != nil {
		return nil, err
	}
	b.last, b.failed, b.trusted = nil, true, false
	var lines []string
	f, err := ourFilter(b.h, b.dev)
	if err != nil {
		return nil, err
	}
	if f != nil {
		a := gtpu.Attachment{LinkIndex: link.Attrs().Index, LinkName: b.dev, Hook: gtpu.Egress, Name: FilterName}
		if err := gtpu.Detach(b.h, a); err != nil {
			return lines, err
		}
		lines = append(lines, fmt.Sprintf("dev %s: removed filter %s from clsact egress", b.dev, FilterName))
	}
	// The GTP-U classifier's N3 ingress program (stock gtp5g's uplink
	// marks, which the N6 tree's program finds flows by), as the HTB
	// backend's reset removes it.
	more, err := gtpu.RemoveAll(b.h, link)
	lines = append(lines, more...)
	if err != nil {
		return lines, err
	}
	root, err := b.readRoot(link)
	if err != nil {
		return lines, err
	}
	if root.ours {
		if err := b.deleteRoot(link); err != nil {
			return lines, err
		}
		lines = append(lines, fmt.Sprintf("dev %s: removed tree %x: (its classes and fq leaves)", b.dev, Major))
	}
	unpinned, err := b.unpin()
	if err != nil {
		return lines, err
	}
	if unpinned {
		lines = append(lines, fmt.Sprintf("dev %s: removed the edt program's pins (program and maps)", b.dev))
	}
	if b.opt.Marker != nil {
		if err := b.opt.Marker.Remove(ctx, classify.Env{Handle: b.h, Link: link, Root: ClassID(0)}); err != nil {
			return lines, fmt.Errorf("dev %s: uplink marks on N3: %w", b.dev, err)
		}
	}
	if len(lines) == 0 {
		lines = append(lines, fmt.Sprintf("dev %s: no gtpqos edt tree, program or pins (nothing removed)", b.dev))
	}
	return lines, nil
}

// unpin closes the held program and removes its pins; false: there were
// none.
func (b *Backend) unpin() (bool, error) {
	if b.pacer != nil {
		_ = b.pacer.Close()
		b.pacer = nil
	}
	pins, err := b.pins()
	if err != nil {
		return false, err
	}
	_, had, err := pins.Lookup(edt.PinProgram)
	if err != nil {
		return false, err
	}
	if err := edt.Unpin(pins); err != nil {
		return false, fmt.Errorf("dev %s: %w", b.dev, err)
	}
	return had, nil
}
