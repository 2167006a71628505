// Package edt is the datapath core of an earliest-departure-time (EDT)
// pacer: a clsact egress BPF program (bpf/edt.c, built with bpf2go) that
// finds each packet's QoS flow by skb->mark, computes its departure time
// from per-flow MBR and GBR clocks and a per-session AMBR clock, drops it
// when that lies beyond the flow's delay budget, and hands it to a small
// fixed set of shared HTB classes (skb->priority) with a per-flow skb->hash
// and an skb->tstamp that an fq leaf holds it until. The Go side loads the
// program and writes typed entries into its maps.
//
// The package keeps no state of its own besides the kernel objects, so a
// process that opens the same maps later sees everything. It does not
// attach the program or build the qdisc tree; a backend does that.
package edt
