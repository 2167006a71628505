// Package qosview joins gtp5g's PDRs, QERs and FARs (as package gtpnl
// decodes them) into the model's QoS flows, and gives uplink flows marks of
// gtpqos's own on stock gtp5g (UplinkMarks). It is the only place that
// knows both worlds: PFCP rules on one side, shaper.Flow on the other.
//
// It may import the model and gtpnl's rule types; it never reaches the
// kernel. The rules, and free5GC's rule shapes they are written for, are in
// README.md beside this file.
package qosview
