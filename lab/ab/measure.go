package ab

import (
	"time"

	"github.com/free5gc/gtpqos/shaper"
)

// InnerUDPOverhead is what the user's IP packet adds to a UDP payload:
// IPv4 20 + UDP 8.
const InnerUDPOverhead = 28

// GTPUOverhead is what N3 adds around an inner IPv4/UDP payload: inner
// UDP 8 + IPv4 20, GTP-U 16 (with the PDU Session Container), outer UDP 8,
// IPv4 20 and Ethernet 14.
const GTPUOverhead = InnerUDPOverhead + 16 + 8 + 20 + 14

// ipOf returns the rate of the user's IP packets that carried goodput
// Mbit/s of UDP payload (0 when the payload size is not known).
func ipOf(o *Options, goodput float64) float64 {
	if o.TCP || o.Payload <= 0 {
		return 0
	}
	return goodput * float64(o.Payload+InnerUDPOverhead) / float64(o.Payload)
}

// payloadOf returns the payload bytes of a frame: the configured payload,
// else the frame minus GTPUOverhead (and TCP's larger header for TCP).
func payloadOf(o *Options, frame float64) float64 {
	if o.Payload > 0 {
		return float64(o.Payload)
	}
	over := float64(GTPUOverhead)
	if o.TCP {
		over += 24 // TCP header 20 + timestamps 12 instead of UDP's 8
	}
	if frame > over {
		return frame - over
	}
	return 0
}

// measure fills run from two counter snapshots dt apart and the receivers'
// series.
func measure(run *RunResult, o *Options, arm Arm, rep shaper.Report, scale float64,
	s1, s2 map[string]shaper.Counters, dt time.Duration, traffic map[string]FlowTraffic) {
	var linkMbps float64
	var dflt string
	for _, c := range rep.Classes {
		switch c.Role {
		case shaper.RoleLink:
			linkMbps = float64(c.Rate) / 1e6
		case shaper.RoleDefault:
			dflt = c.Handle
		}
	}
	// Under packet accounting the classes' byte counters leave out the
	// overhead as well: add it back for the frames.
	run.Accounting, run.Overhead = rep.Accounting.String(), rep.Overhead
	over := float64(rep.Overhead)
	var totBytes, totPkts uint64
	for _, f := range arm.Flows {
		fr := FlowRun{Name: flowName(f), GBR: float64(f.GBR) * scale / 1e6, MBR: float64(f.MBR) * scale / 1e6, Lost: -1, LossFrac: -1}
		if c, ok := rep.FlowClass(f.ID); ok {
			fr.Class = c.Handle
			a, b := flowCounters(s1, s2, f.ID, c.Handle)
			db, dp := b.Bytes-a.Bytes, b.Packets-a.Packets
			if b.Bytes < a.Bytes || b.Packets < a.Packets {
				db, dp = 0, 0 // class re-created between samples
			}
			totBytes += db
			totPkts += dp
			if dt > 0 {
				fr.Outer = (float64(db) + float64(dp)*over) * 8 / dt.Seconds() / 1e6
				if rep.Accounting == shaper.AccountPacket {
					fr.IP = float64(db) * 8 / dt.Seconds() / 1e6
				}
			}
			if dp > 0 {
				fr.Counted = float64(db) / float64(dp)
				fr.Frame = fr.Counted + over
			}
			if b.Drops >= a.Drops {
				fr.Drops = uint64(b.Drops - a.Drops)
			}
		}
		if tf, ok := traffic[fr.Name]; ok {
			receiverRates(&fr, o, tf)
		} else if fr.Frame > 0 {
			fr.Goodput = fr.Outer * payloadOf(o, fr.Frame) / fr.Frame
			if fr.IP == 0 {
				fr.IP = ipOf(o, fr.Goodput)
			}
		}
		// Contracts count the user's packets.
		got := fr.Goodput
		if fr.IP > 0 {
			got = fr.IP
		}
		fr.GBRPass = fr.GBR == 0 || got >= (1-o.Tolerance)*fr.GBR
		fr.MBRPass = !hasMBR(fr.MBR, linkMbps) || got <= (1+o.Tolerance)*fr.MBR
		run.Aggregate += fr.Goodput
		run.Flows = append(run.Flows, fr)
	}
	if totPkts > 0 {
		run.Counted = float64(totBytes) / float64(totPkts)
		run.Frame = run.Counted + over
	}
	if s2[dflt].Packets >= s1[dflt].Packets {
		run.Unclassified = s2[dflt].Packets - s1[dflt].Packets
	}
}

// flowCounters are the flow's own counters in both snapshots where the
// backend gave them (edt's flows share classes), else its class's.
func flowCounters(s1, s2 map[string]shaper.Counters, id shaper.FlowID, class string) (a, b shaper.Counters) {
	k := flowCounterKey(id)
	a1, ok1 := s1[k]
	b2, ok2 := s2[k]
	if ok1 && ok2 {
		return a1, b2
	}
	return s1[class], s2[class]
}

// receiverRates fills a flow's goodput, user-packet rate, loss and delay
// over the window from what its receiver measured.
func receiverRates(fr *FlowRun, o *Options, tf FlowTraffic) {
	w0, w1 := windowSeconds(o)
	fr.Series = tf.Mbps
	fr.Delay = delayStats(tf.DelayMs, tf.Reordered, w0, w1)
	fr.Retransmits = tf.Retransmits
	var sum float64
	var lost int64
	n := 0
	for s := w0; s < w1 && s < len(tf.Mbps); s++ {
		sum += tf.Mbps[s]
		n++
		if s < len(tf.Lost) && tf.Lost[s] >= 0 && lost >= 0 {
			lost += tf.Lost[s]
		} else {
			lost = -1
		}
	}
	if n > 0 {
		fr.Goodput = sum / float64(n)
	}
	fr.Lost = lost
	if ip := ipOf(o, fr.Goodput); ip > 0 || fr.Goodput == 0 && !o.TCP && o.Payload > 0 {
		fr.IP = ip
	}
	if lost >= 0 && o.Payload > 0 && n > 0 {
		got := sum * 1e6 / 8 / float64(o.Payload) // packets received in the window
		if got+float64(lost) > 0 {
			fr.LossFrac = float64(lost) / (got + float64(lost))
		}
	}
}

// hasMBR says whether an MBR is a real cap (set, and below the link).
func hasMBR(mbr, link float64) bool { return mbr > 0 && mbr < link*0.9999 }

// flowName returns a flow's label, or its identity.
func flowName(f shaper.Flow) string {
	if f.Name != "" {
		return f.Name
	}
	return f.ID.String()
}
