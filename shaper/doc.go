// Package shaper is gtpqos's QoS model: what a QoS flow is (Flow: identity,
// direction, GBR, MBR, session AMBR, the keys that recognise its packets),
// the operator's Policy (contract-level settings, and each backend's own
// knobs kept uninterpreted in a KnobSet) and its one YAML form
// (PolicyYAML, used by flows files and the watch config), admission (CheckPolicy, Admit: which flows
// fit the link, with Problems naming the flow and field at fault), units
// (Rate and Size, read and written in tc's notation by ParseRate,
// FormatRate, ...), and the Backend interfaces (Writer,
// Reader) through which everything else reaches the kernel, with the neutral types a backend
// reports in (Report, Change, Inspection, ClassState, Counters) and the one
// way flows are matched to classes (Index) and checked (Verify).
//
// The model is pure: it imports neither netlink, nor BPF, nor x/sys (a
// test in tests/layout enforces it). Backends live below it: shaper/htb
// (HTB classes, the first backend), with the classifiers that steer
// packets into classes in shaper/classify; shaper/backends is the
// registry that opens one by name. The model depends on no backend (a
// test in tests/layout enforces that too).
package shaper
