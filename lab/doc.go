// Package lab builds a UPF's downlink path in network namespaces and drives
// traffic through it, entirely from one process: the testbed of `gtpqos ab
// --lab` and `make demo`.
//
// Four namespaces — ue, gnb, upf and dn, each with a random suffix — are
// joined by veths: ue<->gnb, N3 gnb<->upf and N6 upf<->dn. A user-space UPF
// stand-in reads DN->UE packets from a TUN device on the N6 side, matches
// them against a PDR table (the DN endpoint selects the flow), encapsulates
// them in GTP-U with a PDU Session Container carrying the QFI, exactly as
// gtp5g does, and sends them to the gNB from a UDP socket whose SO_MARK is
// the flow's mark. The N3 egress of the upf namespace is where an HTB tree
// (built by a shaper backend) sees them. A gNB stand-in decapsulates and
// writes the inner packets into a TUN device, from which the kernel routes
// them to the UE namespace. Built-in senders (dn) and receivers (ue), or
// iperf3 when asked, produce per-second receiver intervals.
//
// The trick that keeps everything in one process: a socket or TUN file
// descriptor opened while the OS thread is inside a namespace stays in that
// namespace, so only fd creation runs on a locked, namespace-switched
// thread; the data paths are ordinary goroutines.
//
// It may import the model and vishvananda/netlink, netns and x/sys; the
// A/B runner on top of it is package lab/ab.
package lab
