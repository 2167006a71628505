package status

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/gtpnl"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/backends"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// edtSource is a patched gtp5g with one session's two downlink flows,
// marked 0x10 and 0x20.
type edtSource struct{ fakeSource }

func (edtSource) Rules() ([]gtpnl.QER, []gtpnl.PDR, []gtpnl.FAR, error) {
	core := gtpnl.InterfaceCore
	var qers []gtpnl.QER
	var pdrs []gtpnl.PDR
	var fars []gtpnl.FAR
	for i, mark := range []uint32{0x10, 0x20} {
		id := uint32(i + 1)
		qers = append(qers, gtpnl.QER{SEID: 1, ID: id, QFI: uint8(8 + i), MBR: gtpnl.Bitrate{Downlink: 1e6 * uint64(id)}, FlowMark: mark})
		pdrs = append(pdrs, gtpnl.PDR{SEID: 1, ID: uint16(id), FARID: id, QERIDs: []uint32{id}, FlowMark: mark, QFI: uint8(8 + i),
			PDI: gtpnl.PDI{SourceInterface: &core, UEAddr: netip.MustParseAddr("10.60.0.1")}})
		fars = append(fars, gtpnl.FAR{SEID: 1, ID: id, ApplyAction: gtpnl.ActionForw,
			Forwarding: &gtpnl.ForwardingParameters{OuterHeaderCreation: &gtpnl.OuterHeaderCreation{TEID: 100 + id}}})
	}
	return qers, pdrs, fars, nil
}

// status on an N3 device the edt backend shapes: the device's backend is
// found from its tree (status names none), its mode is edt, and each flow
// gtp5g holds is shown with its entry in the program's maps, found by
// mark. A reset that names no backend removes the tree and the pins.
// Needs sch_fq (the VM).
func TestEdtStatusShowsFlows(t *testing.T) {
	testenv.SkipShort(t)
	ns := testenv.NewNetNSPrefix(t, "eb-")
	dev := testenv.UniqueName("ebs")
	ns.AddVethPair(t, dev, dev+"p")
	ns.Run(t, "ip", "addr", "add", "10.99.0.1/24", "dev", dev)
	if _, err := ns.Try("tc", "qdisc", "add", "dev", dev+"p", "root", "handle", "1:", "fq"); err != nil {
		t.Skip("needs sch_fq (the Debian VM has it, this kernel has not)")
	}
	ctx := context.Background()
	pol := shaper.DefaultPolicy(20e6)
	pol.Backend = "edt"
	flows := []shaper.Flow{
		{ID: shaper.FlowID{SEID: 1, QERID: 1}, QFI: 8, Direction: shaper.Downlink, MBR: 1e6, Mark: 0x10},
		{ID: shaper.FlowID{SEID: 1, QERID: 2}, QFI: 9, Direction: shaper.Downlink, MBR: 2e6, Mark: 0x20},
	}
	be, err := backends.Open(dev, backends.Options{Backend: pol.Backend, NetNS: ns.Handle, Policy: &pol, Writer: "apply", LockDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := be.Apply(ctx, flows, pol, shaper.ApplyOptions{Strict: true}); err != nil {
		t.Fatal(err)
	}
	be.Close()

	rep, err := Collect(ctx, edtSource{fakeSource{feats: 0xf}}, func() Trees { return DeviceTrees{NetNS: ns.Handle, N3: dev} })
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Devices) != 1 || rep.Devices[0].Mode != "edt" || !rep.Devices[0].Tree || rep.Devices[0].Root != "6765:" || rep.Devices[0].FlowClasses != 2 {
		t.Errorf("devices %+v; want the N3 device with the edt tree 6765: and 2 flows", rep.Devices)
	}
	if d := rep.Devices; len(d) == 1 && (len(d[0].Attachments) != 1 || d[0].Attachments[0].Entries != 2 || d[0].Attachments[0].ProgramID == 0) {
		t.Errorf("device's programs %+v; want the edt program with its 2 flows", d[0].Attachments)
	}
	got := map[uint32]string{}
	for _, f := range rep.Flows {
		got[f.Mark] = f.Class
	}
	if got[0x10] != "edt/0x10" || got[0x20] != "edt/0x20" {
		t.Errorf("flows' classes %v; want each flow's map entry by mark (problems %v)", got, rep.Problems)
	}

	rb, err := backends.Open(dev, backends.Options{NetNS: ns.Handle, Writer: "reset", LockDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	lines, err := rb.Reset(ctx)
	if err != nil || rb.Name() != "edt" || !strings.Contains(strings.Join(lines, "\n"), "removed tree 6765:") {
		t.Errorf("reset naming no backend: %s, %q, %v; want the edt backend removing its tree", rb.Name(), lines, err)
	}
}
