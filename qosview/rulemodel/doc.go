// Package rulemodel keeps gtp5g's QoS rules by session, in the compact
// form the QoS view (qosview.Build) reads: a full dump makes a Model, rule
// changes update it one rule at a time, and Rules gives a session's rules
// back to view them again. It models rules alone: where they come from
// (gtpnl's dumps and events) is the caller's business, and like qosview it
// never reaches the kernel.
package rulemodel
