package backends

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify/gtpu"
	"github.com/free5gc/gtpqos/shaper/edtbackend"
)

// Cases that split the edt backend's cost. The floor: what HTB and the
// guaranteed class's fq leaf cost a packet when the program in front of
// them does the least a classifier must (a class and an fq flow, no
// pacing, no map); beside edt-N it splits the cost into the tree's and the
// pacing program's, beside htb-3 it bounds what any program in front of
// this tree could reach. The lookup floor: the floor plus finding the
// packet's flow among N in the pacer's flows map and counting the packet
// there, the least a design that keeps state per flow in a hash map does.
// The array floor: the same with the flow's entry at an array index (the
// mark), each entry the size of the pacer's, no hash, no bucket: the
// least any per-flow state costs. Both floors, and edt itself, run head to
// head with htb at 3 classes.

// Offsets the programs below use: offsetof(struct __sk_buff, mark) and
// (priority), and offsetof(struct flow, pkts) in shaper/edt/bpf/edt.c (the
// bench's check that every flow counted its own packets fails when it is
// wrong).
const (
	skbMarkOff     = 8
	skbPriorityOff = 32
	flowPktsOff    = 96
	flowSize       = 144 // sizeof(struct flow)
)

// pinFlowsName is the edt pacer's flows map in the device's pin directory.
const pinFlowsName = "gtpqos_edt_flows"

// floorTail sets skb->priority (R6: the context) to the guaranteed class
// and skb->hash to one value (fq then takes every packet as one flow
// without running the flow dissector, as the pacer's guaranteed packets
// are), and passes.
func floorTail() asm.Instructions {
	return asm.Instructions{
		asm.Mov.Imm(asm.R2, int32(edtbackend.ClassID(edtbackend.MinorGuaranteed))).WithSymbol("tail"),
		asm.StoreMem(asm.R6, skbPriorityOff, asm.R2, asm.Word), // BPF_ST into the context is refused
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.FnSetHash.Call(),
		asm.Mov.Imm(asm.R0, 0), // TC_ACT_OK
		asm.Return(),
	}
}

// floorProgram is floorTail alone.
func floorProgram(b *testing.B) *ebpf.Program {
	return newFloor(b, append(asm.Instructions{asm.Mov.Reg(asm.R6, asm.R1)}, floorTail()...))
}

// lookupFloorProgram looks the packet's mark up in flows (the pacer's hash
// map, or an array indexed by mark), adds 1 to that flow's packet count,
// then runs floorTail.
func lookupFloorProgram(b *testing.B, flows *ebpf.Map) *ebpf.Program {
	head := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R6, skbMarkOff, asm.Word),
		asm.And.Imm(asm.R2, int32(shaper.MarkMask)),
		asm.StoreMem(asm.RFP, -4, asm.R2, asm.Word),
		asm.LoadMapPtr(asm.R1, flows.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "tail"),
		asm.Mov.Imm(asm.R1, 1),
		asm.AddAtomic.Mem(asm.R0, asm.R1, asm.DWord, flowPktsOff),
	}
	return newFloor(b, append(head, floorTail()...))
}

// newFloor loads a floor program, closed when the benchmark ends.
func newFloor(b *testing.B, insns asm.Instructions) *ebpf.Program {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SchedCLS, License: "Dual MIT/GPL", Instructions: insns})
	if err != nil {
		b.Fatalf("floor program: %v", err)
	}
	b.Cleanup(func() { _ = prog.Close() })
	return prog
}

// benchFloor applies the edt backend to the flows, then puts floorProgram
// in its pacer's place on the device's egress hook.
func benchFloor(b *testing.B, flows []shaper.Flow, marks []uint32) {
	l := edtLab(b, flows, marks, nil)
	l.replaceProgram(b, floorProgram(b))
	l.be = nil // the floor program counts nothing per flow
	b.Run("pps", l.bench)
}

// benchLookupFloor is the lookup floor at len(flows) flows head to head
// with htb at 3 classes; the pacer's own counters check that every packet
// found its flow.
func benchLookupFloor(b *testing.B, flows []shaper.Flow, marks []uint32) {
	l := edtLab(b, flows, marks, htb3Marks())
	pins, err := edtbackend.PinsIn(l.ns.Handle, l.dev)
	if err != nil {
		b.Fatal(err)
	}
	m, err := ebpf.LoadPinnedMap(pins.Path(pinFlowsName), nil)
	if err != nil {
		b.Fatalf("the pacer's flows map: %v", err)
	}
	defer m.Close()
	l.replaceProgram(b, lookupFloorProgram(b, m))
	l.shapeRef(b, "htb", ppsFlows(3))
	b.Run("pps", l.bench)
}

// benchArrayFloor is the array floor at len(flows) flows head to head
// with htb at 3 classes. Its counts are its own array's, checked after.
func benchArrayFloor(b *testing.B, flows []shaper.Flow, marks []uint32) {
	l := edtLab(b, flows, marks, htb3Marks())
	arr, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: flowSize, MaxEntries: uint32(slices.Max(marks)) + 1})
	if err != nil {
		b.Fatalf("array of %d flows: %v", len(marks), err)
	}
	defer arr.Close()
	l.replaceProgram(b, lookupFloorProgram(b, arr))
	l.shapeRef(b, "htb", ppsFlows(3))
	l.be = nil
	tx0 := l.txPackets(b)
	b.Run("pps", l.bench)
	var sum uint64
	v := make([]byte, flowSize)
	for _, m := range marks {
		if err := arr.Lookup(m, v); err != nil {
			b.Fatal(err)
		}
		sum += binary.NativeEndian.Uint64(v[flowPktsOff:])
	}
	if out := l.txPackets(b) - tx0; sum != out {
		b.Fatalf("the array counted %d packets, %s sent %d", sum, l.dev, out)
	}
}

// edtLab is a lab whose device the edt backend shapes for flows.
func edtLab(b *testing.B, flows []shaper.Flow, marks, refMarks []uint32) *ppsLab {
	if err := registry["edt"].probe(); err != nil {
		b.Skipf("edt: %v", err)
	}
	l := newPPSLab(b, marks, refMarks)
	l.shape(b, "edt", flows)
	return l
}

// replaceProgram puts prog in the pacer's place on the device's egress.
func (l *ppsLab) replaceProgram(b *testing.B, prog *ebpf.Program) {
	link, err := l.h.LinkByName(l.dev)
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := gtpu.Attach(l.h, link, gtpu.Egress, prog, edtbackend.FilterName[len(gtpu.NamePrefix):]); err != nil {
		b.Fatal(err)
	}
}

// htb3Marks are the marks of ppsFlows(3).
func htb3Marks() []uint32 {
	var marks []uint32
	for _, f := range ppsFlows(3) {
		marks = append(marks, f.Mark)
	}
	return marks
}

// benchHeadToHead is the edt backend at len(flows) flows against the htb
// backend at 3 classes, each on its own device, the rounds alternating
// between the two: the ratio (of-htb-3) compares the trees themselves,
// where each case's ratio of the unshaped veth carries that veth's own
// spread from round to round as well.
func benchHeadToHead(b *testing.B, flows []shaper.Flow, marks []uint32) {
	l := edtLab(b, flows, marks, htb3Marks())
	l.shapeRef(b, "htb", ppsFlows(3))
	b.Run("pps", l.bench)
}
