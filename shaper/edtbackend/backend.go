package edtbackend

import (
	"errors"
	"fmt"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/shaper/edt"
	"github.com/free5gc/gtpqos/shaper/htb"
)

// Options configure a Backend.
type Options struct {
	// NetNS is the device's network namespace (0 or netns.None(): the
	// current one).
	NetNS netns.NsHandle
	// Force lets Apply replace a root qdisc gtpqos did not create.
	Force bool
	// Direction is the flows' direction on the device (the overhead).
	Direction shaper.Direction
	// Sessions sizes the program's maps when Apply loads them (0:
	// DefaultSessions; two flows, two marks and two keys a session).
	Sessions int
	// Marker, on an uplink (N6) device whose packets come unmarked from
	// stock gtp5g, is the GTP-U classifier's N3 ingress half
	// (gtpu.Classifier.UplinkMarker): Apply hands it each flow's mark,
	// TEID and QFI, so it marks the uplink packets before gtp5g
	// decapsulates them and the program finds them by mark here.
	Marker classify.Classifier
}

// DefaultSessions is the sessions map's size a load gives by default: the
// empty maps cost ~80 bytes an entry of room (no preallocation).
const DefaultSessions = 65536

// Backend is the edt backend on one device. It is safe for one writer;
// its methods take a lock.
type Backend struct {
	mu      sync.Mutex
	dev     string
	h       *netlink.Handle
	release func()
	conn    *htb.Conn
	opt     Options
	// pacer is the program and its maps, loaded or opened from the pins.
	pacer *edt.Pacer
	// last is the last plan a successful Apply or Update made true (nil:
	// none; after a failure too); trusted says the maps hold it (no
	// Resync since).
	last    *Plan
	pol     shaper.Policy
	flows   map[shaper.FlowID]shaper.Flow
	trusted bool
	failed  bool
	// sdf are the sessions' SDF rules (SetSDF), planned with every
	// Apply's flows on a downlink device.
	sdf []shaper.SessionRules
	// inc lets Update plan only the sessions it is given (update.go);
	// nil: Update plans every flow.
	inc *incremental
}

// Open returns the backend for dev, working through h (release frees it
// and the device's lock; Close calls it).
func Open(h *netlink.Handle, release func(), dev string, o Options) (*Backend, error) {
	if o.NetNS == 0 {
		o.NetNS = netns.None()
	}
	if o.Direction == 0 {
		o.Direction = shaper.Downlink
	}
	if o.Sessions == 0 {
		o.Sessions = DefaultSessions
	}
	c, err := htb.Dial(o.NetNS)
	if err != nil {
		return nil, fmt.Errorf("dev %s: %w", dev, err)
	}
	return &Backend{dev: dev, h: h, release: release, conn: c, opt: o}, nil
}

// Name implements shaper.Named.
func (b *Backend) Name() string { return Name }

// Dev implements shaper.Named.
func (b *Backend) Dev() string { return b.dev }

// Close releases the program's handles, the sockets and the device's
// lock; the device keeps its tree and the pins keep the program.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var err error
	if b.pacer != nil {
		err = b.pacer.Close()
		b.pacer = nil
	}
	if b.conn != nil {
		b.conn.Close()
		b.conn = nil
	}
	if b.release != nil {
		b.release()
		b.release = nil
	}
	b.last, b.failed = nil, true
	return err
}

// Resync makes the next Apply read the maps and the tree back.
func (b *Backend) Resync() {
	b.mu.Lock()
	b.trusted = false
	b.mu.Unlock()
}

// link looks the device up.
func (b *Backend) link() (netlink.Link, error) {
	l, err := b.h.LinkByName(b.dev)
	if err != nil {
		return nil, fmt.Errorf("dev %s: %w", b.dev, err)
	}
	return l, nil
}

// errClosed is what a closed backend answers.
var errClosed = errors.New("edt backend closed")
