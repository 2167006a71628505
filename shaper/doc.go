// Package shaper turns QoS flows (QER GBR/MBR) into a Linux HTB tree and keeps
// the kernel's tree in step with it.
//
// The work is split in two:
//
//   - [Plan] is pure: flows + [Policy] -> desired [Tree] + [Problem]s. It never
//     touches the kernel, is deterministic, and keeps class ids stable when the
//     caller passes the previous (or actual) tree in [Policy.Previous].
//   - [Reconciler] reads the kernel's tree through one long-lived
//     vishvananda/netlink handle, normalises units, and applies the minimum set
//     of changes: classes are changed in place, classifier entries are removed
//     before their classes, and a second run with the same tree writes nothing.
//     In incremental mode ([WithTrustLastWrite]) it trusts its last successful
//     write and diffs against it instead of reading the kernel, until
//     [Reconciler.Forget] or an error asks for a full run again.
//
// Ownership: gtpqos owns a device's tree iff the device's root qdisc is an HTB
// qdisc with handle major [OwnedMajor] (0x6771, "gq", shown by tc as 6771:).
// Everything gtpqos creates lives under that qdisc (classes, leaf qdiscs,
// filters), so deleting it removes everything. A root qdisc with handle 0 is
// the kernel's default (noqueue, pfifo_fast, mq, ...) and may be replaced; any
// other root qdisc belongs to someone else and is only replaced with force.
//
// Classification goes through the [Classifier] interface: [FwClassifier]
// (cls_fw, mark -> class, as the seed experiment) and [MarkBPFClassifier]
// (cls_bpf direct-action + BPF hash map mark -> class id, for kernels without
// cls_fw). Other packages (shaper/classify/gtpu) implement the interface too.
package shaper
