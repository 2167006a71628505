package edtbackend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/internal/probens"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/edt"
)

// What the kernel must have before the backend writes anything: the fq
// qdisc (its leaves) and the capabilities that load and attach the
// program.

var (
	fqOnce sync.Once
	fqErr  error
)

// probeFq says whether the kernel has sch_fq, probed once per process: an
// fq root on the loopback of a network namespace of the probe's own (so
// the device is not touched), or, where a namespace cannot be made
// (no CAP_SYS_ADMIN), whether the module is loaded, built in or on disk
// for the kernel to load.
func probeFq() error {
	fqOnce.Do(func() {
		fqErr = probens.Run(func(h *netlink.Handle, lo netlink.Link) error {
			q := &netlink.Fq{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: lo.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT}}
			if err := h.QdiscAdd(q); err != nil {
				return fmt.Errorf("edt needs the fq qdisc (sch_fq): this kernel refused one: %v", err)
			}
			return nil
		})
		var noNS *probens.Error
		if errors.As(fqErr, &noNS) {
			fqErr = nil
			if !fqModuleAvailable() {
				fqErr = errors.New("edt needs the fq qdisc (sch_fq): this kernel has none loaded, built in or installed")
			}
		}
	})
	return fqErr
}

// fqModuleAvailable reports whether sch_fq is loaded, built in, or
// installed for this kernel (tc loads it on first use).
func fqModuleAvailable() bool {
	if _, err := os.Stat("/sys/module/sch_fq"); err == nil {
		return true
	}
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	dir := "/lib/modules/" + unix.ByteSliceToString(u.Release[:])
	for _, f := range []string{"modules.builtin", "modules.dep"} {
		b, err := os.ReadFile(dir + "/" + f)
		if err == nil && strings.Contains(string(b), "/sch_fq.ko") {
			return true
		}
	}
	return false
}

// Probe checks, before any write, that this kernel and process can run
// the backend.
func Probe() error {
	if err := classify.NeedBPFCaps(); err != nil {
		return fmt.Errorf("edt: %w", err)
	}
	return probeFq()
}

// Precheck implements shaper.Prechecker: the kernel's fq and the
// process's capabilities, before anything is written.
func (b *Backend) Precheck(ctx context.Context, pol shaper.Policy) error {
	if err := Probe(); err != nil {
		return fmt.Errorf("dev %s: %w", b.dev, err)
	}
	return nil
}

// Owns reports whether dev (through h, in namespace ns) holds the edt
// backend's tree or pins (stale ones too: reset removes them): what
// reset, status and verify open it for.
func Owns(h *netlink.Handle, ns netns.NsHandle, dev string) (bool, error) {
	if tree, err := hasTree(h, dev); err != nil || tree {
		return tree, err
	}
	pins, err := PinsIn(ns, dev)
	if err != nil {
		return false, nil // no pin directory to hold ours
	}
	_, ok, err := pins.Lookup(edt.PinProgram)
	return ok, err
}

// hasTree reports whether dev's root qdisc is the edt backend's HTB root.
func hasTree(h *netlink.Handle, dev string) (bool, error) {
	link, err := h.LinkByName(dev)
	if err != nil {
		return false, fmt.Errorf("dev %s: %w", dev, err)
	}
	qs, err := h.QdiscList(link)
	if err != nil {
		return false, fmt.Errorf("dev %s: list qdiscs: %w", dev, err)
	}
	for _, q := range qs {
		if q.Attrs().Parent == netlink.HANDLE_ROOT && q.Attrs().Handle == rootID() && q.Type() == "htb" {
			return true, nil
		}
	}
	return false, nil
}
