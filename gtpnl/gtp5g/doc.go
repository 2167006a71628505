// Package gtp5g holds the rules free5GC's gtp5g kernel module keeps, as
// plain Go types: PDRs, FARs and QERs (PFCP, TS 29.244), and the gtpqos
// gtp5g-patch series' mark mode. Package gtpnl reads them from the kernel
// (and re-exports these types); package qosview joins them into QoS flows
// without depending on netlink.
//
// It imports nothing but the standard library.
package gtp5g
