package shaper

// Plan turns flows and a policy into the desired tree and a list of
// problems. It is pure and deterministic: the same input gives the same
// output, and it never touches the kernel.
//
// The tree has a link class (LinkMinor, rate = ceil = link) under the root,
// a default class (DefaultMinor) under the link class, optional session
// classes (one per SEID whose flows carry SessionAMBR > 0: rate = sum of its
// non-GBR flows' rates, ceil = AMBR; parent of that session's non-GBR flows,
// while its GBR flows stay directly under the link class, TS 23.501), and
// one leaf class per admitted flow:
//
//   - Aware: rate = GBR (non-GBR: min(NonGBRMin, ceil)), ceil = MBR, or the
//     link rate without MBR; ceil is capped at the link rate (and at the
//     session AMBR for non-GBR flows).
//   - Static: rate = StaticRate, ceil = StaticCeil (capped at the link).
//
// Flows with an Error problem are left out; Warning problems keep the flow.
// See Policy.Previous for how class ids stay stable.
func Plan(flows []Flow, pol Policy) (*Tree, []Problem) { return plan(flows, pol) }
