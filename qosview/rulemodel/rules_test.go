package rulemodel

import (
	"math/rand/v2"
	"net/netip"
	"reflect"
	"testing"

	"github.com/free5gc/gtpqos/gtpnl/gtp5g"
	"github.com/free5gc/gtpqos/qosview"
)

// TestViewOfModelRulesIsTheViewOfFullRules checks that the rule model keeps
// every field the QoS view reads: random sessions, with every field of
// every rule set at random (the fields the model drops too), give the same
// flows and problems viewed from the full rules as from the model's.
func TestViewOfModelRulesIsTheViewOfFullRules(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range 3000 {
		seid := rng.Uint64N(4) + 1
		qers, pdrs, fars := randomSession(rng, seid)
		m := New(qers, pdrs, fars)
		for _, mode := range []gtp5g.MarkMode{gtp5g.MarkOff, gtp5g.MarkQFI, gtp5g.MarkFlow} {
			opts := qosview.Options{MarkMode: mode}
			wantFlows, wantProblems := qosview.Build(qers, pdrs, fars, opts)
			mq, mp, mf := m.Rules(seid)
			gotFlows, gotProblems := qosview.Build(mq, mp, mf, opts)
			if !reflect.DeepEqual(gotFlows, wantFlows) {
				t.Fatalf("session %d, mark mode %v: flows from the model\n%+v\nfrom the full rules\n%+v\nrules: %+v %+v %+v", i, mode, gotFlows, wantFlows, qers, pdrs, fars)
			}
			if got, want := problemLines(gotProblems), problemLines(wantProblems); !reflect.DeepEqual(got, want) {
				t.Fatalf("session %d, mark mode %v: problems from the model %q, from the full rules %q", i, mode, got, want)
			}
		}
	}
}

func problemLines(ps []qosview.Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

// randomSession makes one session's rules with every field drawn at random
// and ids drawn from small ranges, so rules refer to each other (or to
// rules the session lacks) and the view's every branch is taken.
func randomSession(rng *rand.Rand, seid uint64) ([]gtp5g.QER, []gtp5g.PDR, []gtp5g.FAR) {
	var qers []gtp5g.QER
	for range rng.IntN(4) {
		qers = append(qers, gtp5g.QER{SEID: seid, ID: rng.Uint32N(4), Gate: gtp5g.Gate(rng.IntN(16)),
			MBR: randomBitrate(rng), GBR: randomBitrate(rng), CorrelationID: rng.Uint32(),
			QFI: uint8(rng.IntN(4)), PPI: uint8(rng.IntN(8)), RQI: rng.IntN(2) == 0, RCSR: uint8(rng.IntN(2)),
			RelatedPDRs: []uint16{uint16(rng.IntN(4))}, FlowMark: uint32(rng.IntN(3)) * rng.Uint32N(1<<24)})
	}
	var pdrs []gtp5g.PDR
	for range rng.IntN(4) {
		p := gtp5g.PDR{SEID: seid, ID: uint16(rng.IntN(4)), Precedence: rng.Uint32(), FARID: rng.Uint32N(3),
			URRIDs: []uint32{rng.Uint32()}, RoleAddr: netip.AddrFrom4([4]byte{10, 0, 0, byte(rng.IntN(256))}),
			QFI: uint8(rng.IntN(4)), FlowMark: uint32(rng.IntN(3)) * rng.Uint32N(1<<24),
			PDRMark: uint32(rng.IntN(3)) * rng.Uint32N(1<<24)}
		for range rng.IntN(3) {
			p.QERIDs = append(p.QERIDs, rng.Uint32N(4))
		}
		if rng.IntN(4) > 0 {
			si := gtp5g.Interface(rng.IntN(4))
			p.PDI.SourceInterface = &si
		}
		p.PDI.UEAddr = netip.AddrFrom4([4]byte{10, 60, 0, byte(rng.IntN(256))})
		if rng.IntN(2) == 0 {
			p.PDI.FTEID = &gtp5g.FTEID{TEID: rng.Uint32(), Addr: netip.AddrFrom4([4]byte{192, 168, 0, 1})}
		}
		if rng.IntN(2) == 0 {
			p.PDI.SDF = &gtp5g.SDFFilter{SPI: rng.Uint32(), FlowLabel: rng.Uint32()}
		}
		if rng.IntN(2) == 0 {
			ohr := uint8(rng.IntN(2))
			p.OuterHeaderRemoval = &ohr
		}
		p.PDI.FramedRoutes = []string{"10.61.0.0/16"}
		pdrs = append(pdrs, p)
	}
	var fars []gtp5g.FAR
	for range rng.IntN(3) {
		f := gtp5g.FAR{SEID: seid, ID: rng.Uint32N(3), ApplyAction: gtp5g.ApplyAction(rng.IntN(32)), RelatedPDRs: []uint16{1}}
		if rng.IntN(4) > 0 {
			f.Forwarding = &gtp5g.ForwardingParameters{ForwardingPolicy: "p", TransportLevelMarking: uint8(rng.IntN(256))}
			if rng.IntN(4) > 0 {
				f.Forwarding.OuterHeaderCreation = &gtp5g.OuterHeaderCreation{Description: 0x100, TEID: rng.Uint32(),
					Peer: netip.AddrFrom4([4]byte{192, 168, 1, 1}), Port: uint16(rng.IntN(3000))}
			}
		}
		fars = append(fars, f)
	}
	return uniqueIDs(qers, qerKey), uniqueIDs(pdrs, pdrKey), uniqueIDs(fars, farKey)
}

// uniqueIDs keeps the first rule of each id: the model keys a session's
// rules by id (a second rule with an id replaces the first), while a
// dump's view reports the second as listed twice.
func uniqueIDs[T any](rules []T, id func(T) uint32) []T {
	seen := map[uint32]bool{}
	var out []T
	for _, r := range rules {
		if !seen[id(r)] {
			seen[id(r)] = true
			out = append(out, r)
		}
	}
	return out
}

func qerKey(q gtp5g.QER) uint32 { return q.ID }
func pdrKey(p gtp5g.PDR) uint32 { return uint32(p.ID) }
func farKey(f gtp5g.FAR) uint32 { return f.ID }

func randomBitrate(rng *rand.Rand) gtp5g.Bitrate {
	pick := func() uint64 { return uint64(rng.IntN(3)) * rng.Uint64N(1e9) }
	return gtp5g.Bitrate{Uplink: pick(), Downlink: pick()}
}
