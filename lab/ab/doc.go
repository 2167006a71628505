// Package ab runs A/B experiments on a UPF's shaping: a list of arms (each a
// set of flows plus a shaper policy, and optionally the gtp5g native
// policer's setting), repeated and interleaved (A B A B ...). Each run
// applies its arm through the device's shaper backend, lets traffic warm up,
// samples per-class counters over the analysis window and, in the lab, the
// receivers' per-second goodput. It then computes means with 95% Student-t
// confidence intervals, GBR/MBR compliance with a tolerance, and the
// aggregate against the payload ceiling from the measured N3 frame size,
// and writes a terminal table (beside the seed experiment's numbers),
// results.json, results.csv, timeseries.csv and SVG figures.
//
// Spec carries a caller's settings (gtpqos ab's flags) and turns them into
// the runner's Options or a sweep's; OpenTarget and OpenSweepTarget build
// the lab or device target and its clean-up, reporting through Hooks
// rather than logging.
//
// It may import the model, shaper/backends, kmod and package lab.
package ab
