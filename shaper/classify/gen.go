package classify

// The mark classifier's compiled objects (mark_bpfel.o, mark_bpfeb.o) and
// their Go bindings are committed, so building gtpqos needs no clang.
// 'make generate' rebuilds them, as it does shaper/classify/gtpu's.
//
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go@v0.22.0 -cc clang -cflags "-O2 -g -Wall -Werror $BPF_CFLAGS" mark bpf/mark.c
