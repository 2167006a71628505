package plan

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/spec"
)

// Knobs are the HTB backend's own settings: what a policy file gives under
// `htb:` (and, read the same way, as top-level policy keys).
//
// All sizes are bytes.
type Knobs struct {
	// Burst and CBurst are every class's token buckets in bytes (32 KiB:
	// Set explicitly, because HTB's derived buckets of about one frame make
	// shares come out wrong at these rates). Keys burst, cburst.
	Burst, CBurst uint32
	// Quantum is every class's DRR quantum in bytes (12500); Plan raises it
	// to MaxFrame if it is smaller, since a quantum below the largest frame
	// skews the sharing between classes. Key quantum.
	Quantum uint32
	// MaxFrame is the largest frame on the device in bytes (1514). Key
	// max_frame.
	MaxFrame uint32
	// Prio is every flow class's HTB priority (0..7; default 0: classes
	// share by rate and quantum alone, the default class has 7). Key prio.
	Prio uint32
	// Leaf is the qdisc under each leaf class. Keys leaf (the kind),
	// leaf_limit, leaf_interval, leaf_target.
	Leaf LeafSpec
	// Classifier is the classifier kind to use (auto, fw, bpf or gtpu);
	// Plan reports any other kind as a policy error. Key classifier.
	Classifier spec.Kind
	// Pool is how many spare classes a long-running backend keeps ready
	// for new flows (0: none). A new flow then costs a class change, not a
	// Create, whose kernel cost grows with the classes present; a removed
	// flow's class is parked as a spare while there are fewer than Pool.
	// Key pool.
	Pool int
}

// LeafSpec describes the qdisc under every leaf class (flows and default).
type LeafSpec struct {
	// Kind is the qdisc kind (auto resolves in the Reconciler).
	Kind LeafKind
	// Limit is fq_codel's packet limit (default 1000, fq_codel's own
	// default is 10240: a shorter queue keeps a flow's delay bounded at
	// low rates).
	Limit uint32
	// TargetUs is fq_codel's target delay in µs. Only the kernel's default,
	// 5000, is supported: vishvananda/netlink v1.3.1 does not send the
	// target attribute.
	TargetUs uint32
	// IntervalUs is fq_codel's interval in µs (default 100000, the
	// kernel's).
	IntervalUs uint32
}

// Defaults of DefaultKnobs (the Knobs fields say why).
const (
	// DefaultBurst is every class's burst and cburst, 32 KiB.
	DefaultBurst = 32 * 1024
	// DefaultQuantum is every class's DRR quantum in bytes.
	DefaultQuantum = 12500
	// DefaultMaxFrame is the largest Ethernet frame without VLAN tags.
	DefaultMaxFrame = 1514
	// DefaultPool is how many spare classes a backend keeps ready.
	DefaultPool = 64
)

// DefaultKnobs returns burst/cburst 32 KiB, quantum 12500, max frame
// 1514, prio 0, fq_codel limit 1000 target 5 ms interval 100 ms (auto:
// FIFO where fq_codel is missing), classifier auto and a pool of 64.
func DefaultKnobs() Knobs {
	return Knobs{
		Burst:      DefaultBurst,
		CBurst:     DefaultBurst,
		Quantum:    DefaultQuantum,
		MaxFrame:   DefaultMaxFrame,
		Leaf:       LeafSpec{Kind: LeafAuto, Limit: 1000, TargetUs: 5000, IntervalUs: 100000},
		Classifier: spec.KindAuto,
		Pool:       DefaultPool,
	}
}

// The policy file reads HTB's knobs as it reads the rest of a policy.
func init() {
	shaper.RegisterKnobs(Name, func(k shaper.Knobs) error {
		_, err := DecodeKnobs(k, DefaultKnobs())
		return err
	})
}

// knobKeys are the keys DecodeKnobs knows, each with how to set it.
var knobKeys = map[string]func(k *Knobs, v string) error{
	"burst":         func(k *Knobs, v string) error { return setSize(&k.Burst, v) },
	"cburst":        func(k *Knobs, v string) error { return setSize(&k.CBurst, v) },
	"quantum":       func(k *Knobs, v string) error { return setSize(&k.Quantum, v) },
	"max_frame":     func(k *Knobs, v string) error { return setSize(&k.MaxFrame, v) },
	"prio":          func(k *Knobs, v string) error { return setUint(&k.Prio, v, 3) },
	"leaf_limit":    func(k *Knobs, v string) error { return setUint(&k.Leaf.Limit, v, 32) },
	"leaf_interval": func(k *Knobs, v string) error { return setDuration(&k.Leaf.IntervalUs, v) },
	"leaf_target":   func(k *Knobs, v string) error { return setDuration(&k.Leaf.TargetUs, v) },
	"leaf": func(k *Knobs, v string) (err error) {
		k.Leaf.Kind, err = ParseLeafKind(v)
		return err
	},
	"classifier": func(k *Knobs, v string) (err error) {
		k.Classifier, err = spec.ParseKind(v)
		return err
	},
	"pool": func(k *Knobs, v string) error {
		var n uint32
		err := setUint(&n, v, 17)
		k.Pool = int(n)
		return err
	},
}

// DecodeKnobs sets base's knobs from k's keys; an error is one line
// naming the key at fault.
func DecodeKnobs(k shaper.Knobs, base Knobs) (Knobs, error) {
	for _, key := range slices.Sorted(maps.Keys(k)) {
		set, ok := knobKeys[key]
		if !ok {
			return base, fmt.Errorf("unknown key %q (want %s)", key, strings.Join(slices.Sorted(maps.Keys(knobKeys)), ", "))
		}
		if err := set(&base, k[key]); err != nil {
			return base, fmt.Errorf("%s: %w", key, err)
		}
	}
	return base, nil
}

// Encode returns k as the knobs a policy file would give for it, every
// key spelt out: DecodeKnobs of it gives k back.
func (k Knobs) Encode() shaper.Knobs {
	us := func(v uint32) string {
		if v == 0 {
			return "0"
		}
		return (time.Duration(v) * time.Microsecond).String()
	}
	u := func(v uint32) string { return strconv.FormatUint(uint64(v), 10) }
	return shaper.Knobs{"burst": u(k.Burst), "cburst": u(k.CBurst), "quantum": u(k.Quantum), "max_frame": u(k.MaxFrame),
		"prio": u(k.Prio), "leaf": string(k.Leaf.Kind), "leaf_limit": u(k.Leaf.Limit), "leaf_interval": us(k.Leaf.IntervalUs),
		"leaf_target": us(k.Leaf.TargetUs), "classifier": string(k.Classifier), "pool": strconv.Itoa(k.Pool)}
}

// setSize sets a byte field as shaper.Size reads it ("32k"), leaving it
// as it was on an error.
func setSize(dst *uint32, v string) error {
	return (*shaper.Size)(dst).UnmarshalText([]byte(v))
}

func setUint(dst *uint32, v string, bits int) error {
	n, err := shaper.ParseUint(v, bits)
	if err == nil {
		*dst = uint32(n)
	}
	return err
}

// setDuration sets a µs field from a duration ("100ms") in (0, 1h], or
// from "0": the kernel's default.
func setDuration(dst *uint32, v string) error {
	if v == "0" {
		*dst = 0
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 || d > time.Hour {
		return fmt.Errorf("invalid duration %q (e.g. 100ms)", v)
	}
	*dst = uint32(d / time.Microsecond)
	return nil
}
