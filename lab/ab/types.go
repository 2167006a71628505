package ab

import (
	"time"

	"github.com/free5gc/gtpqos/shaper"
)

// Arm is one configuration under test: flows (with their contracts) and the
// shaper policy that turns them into an HTB tree.
type Arm struct {
	// Name labels the arm ("static", "aware").
	Name string `json:"name"`
	// Source is where the arm came from (a flows file), for output.
	Source string `json:"source,omitempty"`
	// Flows are the QoS flows; their GBR/MBR are the contracts compliance is
	// judged against, whatever the policy does with them.
	Flows []shaper.Flow `json:"-"`
	// Policy is the shaper policy (mode, link rate, bursts, ...).
	Policy shaper.Policy `json:"-"`
	// Backend is the backend that enforces the arm (its policy's).
	Backend string `json:"backend,omitempty"`
	// Policer sets gtp5g's native MBR policer for the arm: "on", "off", or
	// "" to leave it alone.
	Policer string `json:"policer,omitempty"`
	// Offered, when set (lab, UDP), names the flows that send and each
	// one's offered rate in bit/s of the user's IP packets, before the
	// lab's rate scale; nil: every lab flow sends the lab's default.
	Offered map[string]float64 `json:"offered_ip_bps,omitempty"`
}

// Options are the experiment's protocol.
type Options struct {
	// Arms to compare, in the order runs interleave them.
	Arms []Arm
	// Runs per arm (interleaved A B A B ...).
	Runs int
	// Duration of one run, and the analysis window inside it
	// ([WindowStart, WindowEnd), whole seconds from the start of traffic).
	Duration               time.Duration
	WindowStart, WindowEnd time.Duration
	// Tolerance for GBR/MBR compliance (0.05: GBR passes at >= 95% of GBR,
	// MBR at <= 105% of MBR).
	Tolerance float64
	// Payload is the UDP payload size of the traffic in bytes (for the
	// payload ceiling; 0 = derive from the frame assuming UDP/IPv4 inside).
	Payload int
	// TCP says the traffic is TCP (lab: the built-in or iperf3 TCP mode).
	TCP bool
	// Generator is the lab's traffic generator ("builtin" or "iperf3").
	Generator string
	// Pause between runs, so queues drain.
	Pause time.Duration
	// SetPolicer switches gtp5g's native policer; nil when gtp5g is absent
	// (an arm that asks for a setting then fails).
	SetPolicer func(on bool) error
	// Progress, if set, receives one line per step.
	Progress func(format string, args ...any)
}

// FlowRun is one flow's measurements in one run.
type FlowRun struct {
	// Name is the flow's label; GBR and MBR its contract in Mbit/s (scaled
	// with the lab's rate scale).
	Name string  `json:"name"`
	GBR  float64 `json:"gbr_mbps"`
	MBR  float64 `json:"mbr_mbps"`
	// Class is the flow's HTB class ("6771:10").
	Class string `json:"class"`
	// Goodput is the receiver payload rate over the window in Mbit/s (lab),
	// or the payload estimate from class counters (device).
	Goodput float64 `json:"goodput_mbps"`
	// IP is the rate of the user's IP packets in Mbit/s (what a contract
	// counts): the goodput with each packet's inner IPv4 and UDP headers
	// (UDP with a known payload), else the class counters' (packet
	// accounting) or 0.
	IP float64 `json:"ip_mbps"`
	// Outer is the class's rate over the window in Mbit/s of N3 frames.
	Outer float64 `json:"outer_mbps"`
	// Frame is the N3 frame over the window in bytes per packet (0 if
	// idle); Counted what the class counted per packet (Frame less the
	// overhead under packet accounting).
	Frame   float64 `json:"frame_bytes"`
	Counted float64 `json:"counted_bytes"`
	// Drops are the class's drops over the window.
	Drops uint64 `json:"drops"`
	// Lost is the receivers' UDP loss over the window (-1 unknown);
	// LossFrac the share of the flow's packets sent in the window that was
	// lost (-1 unknown).
	Lost     int64   `json:"lost"`
	LossFrac float64 `json:"loss_fraction"`
	// Retransmits is TCP's retransmitted segments over the run.
	Retransmits uint64 `json:"retransmits"`
	// Series is the per-second receiver goodput over the whole run.
	Series []float64 `json:"series_mbps"`
	// Delay is the one-way delay of the packets sent in the window (lab,
	// built-in UDP; nil otherwise).
	Delay *DelayStats `json:"delay,omitempty"`
	// GBRPass and MBRPass are the compliance verdicts (true when the flow
	// has no GBR or no MBR below the link).
	GBRPass bool `json:"gbr_pass"`
	MBRPass bool `json:"mbr_pass"`
}

