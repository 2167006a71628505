// Package watch is the engine of the `gtpqos watch` daemon: it keeps the
// HTB trees on N3 egress (downlink) and N6 egress (uplink) in step with the
// QoS rules gtp5g holds, live.
//
// The engine talks to the world through two narrow interfaces defined here,
// so it can be driven by a scripted fake in tests:
//
//   - a Source yields the QoS view (shaper flows) on demand and, when the
//     gtp5g patch is present, change events (otherwise the engine polls);
//   - an Applier per device plans and reconciles one tree from a flow list.
//
// Events only say which session changed: the engine always re-reads the
// truth from the Source, so duplicates, reordering (delete before add) and
// lost events (ENOBUFS, answered with a full resync) cannot leave the tree
// wrong. Bursts coalesce through a size-1 trigger channel: however many
// events arrive while a reconcile runs, the next reconcile handles them all.
//
// The package does not log: it reports what it did through an Observer, and
// cmd/gtpqos turns that into log lines.
package watch
