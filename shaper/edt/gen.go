package edt

// The compiled objects (edt_bpfel.o, edt_bpfeb.o) and their Go bindings are
// committed, so building gtpqos needs no clang. 'make generate' rebuilds them
// (it installs clang, llvm and libbpf-dev from Debian when missing and sets
// BPF_CFLAGS to the host's multiarch include directory).
//
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go@v0.22.0 -cc clang -cflags "-O2 -g -Wall -Werror -I../bpf $BPF_CFLAGS" -type flow -type session -type edt_config -type edt_stats -type flow_key edt bpf/edt.c
