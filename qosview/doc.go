// Package qosview joins gtp5g's PDRs, QERs and FARs (as package gtpnl
// decodes them) into the shaper's QoS flows. It is the only place that
// knows both worlds: PFCP rules on one side, shaper.Flow on the other.
//
// The rules, and free5GC's rule shapes they are written for, are in
// README.md beside this file.
package qosview