// RunResult is one run of one arm.
type RunResult struct {
	// Arm is the arm's name; Index the run's number (from 1).
	Arm   string `json:"arm"`
	Index int    `json:"run"`
	// Backend is the backend that enforced the run's tree.
	Backend string `json:"backend"`
	// Started is when traffic started.
	Started time.Time `json:"started"`
	// Apply is the reconciler's one-line summary.
	Apply string `json:"apply"`
	// Flows in the arm's order.
	Flows []FlowRun `json:"flows"`
	// Aggregate is the sum of the flows' goodput (Mbit/s).
	Aggregate float64 `json:"aggregate_mbps"`
	// Frame is the N3 frame size over all flow classes (bytes/packet);
	// Counted what the classes counted per packet.
	Frame   float64 `json:"frame_bytes"`
	Counted float64 `json:"counted_bytes"`
	// Accounting is the bytes the classes counted ("packet", "frame");
	// Overhead the bytes per frame they left out.
	Accounting string `json:"accounting"`
	Overhead   uint32 `json:"overhead"`
	// Unclassified is the default class's packets over the window.
	Unclassified uint64 `json:"unclassified_packets"`
	// Notes are the target's remarks on the run (lab: drops outside HTB).
	Notes []string `json:"notes,omitempty"`
}

// FlowSummary is one flow of one arm across runs.
type FlowSummary struct {
	// Name, GBR and MBR (Mbit/s) as in FlowRun.
	Name string  `json:"name"`
	GBR  float64 `json:"gbr_mbps"`
	MBR  float64 `json:"mbr_mbps"`
	// Goodput, IP (the user's IP packets) and Outer across runs.
	Goodput Estimate `json:"goodput"`
	IP      Estimate `json:"ip"`
	Outer   Estimate `json:"outer"`
	// GBRPasses and MBRPasses count passing runs (of Runs).
	GBRPasses int `json:"gbr_passes"`
	MBRPasses int `json:"mbr_passes"`
	// HasGBR and HasMBR say whether the contract has them (MBR below link).
	HasGBR bool `json:"has_gbr"`
	HasMBR bool `json:"has_mbr"`
	// Share is the flow's goodput over an equal share of the aggregate
	// (1.0 = exactly equal).
	Share float64 `json:"equal_share_ratio"`
	// Series holds per-second means and CIs across runs (whole run).
	Series []Estimate `json:"series"`
	// Retransmits is the mean TCP retransmits per run.
	Retransmits float64 `json:"retransmits"`
	// Delay is the mean over runs of each delay statistic (nil: not
	// measured).
	Delay *DelayStats `json:"delay,omitempty"`
}

// ArmSummary is one arm across runs.
type ArmSummary struct {
	// Arm describes the arm.
	Arm Arm `json:"arm"`
	// Mode is the shaper mode ("static", "aware").
	Mode string `json:"mode"`
	// LinkRate is the link class's rate in Mbit/s.
	LinkRate float64 `json:"link_mbps"`
	// Runs is the number of runs.
	Runs int `json:"runs"`
	// Flows in the arm's order.
	Flows []FlowSummary `json:"flows"`
	// Aggregate goodput across runs.
	Aggregate Estimate `json:"aggregate"`
	// Frame is the mean N3 frame size; Ceiling the payload ceiling
	// (link × payload / frame) in Mbit/s; Utilisation = aggregate/ceiling.
	// Counted is what the classes counted per packet, Accounting which
	// bytes that is.
	Frame       float64 `json:"frame_bytes"`
	Counted     float64 `json:"counted_bytes"`
	Accounting  string  `json:"accounting"`
	Ceiling     float64 `json:"payload_ceiling_mbps"`
	Utilisation float64 `json:"utilisation"`
}

// Results is everything an experiment produced.
type Results struct {
	// Target describes where it ran.
	Target string `json:"target"`
	// Started is when the experiment started.
	Started time.Time `json:"started"`
	// Protocol.
	Runs         int     `json:"runs_per_arm"`
	DurationS    float64 `json:"duration_s"`
	WindowFrom   int     `json:"window_from_s"`
	WindowTo     int     `json:"window_to_s"`
	Tolerance    float64 `json:"tolerance"`
	Payload      int     `json:"payload_bytes"`
	Proto        string  `json:"proto"`
	Generator    string  `json:"generator,omitempty"`
	RateScale    float64 `json:"rate_scale"`
	CountersOnly bool    `json:"counters_only"`
	// Arms summarised, and every run.
	Arms    []ArmSummary `json:"arms"`
	RunList []RunResult  `json:"runs"`
}
