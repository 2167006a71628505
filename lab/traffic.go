package lab

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Traffic generators.
const (
	// TrafficBuiltin uses the lab's own senders and receivers.
	TrafficBuiltin = "builtin"
	// TrafficIperf3 runs iperf3 (servers in dn, reverse-mode clients in ue).
	TrafficIperf3 = "iperf3"
)

// Defaults of the seed experiment.
const (
	// DefaultPayload is the UDP payload size in bytes.
	DefaultPayload = 1200
	// DefaultOffered is each flow's offered load in bit/s (before RateScale).
	DefaultOffered = 30e6
	// RateScaleEnv names the environment variable that scales every rate of
	// the lab (link, contracts, offered load), e.g. 0.1 in a slow VM.
	RateScaleEnv = "GTPQOS_LAB_RATE_SCALE"
)

// RateScale returns the factor from GTPQOS_LAB_RATE_SCALE (default 1).
func RateScale() (float64, error) {
	s := os.Getenv(RateScaleEnv)
	if s == "" {
		return 1, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f > 0 && f <= 100) {
		return 0, fmt.Errorf("%s=%q: want a number in (0, 100]", RateScaleEnv, s)
	}
	return f, nil
}

// TrafficSpec says what to send.
type TrafficSpec struct {
	// Duration of the run (whole seconds are reported).
	Duration time.Duration
	// TCP selects TCP instead of UDP.
	TCP bool
	// Payload is the UDP payload in bytes (default 1200).
	Payload int
	// Offered is the per-flow offered rate in bit/s of payload for flows
	// whose PDR sets none (default 30 Mbit/s; TCP default: unlimited).
	Offered float64
	// PerFlow, when set, names the flows that send (others stay silent)
	// with each one's offered rate in bit/s of UDP payload, already scaled
	// (built-in UDP traffic only).
	PerFlow map[string]float64
	// Generator is TrafficBuiltin (default) or TrafficIperf3.
	Generator string
	// Start is when sending starts and second 0 begins (zero: 50 ms from
	// now). Built-in traffic only; iperf3 starts at once.
	Start time.Time
}

// Interval is one second of one flow at the receiver.
type Interval struct {
	// Second is the interval's index from the start of traffic (0-based).
	Second int `json:"second"`
	// Bytes is the payload received in the interval.
	Bytes uint64 `json:"bytes"`
	// Mbps is the receiver goodput in Mbit/s of payload.
	Mbps float64 `json:"mbps"`
	// Lost is the number of UDP datagrams lost in the interval (-1 unknown).
	Lost int64 `json:"lost"`
	// Reordered is the number of UDP datagrams that arrived in the
	// interval after one sent later (built-in UDP traffic).
	Reordered int64 `json:"reordered"`
}

// FlowTraffic is one flow's result.
type FlowTraffic struct {
	// Name is the PDR's name.
	Name string `json:"name"`
	// Intervals holds one entry per second of the run.
	Intervals []Interval `json:"intervals"`
	// Sent and Received count UDP datagrams (0 for TCP).
	Sent     uint64 `json:"sent"`
	Received uint64 `json:"received"`
	// Retransmits is TCP's total retransmitted segments (sender side).
	Retransmits uint64 `json:"retransmits"`
	// DelayMs holds the one-way delays in ms of the packets sent in each
	// second of the run, in arrival order (built-in UDP traffic; nil
	// otherwise).
	DelayMs [][]float32 `json:"-"`
}

// Run drives one run of traffic through the lab and returns per-flow
// receiver intervals. It returns early with ctx's error when cancelled.
func (l *Lab) Run(ctx context.Context, spec TrafficSpec) ([]FlowTraffic, error) {
	if spec.Duration < time.Second {
		return nil, fmt.Errorf("traffic duration %v: want at least 1s", spec.Duration)
	}
	if spec.Payload == 0 {
		spec.Payload = DefaultPayload
	}
	if spec.Payload < udpHeaderLen || spec.Payload > innerMTU-28 {
		return nil, fmt.Errorf("payload %d bytes: want %d..%d", spec.Payload, udpHeaderLen, innerMTU-28)
	}
	if spec.Start.IsZero() || time.Until(spec.Start) < 20*time.Millisecond {
		spec.Start = time.Now().Add(50 * time.Millisecond)
	}
	if spec.Offered == 0 && !spec.TCP {
		spec.Offered = DefaultOffered * l.scale
	}
	if spec.PerFlow != nil && (spec.TCP || (spec.Generator != "" && spec.Generator != TrafficBuiltin)) {
		return nil, fmt.Errorf("per-flow offered rates: built-in UDP traffic only")
	}
	for name, r := range spec.PerFlow {
		if l.pdrIndex(name) < 0 || !(r > 0) {
			return nil, fmt.Errorf("offered rate %v for flow %q: want a lab flow and a rate above 0", r, name)
		}
	}
	switch spec.Generator {
	case "", TrafficBuiltin:
		if spec.TCP {
			return l.runTCP(ctx, spec)
		}
		return l.runUDP(ctx, spec)
	case TrafficIperf3:
		return l.runIperf3(ctx, spec)
	default:
		return nil, fmt.Errorf("traffic generator %q: want %q or %q", spec.Generator, TrafficBuiltin, TrafficIperf3)
	}
}

// offered returns PDR i's offered rate (0: it does not send).
func (l *Lab) offered(i int, spec TrafficSpec) float64 {
	if spec.PerFlow != nil {
		return spec.PerFlow[l.pdrs[i].Name]
	}
	if o := l.pdrs[i].Offered; o > 0 {
		return o * l.scale
	}
	return spec.Offered
}

// pdrIndex returns the index of the PDR named name, or -1.
func (l *Lab) pdrIndex(name string) int {
	for i, p := range l.pdrs {
		if p.Name == name {
			return i
		}
	}
	return -1
}

// seconds is the number of whole-second intervals of a run.
func seconds(d time.Duration) int { return int(d / time.Second) }
