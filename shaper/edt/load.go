package edt

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
)

// Default map sizes: room for a UPF with a million PDU sessions, each with
// its default flow and one more QoS flow, one mark per flow.
const (
	DefaultSessions = 1_000_000
	DefaultFlows    = 2 * DefaultSessions
	DefaultMarks    = DefaultFlows
	DefaultKeys     = DefaultFlows
	// DefaultRules is the TEIDs whose SDF rules the rules map holds: one
	// downlink TEID a session.
	DefaultRules = DefaultSessions
	// MaxEntries bounds each map's size (the kernel allocates a bucket
	// array of the next power of two, 16 bytes a bucket, at load).
	MaxEntries = 1 << 26
)

// LoadOptions tune Load. The zero value is the defaults.
type LoadOptions struct {
	// Sessions, Flows, Marks, Keys ((TEID, QFI) pairs) and Rules (TEIDs
	// with SDF rules) are the maps' max_entries (0: the defaults above).
	Sessions, Flows, Marks, Keys, Rules int
	// Preallocate allocates every entry of the session, flow and mark
	// maps at load (the kernel's default for hash maps) instead of on
	// update (BPF_F_NO_PREALLOC, the package's default). See the README
	// for what each costs.
	Preallocate bool
	// Overhead is the bytes of skb->len at this device's egress that are
	// not the user's IP packet (shaper.Policy.ResolveOverhead: 58 on an
	// Ethernet IPv4 N3, 14 on N6, 0 under frame accounting).
	Overhead uint32
	// L3 says the device has no link-layer header (EncapType none): the
	// outer IPv4 header of a GTP-U packet starts the frame. Else it
	// starts after 14 bytes of Ethernet.
	L3 bool
	// Burst is the idle credit of every flow's MBR clock and every
	// session's AMBR clock, in bytes: a flow or session that sent below
	// its rate may then send this much at once (0: none, pure pacing).
	// The backend gives DefaultBurst.
	Burst uint32
	// FlowAhead bounds how many of a flow's packets bound for the non-GBR
	// class may be scheduled ahead (0: none but the budget): fq's
	// flow_limit of the leaf they wait in, less a few, so that fq never
	// drops a packet the clocks were charged for. The backend gives
	// DefaultFlowAhead.
	FlowAhead uint32

	// noKeys: the program was pinned by a gtpqos without the (TEID,
	// QFI) map; it finds flows by mark only.
	noKeys bool
	// noRules: the program was pinned by a gtpqos without the SDF rule
	// map; it finds unmarked flows by (TEID, QFI) only.
	noRules bool
	// echo makes the program copy what it set into skb->cb (tests).
	echo bool
	// code is the program's fingerprint (config.code): ownCode for a
	// program loaded here, what the config map holds for one pinned.
	code Code
}

// Pacer is one loaded program and its maps (one per device and direction).
type Pacer struct {
	objs edtObjects
	opts LoadOptions
}

func (o *LoadOptions) resolve() error {
	for _, m := range []struct {
		name string
		n    *int
		def  int
	}{{"sessions", &o.Sessions, DefaultSessions}, {"flows", &o.Flows, DefaultFlows}, {"marks", &o.Marks, DefaultMarks}, {"keys", &o.Keys, DefaultKeys}, {"rules", &o.Rules, DefaultRules}} {
		if *m.n == 0 {
			*m.n = m.def
		}
		if *m.n < 0 || *m.n > MaxEntries {
			return fmt.Errorf("edt: map %s: size %d out of range 1..%d", m.name, *m.n, MaxEntries)
		}
	}
	if o.Overhead > shaper.MaxOverhead {
		return fmt.Errorf("edt: overhead %d bytes above %d", o.Overhead, shaper.MaxOverhead)
	}
	return nil
}

// Load loads the program and its maps. It needs CAP_BPF and CAP_NET_ADMIN
// (never CAP_SYS_ADMIN); the error names the object the kernel refused.
func Load(opts LoadOptions) (*Pacer, error) {
	if err := opts.resolve(); err != nil {
		return nil, err
	}
	// A no-op on kernels that account BPF memory to the memory cgroup (5.11+).
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, permErr("edt: raise RLIMIT_MEMLOCK", err)
	}
	spec, err := loadEdt()
	if err != nil {
		return nil, fmt.Errorf("edt: %w", err)
	}
	for name, n := range map[string]int{edtMapSessions: opts.Sessions, edtMapFlows: opts.Flows, edtMapMarks: opts.Marks, edtMapTeids: opts.Keys, edtMapRules: opts.Rules} {
		m := spec.Maps[name]
		m.MaxEntries = uint32(n)
		if opts.Preallocate {
			m.Flags &^= noPrealloc
		}
	}
	if err := spec.Variables[edtVarOverhead].Set(opts.Overhead); err != nil {
		return nil, fmt.Errorf("edt: set overhead: %w", err)
	}
	if err := spec.Variables[edtVarL2Len].Set(opts.l2Len()); err != nil {
		return nil, fmt.Errorf("edt: set l2_len: %w", err)
	}
	if opts.echo {
		if err := spec.Variables[edtVarEcho].Set(uint32(1)); err != nil {
			return nil, fmt.Errorf("edt: set echo: %w", err)
		}
	}
	if opts.code, err = ownCode(); err != nil {
		return nil, err
	}
	p := &Pacer{opts: opts}
	if err := spec.LoadAndAssign(&p.objs, nil); err != nil {
		if errors.Is(err, unix.EPERM) {
			return nil, permErr("edt: load objects", err)
		}
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("edt: verifier refused the program: %w", err)
		}
		return nil, fmt.Errorf("edt: load objects: %w", err)
	}
	if err := p.SetDefaultClass(0); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// l2Len is the bytes in front of the outer IPv4 header.
func (o LoadOptions) l2Len() uint32 {
	if o.L3 {
		return 0
	}
	return 14
}

// Current reports whether the program finds flows by SDF rule and (TEID,
// QFI) as well as by mark: false for one pinned by an older gtpqos, which
// a backend replaces.
func (p *Pacer) Current() bool { return !p.opts.noKeys && !p.opts.noRules }

// noPrealloc is BPF_F_NO_PREALLOC.
const noPrealloc = 1

// Close releases the program and maps held by this process; an attached
// filter keeps its own reference.
func (p *Pacer) Close() error {
	if p == nil {
		return nil
	}
	return p.objs.Close()
}

// Program is the clsact egress program (cls_bpf, direct action).
func (p *Pacer) Program() *ebpf.Program { return p.objs.EdtEgress }

// Options returns the options the pacer was loaded with, defaults filled in.
func (p *Pacer) Options() LoadOptions { return p.opts }

// SetDefaultClass sets the class id (major<<16 | minor) that packets no
// flow claims get as skb->priority; 0 leaves skb->priority alone.
func (p *Pacer) SetDefaultClass(classID uint32) error {
	if err := p.objs.Config.Put(uint32(0), edtEdtConfig{DefaultClass: classID, Overhead: p.opts.Overhead, L2Len: p.opts.l2Len(), Burst: p.opts.Burst, FlowAhead: p.opts.FlowAhead, Code: p.opts.code}); err != nil {
		return fmt.Errorf("edt: map config: set default class %#x: %w", classID, err)
	}
	return nil
}

// permErr names the capabilities the process lacks when the kernel said
// EPERM (what then failed is what needs them).
func permErr(what string, err error) error {
	if missing := classify.MissingCaps(classify.BPFCaps...); len(missing) > 0 && errors.Is(err, unix.EPERM) {
		return fmt.Errorf("%s: missing %s: %w", what, strings.Join(missing, " and "), err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
