// Package plan is the pure half of the HTB backend: what HTB tree a device
// should hold for the model's flows and policy (Plan), the kept plan that
// one session's change updates in place (State, Delta), HTB's knobs and
// policy checks, and the tree as tc commands. It touches no kernel: the
// same input gives the same output, and its tests need no root.
//
// Package shaper/htb, above it, makes a device hold a planned tree.
//
// It may import the model (package shaper) and shaper/classify/spec; it
// must not import netlink, x/sys, os/exec or anything that does (the
// layout test checks).
package plan
