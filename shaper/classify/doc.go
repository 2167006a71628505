// Package classify steers each QoS flow's packets into its class: the
// Classifier interface a backend drives, and the mark classifiers Fw (cls_fw,
// one filter per mark) and MarkBPF (one cls_bpf program and a hash map
// mark -> class). Package gtpu, below it, classifies stock gtp5g's packets by
// (TEID, QFI) from the GTP-U header.
//
// Each classifier owns what it installs and says how to recognise it
// (filter priority and name), so Remove deletes exactly that and never
// another program's filter.
//
// It may import the model (package shaper), vishvananda/netlink, cilium/ebpf
// and x/sys; it must not import a backend.
package classify
