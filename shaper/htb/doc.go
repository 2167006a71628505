// Package htb is the kernel side of gtpqos's HTB backend. Package plan,
// below it, plans one HTB tree per device from the model's flows and
// policy (plan.Plan: a link class at the bottleneck rate, a default class,
// optional session-AMBR classes, one leaf class per flow with rate = GBR
// and ceil = MBR) without the kernel; this package makes the kernel
// hold that tree with the fewest writes (Reconciler: one long-lived
// vishvananda/netlink handle, units normalised, classes changed in place,
// classifier entries written after their classes and removed before them,
// an owned tree adopted on restart) and reads it back (Inspect). Backend wraps all of that as a shaper.Backend.
//
// Ownership: gtpqos owns a device's tree iff the device's root qdisc is an
// HTB qdisc with handle major OwnedMajor (0x6771, "gq", shown by tc as
// 6771:). Everything gtpqos creates lives under that qdisc (classes, leaf
// qdiscs, filters), except the GTP-U classifier's clsact filters, which
// package gtpu recognises by name. A root qdisc with handle 0 is the
// kernel's default and may be replaced; any other root qdisc belongs to
// someone else and is only replaced with force.
//
// Leaf qdisc kinds are one small implementation each (leaf.go); the
// classifiers are package classify's.
//
// It may import the model, package plan, package classify and its gtpu package,
// vishvananda/netlink and x/sys; nothing imports it but shaper/backends and
// tests.
package htb
