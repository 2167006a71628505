// Package status collects what `gtpqos status` shows: the QoS flows as
// gtp5g holds them (joined by qosview), the module's version, features,
// mark mode and native policer, and, for the N3 and N6 devices, the class
// each flow has and its live rate, read through the devices' backends.
//
// It may import gtpnl, kmod, qosview, the model, package shaper/backends and
// watch (for the daemon's config); it prints nothing.
package status

import (
	"context"

	"github.com/free5gc/gtpqos/gtpnl"
	"github.com/free5gc/gtpqos/kmod"
	"github.com/free5gc/gtpqos/qosview"
	"github.com/free5gc/gtpqos/shaper"
)

// ProblemsPerKind bounds the problems Report.Summary lists per kind (the
// JSON lists them all).
const ProblemsPerKind = 5

// Report is status's output (also its --json form).
type Report struct {
	Version  string   `json:"version"`
	Features []string `json:"features"`
	// Families are gtp5g's generic netlink families: gtp5g, and
	// gtp5g_qos with the gtp5g patch.
	Families []string `json:"families,omitempty"`
	MarkMode string   `json:"mark_mode"`
	Policer  string   `json:"policer"`
	Flows    []Flow   `json:"flows"`
	// Devices are the N3/N6 devices status looked at (none without
	// --n3/--n6 or a watch config).
	Devices []Device `json:"devices"`
	// RateSource says how the RATE column was measured.
	RateSource string   `json:"rate_source,omitempty"`
	Problems   []string `json:"problems"`
	// Summary is Problems for people (repeats of one kind collapsed).
	Summary []string `json:"-"`
}

// Flow is one QoS flow with its class on the device of its direction.
type Flow struct {
	SEID        uint64  `json:"seid"`
	QER         uint32  `json:"qer"`
	QFI         uint8   `json:"qfi"`
	Direction   string  `json:"direction"`
	GBR         uint64  `json:"gbr_bps"`
	MBR         uint64  `json:"mbr_bps"`
	SessionAMBR uint64  `json:"session_ambr_bps"`
	Mark        uint32  `json:"mark"`
	TEID        uint32  `json:"teid"`
	Class       string  `json:"class,omitempty"`
	Rate        *uint64 `json:"rate_bps,omitempty"`
}

// Source is what Collect reads of gtp5g; Host is the real one.
type Source interface {
	Loaded() (bool, error)
	Version() (string, gtpnl.Features, error)
	// Families describes gtp5g's generic netlink families (nil: unknown).
	Families() []string
	MarkMode(gtpnl.Features) (gtpnl.MarkMode, error)
	Policer(gtpnl.Features) (on bool, via string, err error)
	Rules() ([]gtpnl.QER, []gtpnl.PDR, []gtpnl.FAR, error)
	Close()
}

// Trees reads the shaped devices for the flows; DeviceTrees is the real
// one.
type Trees interface {
	Read(ctx context.Context, flows []shaper.Flow) (TreeView, error)
}

// Collect reads gtp5g and joins its rules into flows; trees (called once
// gtp5g is known to be there; nil, or returning nil: no devices) adds the
// class columns and the devices' classification modes.
func Collect(ctx context.Context, src Source, trees func() Trees) (Report, error) {
	var rep Report
	if ok, err := src.Loaded(); err != nil {
		return rep, err
	} else if !ok {
		return rep, kmod.ErrNotLoaded
	}
	v, feats, err := src.Version()
	if err != nil {
		return rep, err
	}
	rep.Version, rep.Features, rep.Families = v, FeatureNames(feats), src.Families()
	mode, err := src.MarkMode(feats)
	if err != nil {
		return rep, err
	}
	rep.MarkMode = mode.String()
	if on, via, err := src.Policer(feats); err != nil {
		rep.Policer = "unknown (" + err.Error() + ")"
	} else {
		rep.Policer = OnOff(on) + " (" + via + ")"
	}
	qers, pdrs, fars, err := src.Rules()
	if err != nil {
		return rep, err
	}
	flows, problems := qosview.Build(qers, pdrs, fars, qosview.Options{MarkMode: mode})
	if mode == gtpnl.MarkOff {
		// Unmarked: the gtpu classifier finds flows by their SDF rules.
		_, sp := qosview.SDFRules(pdrs, fars, flows)
		problems = append(problems, sp...)
	}
	var view TreeView
	rep.Devices = []Device{}
	if trees != nil {
		if tr := trees(); tr != nil {
			if view, err = tr.Read(ctx, flows); err != nil {
				return rep, err
			}
			rep.RateSource, rep.Problems = view.RateSource, append(rep.Problems, view.Problems...)
			if view.Devices != nil {
				rep.Devices = view.Devices
			}
		}
	}
	rep.Flows = make([]Flow, 0, len(flows))
	for _, f := range flows {
		sf := Flow{SEID: f.ID.SEID, QER: f.ID.QERID, QFI: f.QFI, Direction: f.Direction.String(),
			GBR: f.GBR, MBR: f.MBR, SessionAMBR: f.SessionAMBR, Mark: f.Mark, TEID: f.TEID}
		if ci, ok := view.Classes[FlowKey{f.ID, f.Direction}]; ok {
			sf.Class, sf.Rate = ci.Class, ci.Rate
		}
		rep.Flows = append(rep.Flows, sf)
	}
	rep.Summary = append(rep.Summary, rep.Problems...) // device trouble, if any
	for _, p := range problems {
		rep.Problems = append(rep.Problems, p.String())
	}
	rep.Summary = append(rep.Summary, qosview.Summarize(problems, ProblemsPerKind)...)
	if rep.Problems == nil {
		rep.Problems = []string{}
	}
	return rep, nil
}

// FeatureNames lists the features by name (empty, not nil, for none).
func FeatureNames(f gtpnl.Features) []string {
	if f == 0 {
		return []string{}
	}
	return splitComma(f.String())
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

// OnOff is "on" or "off".
func OnOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}
