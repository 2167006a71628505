// Package stock holds the acceptance tests of gtpqos with stock gtp5g: the
// lab's UPF stand-in sends every flow unmarked (as gtp5g v0.10.2 does) and
// the BPF classifier of shaper/classify/gtpu recognises flows by (TEID, QFI) in
// the GTP-U header on N3 egress.
//
// The tests need root (network namespaces, HTB, BPF) and skip otherwise.
package stock
