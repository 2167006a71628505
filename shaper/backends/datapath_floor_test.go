package backends

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/edtbackend"
)

// Two cases that split the edt backend's cost. The floor: what HTB and the
// guaranteed class's fq leaf cost a packet when the program in front of
// them does the least a classifier must (a class and an fq flow, no
// pacing, no map); beside edt-N it splits the cost into the tree's and the
// pacing program's, beside htb-3 it bounds what any program in front of
// this tree could reach. Head to head: edt against htb at 3 classes.

// skbPriorityOff is offsetof(struct __sk_buff, priority).
const skbPriorityOff = 32

// floorProgram sets skb->priority to the guaranteed class and skb->hash
// to one value (fq then takes every packet as one flow without running
// the flow dissector, as the pacer's guaranteed packets are), and passes.
func floorProgram(b *testing.B) *ebpf.Program {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.SchedCLS,
		License: "Dual MIT/GPL",
		Instructions: asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.Mov.Imm(asm.R2, int32(edtbackend.ClassID(edtbackend.MinorGuaranteed))),
			asm.StoreMem(asm.R6, skbPriorityOff, asm.R2, asm.Word), // BPF_ST into the context is refused
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.FnSetHash.Call(),
			asm.Mov.Imm(asm.R0, 0), // TC_ACT_OK
			asm.Return(),
		},
	})
	if err != nil {
		b.Fatalf("floor program: %v", err)
	}
	b.Cleanup(func() { _ = prog.Close() })
	return prog
}

// benchFloor applies the edt backend to the flows, then puts floorProgram
// in its pacer's place on the device's egress hook.
func benchFloor(b *testing.B, flows []shaper.Flow, marks []uint32) {
	if err := registry["edt"].probe(); err != nil {
		b.Skipf("edt: %v", err)
	}
	l := newPPSLab(b, marks, nil)
	l.shape(b, "edt", flows)
	link, err := l.h.LinkByName(l.dev)
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := gtpu.Attach(l.h, link, gtpu.Egress, floorProgram(b), edtbackend.FilterName[len(gtpu.NamePrefix):]); err != nil {
		b.Fatal(err)
	}
	l.be = nil // the floor program counts nothing per flow
	b.Run("pps", l.bench)
}

// benchHeadToHead is the edt backend at len(flows) flows against the htb
// backend at 3 classes, each on its own device, the rounds alternating
// between the two: the ratio (of-htb-3) compares the trees themselves,
// where each case's ratio of the unshaped veth carries that veth's own
// spread from round to round as well.
func benchHeadToHead(b *testing.B, flows []shaper.Flow, marks []uint32) {
	if err := registry["edt"].probe(); err != nil {
		b.Skipf("edt: %v", err)
	}
	three := ppsFlows(3)
	refMarks := make([]uint32, len(three))
	for i, f := range three {
		refMarks[i] = f.Mark
	}
	l := newPPSLab(b, marks, refMarks)
	l.shape(b, "edt", flows)
	l.shapeRef(b, "htb", three)
	b.Run("pps", l.bench)
}
