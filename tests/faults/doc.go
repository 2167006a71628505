// Package faults is gtpqos's fault-injection test layer: writers of a
// device's tree (the built `gtpqos apply` binary, and a watch-equivalent
// writer: the daemon's backend options, incremental, holding the lock as
// a watch, in a process of its own) are killed at random points of a
// build and of an update (the writer's as the daemon's: Updates of the
// changed sessions, written as deltas), or run at the same time, while
// traffic flows; the device is sampled after every kill and while writers
// run. The tests assert the contract README states ("What gtpqos
// guarantees about your tree"): every rerun converges to the canonical
// tree of a clean run (spare classes aside, at most the pool's), no
// sampled moment shows the root without its default class or a packet in
// HTB's unshaped direct queue (during a build from empty: none once the
// root has its default class; the microseconds between the two, which no
// build order avoids, are counted and logged), and two writers never both
// write.
//
// Every loop is bounded by a count, not a duration. The tests need root
// (network namespaces) and the go command (they build the binary); they
// skip with one line without either.
package faults
