// Package watch is the `gtpqos watch` daemon: its engine, which keeps the
// trees on N3 egress (downlink) and N6 egress (uplink) in step with the
// QoS rules gtp5g holds, live, and its construction from a Config (Start:
// gtp5g's features decide the mode, the mark mode is set and repaired
// after a module reload, a SIGHUP reload applies new policies).
//
// The engine talks to the world through narrow interfaces, so it can be
// driven by a scripted fake in tests:
//
//   - a Source yields the QoS view (shaper flows) on demand and, when the
//     gtp5g patch is present, change events (otherwise the engine polls);
//   - a shaper.Backend per device plans and enforces one device's flows.
//
// Events only say which session changed: the engine always re-reads the
// truth from the Source, so duplicates, reordering (delete before add) and
// lost events (ENOBUFS, answered with a full resync) cannot leave the tree
// wrong. Bursts coalesce through a size-1 trigger channel: however many
// events arrive while a reconcile runs, the next reconcile handles them all.
//
// The engine's files: engine.go holds the Engine, its options and its
// devices; engine_runloop.go the loop Run drives (timers, subscribing,
// retries with backoff); engine_eventpump.go the goroutine that moves a
// subscription's events into the pending work; engine_pending.go that
// work and the kinds of sync (syncKind); engine_sync.go the sync itself
// (dump or fold events in, then apply to each device's backend). The
// gtp5g source (gtp5g_source.go) keeps its rules in qosview/rulemodel.
//
// The package does not log: it reports what it did through an Observer, and
// cmd/gtpqos turns that into log lines. It may import gtpnl, qosview, the
// model and shaper/backends (never a backend directly).
package watch
