// Package gtpu classifies GTP-U traffic on a UPF's N3 interface by
// (TEID, QFI) with a BPF program, for stock gtp5g that marks nothing.
//
// Downlink: a clsact egress program on N3 parses outer IPv4 -> UDP 2152 ->
// GTP-U -> PDU Session Container and sets skb->priority to the flow's HTB
// class id, which HTB honours before (and instead of) its filter chain.
// Uplink: a clsact ingress program on N3 sets skb->mark to the flow's mark
// before gtp5g decapsulates, so the N6 tree classifies by mark. A third
// program maps skb->mark to an HTB class id on N6 egress for kernels that
// lack cls_fw.
//
// The program source is bpf/gtpu.c; the compiled objects are committed (see
// gen.go), so nothing here needs a compiler at run time.
package gtpu
