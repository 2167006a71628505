package gtpu

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/free5gc/gtpqos/shaper/bpf"
)

// EthernetHeaderLen is the link-layer header length in front of IPv4 on an
// Ethernet (or veth) N3 interface.
const EthernetHeaderLen = 14

// Objects are the loaded BPF programs and maps of one classifier instance
// (one N3 interface, optionally one N6 interface). Close releases them;
// attached filters keep their own references until detached.
type Objects struct {
	objs gtpuObjects
	dl   table[gtpuFlowKey, uint32]
	ul   table[gtpuFlowKey, uint32]
	mc   table[uint32, uint32]
	dlr  table[uint32, bpf.SDFRules]
	ulr  table[uint32, bpf.SDFRules]
	dflt uint32
}

// LoadOptions tune Load.
type LoadOptions struct {
	// L2Len is the number of bytes in front of the IPv4 header on the N3
	// device: EthernetHeaderLen (the default when 0) or 0 for an L3 device.
	// Use NoL2Header for 0.
	L2Len int
}

// NoL2Header is the L2Len for an L3 device (no link-layer header).
const NoL2Header = -1

// Load loads the programs and maps into the kernel. It needs CAP_BPF (or
// root); the error names the object the kernel refused.
func Load(opts LoadOptions) (*Objects, error) {
	l2 := opts.L2Len
	switch {
	case l2 == 0:
		l2 = EthernetHeaderLen
	case l2 == NoL2Header:
		l2 = 0
	case l2 < 0 || l2 > 64:
		return nil, fmt.Errorf("gtpu bpf: link-layer header length %d out of range 0..64", l2)
	}
	// A no-op on kernels that account BPF memory to the memory cgroup (5.11+).
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("gtpu bpf: raise RLIMIT_MEMLOCK: %w", err)
	}
	spec, err := loadGtpu()
	if err != nil {
		return nil, fmt.Errorf("gtpu bpf: %w", err)
	}
	if err := spec.Variables[gtpuVarL2Len].Set(uint32(l2)); err != nil {
		return nil, fmt.Errorf("gtpu bpf: set l2_len: %w", err)
	}
	o := &Objects{}
	if err := spec.LoadAndAssign(&o.objs, nil); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("gtpu bpf: verifier refused the program: %w", err)
		}
		return nil, fmt.Errorf("gtpu bpf: load objects: %w", err)
	}
	o.dl = newTable[gtpuFlowKey, uint32](o.objs.DlClass, "dl_class")
	o.ul = newTable[gtpuFlowKey, uint32](o.objs.UlMark, "ul_mark")
	o.mc = newTable[uint32, uint32](o.objs.MarkClass, "mark_class")
	o.dlr = newTable[uint32, bpf.SDFRules](o.objs.DlRules, "dl_rules")
	o.ulr = newTable[uint32, bpf.SDFRules](o.objs.UlRules, "ul_rules")
	return o, nil
}

// Close releases the programs and maps held by this process.
func (o *Objects) Close() error {
	if o == nil {
		return nil
	}
	return o.objs.Close()
}

// DownlinkProgram is the clsact egress program for N3 (sets skb->priority).
func (o *Objects) DownlinkProgram() *ebpf.Program { return o.objs.GtpuEgress }

// UplinkProgram is the clsact ingress program for N3 (sets skb->mark).
func (o *Objects) UplinkProgram() *ebpf.Program { return o.objs.GtpuIngress }

// MarkProgram is the clsact egress program for N6 (skb->mark -> skb->priority).
func (o *Objects) MarkProgram() *ebpf.Program { return o.objs.MarkEgress }

// SetDefaultClass sets the HTB class id (major<<16 | minor) that GTP-U
// packets no flow claims get on N3 egress; 0 leaves skb->priority alone.
func (o *Objects) SetDefaultClass(classID uint32) error {
	if classID == o.dflt {
		return nil
	}
	cfg := gtpuGtpuConfig{DlDefaultClass: classID}
	if err := o.objs.Config.Put(uint32(0), cfg); err != nil {
		return fmt.Errorf("gtpu bpf: map config: set default class %#x: %w", classID, err)
	}
	o.dflt = classID
	return nil
}

// SyncDownlink makes the downlink map hold exactly want: (TEID, QFI) -> HTB
// class id. Only changed keys are written or deleted.
func (o *Objects) SyncDownlink(want map[Key]uint32) (SyncResult, error) {
	return o.dl.sync(flowKeys(want))
}

// SyncUplink makes the uplink map hold exactly want: (TEID, QFI) -> mark.
// Only changed keys are written or deleted.
func (o *Objects) SyncUplink(want map[Key]uint32) (SyncResult, error) {
	return o.ul.sync(flowKeys(want))
}

// SyncMarkClasses makes the N6 map hold exactly want: mark -> HTB class id.
// Only changed keys are written or deleted.
func (o *Objects) SyncMarkClasses(want map[uint32]uint32) (SyncResult, error) {
	return o.mc.sync(want)
}

// PatchDownlink deletes del's keys from the downlink map and writes put's.
func (o *Objects) PatchDownlink(del []Key, put map[Key]uint32) (SyncResult, error) {
	return o.dl.patch(bpfKeys(del), flowKeys(put))
}

// PatchUplink deletes del's keys from the uplink map and writes put's.
func (o *Objects) PatchUplink(del []Key, put map[Key]uint32) (SyncResult, error) {
	return o.ul.patch(bpfKeys(del), flowKeys(put))
}

// PatchMarkClasses deletes del's marks from the N6 map and writes put's.
func (o *Objects) PatchMarkClasses(del []uint32, put map[uint32]uint32) (SyncResult, error) {
	return o.mc.patch(del, put)
}

func bpfKeys(keys []Key) []gtpuFlowKey {
	out := make([]gtpuFlowKey, len(keys))
	for i, k := range keys {
		out[i] = k.bpf()
	}
	return out
}

func flowKeys(want map[Key]uint32) map[gtpuFlowKey]uint32 {
	out := make(map[gtpuFlowKey]uint32, len(want))
	for k, v := range want {
		out[k.bpf()] = v
	}
	return out
}
