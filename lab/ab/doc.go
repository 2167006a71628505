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
// It may import the model, shaper/backends, kmod and package lab.
package ab
