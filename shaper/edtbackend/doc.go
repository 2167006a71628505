// Package edtbackend is the edt backend: a shaper.Backend that paces each
// QoS flow with the EDT program of package shaper/edt instead of giving it
// an HTB class of its own.
//
// The device holds a fixed tree, whatever the flows: an HTB root (handle
// Major, with the size table that makes classes count the user's IP
// packets), a link class at the link rate, and three shared classes under
// it, each with an fq leaf: guaranteed (rate = the sum of the admitted
// GBRs; it borrows first), non-GBR (no rate of its own: it borrows the
// rest) and default (unclassified packets), all with ceil = link. The edt program on the device's clsact egress hook gives
// every packet its shared class (skb->priority, which HTB takes as the
// class), its departure time (skb->tstamp, which fq waits for) and a
// per-flow hash (fq's flow). Flows and sessions are map writes: adding or
// removing one writes no class.
//
// The program finds a packet's flow by its mark (the patched gtp5g) or,
// for a flow without one (stock gtp5g), by the (TEID, QFI) of its GTP-U
// header on N3; on N6, Options.Marker (the GTP-U classifier's N3 ingress
// program) marks stock gtp5g's uplink packets for it. The kernel needs sch_fq, and loading needs CAP_BPF and
// CAP_NET_ADMIN; both are checked before the first write.
package edtbackend
