//go:build linux

package gtpnl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/genetlink/genltest"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/tests/testenv"
)

const (
	testFamilyID    = 0x24
	testQoSFamilyID = 0x25
)

var (
	gtp5gFamily = genetlink.Family{ID: testFamilyID, Name: familyName, Groups: []genetlink.MulticastGroup{{Name: "gtp5g", ID: 0x11}}}
	qosFamily   = genetlink.Family{ID: testQoSFamilyID, Name: qosFamilyName, Version: 1, Groups: []genetlink.MulticastGroup{{Name: qosGroup, ID: 0x12}}}
	// A module with the first revision of the patch series: its additions
	// inside the gtp5g family, no gtp5g_qos family. gtpnl treats it as
	// stock.
	oldSeriesFamily = genetlink.Family{ID: testFamilyID, Name: familyName, Groups: []genetlink.MulticastGroup{{Name: "gtp5g", ID: 0x11}, {Name: "gtp5g_qos", ID: 0x12}}}

	stockFamilies   = []genetlink.Family{gtp5gFamily}
	patchedFamilies = []genetlink.Family{gtp5gFamily, qosFamily}
	cmpAddr         = cmpopts.EquateComparable(netip.Addr{})
)

// serveFamilies answers the controller's GETFAMILY for each of fams by
// name (ENOENT for any other name) or, for a dump, with all of them, and
// passes every other request to fn.
func serveFamilies(fams []genetlink.Family, fn genltest.Func) genltest.Func {
	return func(greq genetlink.Message, nreq netlink.Message) ([]genetlink.Message, error) {
		if nreq.Header.Type != unix.GENL_ID_CTRL || greq.Header.Command != unix.CTRL_CMD_GETFAMILY {
			return fn(greq, nreq)
		}
		if nreq.Header.Flags&netlink.Dump != 0 {
			var out []genetlink.Message
			for _, f := range fams {
				m, err := genltest.ServeFamily(f, nil)(greq, nreq)
				if err != nil {
					return nil, err
				}
				out = append(out, m...)
			}
			return out, nil
		}
		ad, err := netlink.NewAttributeDecoder(greq.Data)
		if err != nil {
			return nil, err
		}
		var name string
		for ad.Next() {
			if ad.Type() == unix.CTRL_ATTR_FAMILY_NAME {
				name = ad.String()
			}
		}
		for _, f := range fams {
			if f.Name == name {
				return genltest.ServeFamily(f, nil)(greq, nreq)
			}
		}
		return nil, genltest.Error(int(unix.ENOENT))
	}
}

// testClient returns a client talking to fn through genltest, with fams
// as the module's generic netlink families.
func testClient(t *testing.T, fams []genetlink.Family, fn genltest.Func) *Client {
	t.Helper()
	conn := genltest.Dial(serveFamilies(fams, fn))
	c, err := initClient(conn, func() (*genetlink.Conn, error) { return nil, errors.New("no dial in tests") })
	if err != nil {
		t.Fatalf("initClient: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &Client{c: c}
}

// route serves each request by the Func registered for its family and
// command, failing the test on any other.
func route(t *testing.T, fns map[[2]uint16]genltest.Func) genltest.Func {
	return func(greq genetlink.Message, nreq netlink.Message) ([]genetlink.Message, error) {
		if nreq.Header.Type == 0 {
			return nil, io.EOF // the read after a dump's data: DONE
		}
		fn, ok := fns[[2]uint16{uint16(nreq.Header.Type), uint16(greq.Header.Command)}]
		if !ok {
			t.Errorf("unexpected request: family %#x command %d", uint16(nreq.Header.Type), greq.Header.Command)
			return nil, genltest.Error(int(unix.EOPNOTSUPP))
		}
		return fn(greq, nreq)
	}
}

// expect returns a Func checking a request to f byte for byte (family,
// command, flags, genl version, attribute bytes) before answering with
// msgs/err.
func expect(t *testing.T, f genetlink.Family, cmd uint8, flags netlink.HeaderFlags, data []byte, msgs []genetlink.Message, err error) genltest.Func {
	t.Helper()
	check := genltest.CheckRequest(f.ID, cmd, flags, func(greq genetlink.Message, _ netlink.Message) ([]genetlink.Message, error) {
		if greq.Header.Version != f.Version {
			t.Errorf("request genl version %d, want %d", greq.Header.Version, f.Version)
		}
		if diff := cmp.Diff(data, greq.Data, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("request attributes differ (-want +got):\n%s", diff)
		}
		if msgs == nil && err == nil {
			// An ACK or an empty dump: no messages, no error.
			return nil, io.EOF
		}
		return msgs, err
	})
	return func(greq genetlink.Message, nreq netlink.Message) ([]genetlink.Message, error) {
		if nreq.Header.Type == 0 {
			// A further read after the reply (gtp5g's dumps lack
			// NLM_F_MULTI, so the client reads on until NLMSG_DONE):
			// nothing more, like the datagram holding only DONE.
			return nil, io.EOF
		}
		return check(greq, nreq)
	}
}

func TestDialNotLoaded(t *testing.T) {
	conn := genltest.Dial(func(genetlink.Message, netlink.Message) ([]genetlink.Message, error) {
		return nil, genltest.Error(int(unix.ENOENT))
	})
	_, err := initClient(conn, nil)
	if err == nil {
		t.Fatal("initClient succeeded without a gtp5g family")
	}
	if got, want := err.Error(), "gtp5g module not loaded"; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("errors.Is(%v, os.ErrNotExist) = false", err)
	}
}

// TestDialRealNoModule dials the real kernel: on a machine without gtp5g
// (this one) Dial must fail with the not-loaded error.
func TestDialRealNoModule(t *testing.T) {
	c, err := Dial()
	if err == nil {
		_ = c.Close()
		t.Skip("gtp5g is loaded here; this test checks the module-absent path")
	}
	if got, want := err.Error(), "gtp5g module not loaded"; got != want {
		t.Fatalf("Dial error %q, want %q", got, want)
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("errors.Is(%v, os.ErrNotExist) = false", err)
	}
}

func TestVersionStock(t *testing.T) {
	// The request carries no attributes, like go-upf's.
	ans := reply(cmdGetVersion, []byte{0x0b, 0x00, 0x00, 0x00, '0', '.', '1', '0', '.', '2', 0x00, 0x00})
	c := testClient(t, stockFamilies, expect(t, gtp5gFamily, cmdGetVersion, netlink.Request, nil, []genetlink.Message{ans}, nil))
	v, err := c.Version()
	if err != nil {
		t.Fatalf("Version: %v", err)
	}
	if v != "0.10.2" {
		t.Errorf("Version = %q, want 0.10.2", v)
	}
	// No gtp5g_qos family: no features, and no request for them.
	f, err := c.Features()
	if err != nil {
		t.Fatalf("Features: %v", err)
	}
	if f != 0 || f.String() != "none" {
		t.Errorf("Features on stock = %v (%#x), want none", f, uint32(f))
	}
	fams, err := c.Families()
	if err != nil {
		t.Fatalf("Families: %v", err)
	}
	if len(fams) != 1 || fams[0].String() != "gtp5g v0 (id 36, groups gtp5g)" {
		t.Errorf("Families on stock = %v", fams)
	}
}

func TestFeaturesPatched(t *testing.T) {
	ans := reply(qosCmdGetFeatures, []byte{0x08, 0x00, 0x02, 0x00, 0x0f, 0x00, 0x00, 0x00})
	c := testClient(t, patchedFamilies, expect(t, qosFamily, qosCmdGetFeatures, netlink.Request, nil, []genetlink.Message{ans}, nil))
	f, err := c.Features()
	if err != nil {
		t.Fatalf("Features: %v", err)
	}
	want := FeatureFlowMark | FeatureQoSEvents | FeaturePolicerCtrl | FeatureMarkCtrl
	if f != want {
		t.Errorf("Features = %v, want %v", f, want)
	}
	if got := f.String(); got != "flow-mark,qos-events,policer-ctrl,mark-ctrl" {
		t.Errorf("Features.String = %q", got)
	}
	fams, err := c.Families()
	if err != nil {
		t.Fatalf("Families: %v", err)
	}
	var names []string
	for _, f := range fams {
		names = append(names, f.String())
	}
	wantNames := []string{"gtp5g v0 (id 36, groups gtp5g)", "gtp5g_qos v1 (id 37, groups events): flow-mark,qos-events,policer-ctrl,mark-ctrl"}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("Families differ (-want +got):\n%s", diff)
	}
}

// A module with the first revision of the series (numbers appended to the
// gtp5g family, a "gtp5g_qos" group in it) is driven as stock gtp5g: no
// request goes to the numbers that revision appended.
func TestOldSeriesModuleIsStock(t *testing.T) {
	c := testClient(t, []genetlink.Family{oldSeriesFamily}, func(greq genetlink.Message, _ netlink.Message) ([]genetlink.Message, error) {
		t.Errorf("request %d reached the module", greq.Header.Command)
		return nil, genltest.Error(int(unix.EOPNOTSUPP))
	})
	if f, err := c.Features(); err != nil || f != 0 {
		t.Errorf("Features = %v, %v; want none", f, err)
	}
	if _, err := c.Subscribe(context.Background()); !errors.Is(err, ErrNotSupported) {
		t.Errorf("Subscribe: %v; want ErrNotSupported", err)
	}
}

func TestQERsDump(t *testing.T) {
	msgs := []genetlink.Message{
		reply(cmdGetQER, kqer{id: 1, seid: 1, mbrUL: 200000, mbrDL: 100000, qfi: 1, pdrIDs: []uint16{1, 2, 7, 8}}.attrs(t)),
		reply(cmdGetQER, kqer{id: 3, seid: 1, gate: 0x4, gbrDL: 15000, mbrDL: 18000, qfi: 2, corrID: 7, rqi: 1, ppi: 5, pdrIDs: []uint16{3, 4}}.attrs(t)),
		// 40-bit maximum: high32 = 0xffffffff, low8 = 0xff.
		reply(cmdGetQER, kqer{id: 9, mbrUL: 1<<40 - 1, qfi: 63}.attrs(t)),
		// gtp5g's resumed dump repeated QER 1 of session 1 (see dedupe.go).
		reply(cmdGetQER, kqer{id: 1, seid: 1, mbrUL: 200000, mbrDL: 100000, qfi: 1, pdrIDs: []uint16{1, 2, 7, 8}}.attrs(t)),
		// Same SEID and id, different content: kept for the caller to report.
		reply(cmdGetQER, kqer{id: 9, qfi: 5}.attrs(t)),
		// A newer gtp5g's QER attribute 14 (unknown to v0.10.2) is skipped:
		// it is not a flow mark.
		reply(cmdGetQER, cat(kqer{id: 10, seid: 2}.attrs(t), attr(14, []byte{7, 0, 0, 0}))),
	}
	c := testClient(t, stockFamilies, expect(t, gtp5gFamily, cmdGetQER, netlink.Request|netlink.Dump, nil, msgs, nil))
	got, err := c.QERs()
	if err != nil {
		t.Fatalf("QERs: %v", err)
	}
	want := []QER{
		{SEID: 1, ID: 1, MBR: Bitrate{Uplink: 200_000_000, Downlink: 100_000_000}, QFI: 1, RelatedPDRs: []uint16{1, 2, 7, 8}},
		{SEID: 1, ID: 3, Gate: 0x4, MBR: Bitrate{Downlink: 18_000_000}, GBR: Bitrate{Downlink: 15_000_000}, QFI: 2, CorrelationID: 7, RQI: true, PPI: 5, RelatedPDRs: []uint16{3, 4}},
		{ID: 9, MBR: Bitrate{Uplink: (1<<40 - 1) * 1000}, QFI: 63},
		{ID: 9, QFI: 5},
		{SEID: 2, ID: 10},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("QERs differ (-want +got):\n%s", diff)
	}
	if got[1].Gate.UplinkOpen() || !got[1].Gate.DownlinkOpen() {
		t.Errorf("gate 0x4: uplink open %v, downlink open %v; want closed/open", got[1].Gate.UplinkOpen(), got[1].Gate.DownlinkOpen())
	}
}

// With gtp5g_qos, QERs() dumps gtp5g's QERs, then gtp5g_qos's flow mark
// records, and joins them by SEID and id.
func TestQERsDumpPatched(t *testing.T) {
	qers := []genetlink.Message{
		reply(cmdGetQER, kqer{id: 1, seid: 1, qfi: 1}.attrs(t)),
		reply(cmdGetQER, kqer{id: 3, seid: 1, qfi: 2}.attrs(t)),
		reply(cmdGetQER, kqer{id: 3, seid: 2, qfi: 2}.attrs(t)),
	}
	recs := []genetlink.Message{
		reply(qosCmdGetQER, qerRecord(t, 7, 1, 3, 0xabcdef)),
		reply(qosCmdGetQER, qerRecord(t, 7, 1, 1, 1)),
		// A QER created between the two dumps: no gtp5g record, ignored.
		reply(qosCmdGetQER, qerRecord(t, 7, 9, 9, 9)),
	}
	c := testClient(t, patchedFamilies, route(t, map[[2]uint16]genltest.Func{
		{testFamilyID, cmdGetQER}:       expect(t, gtp5gFamily, cmdGetQER, netlink.Request|netlink.Dump, nil, qers, nil),
		{testQoSFamilyID, qosCmdGetQER}: expect(t, qosFamily, qosCmdGetQER, netlink.Request|netlink.Dump, nil, recs, nil),
	}))
	got, err := c.QERs()
	if err != nil {
		t.Fatalf("QERs: %v", err)
	}
	want := []QER{{SEID: 1, ID: 1, QFI: 1, FlowMark: 1}, {SEID: 1, ID: 3, QFI: 2, FlowMark: 0xabcdef}, {SEID: 2, ID: 3, QFI: 2}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("QERs differ (-want +got):\n%s", diff)
	}
}

func TestPDRsDump(t *testing.T) {
	msgs := []genetlink.Message{
		// Uplink PDR of flow A, as stock v0.10.2 reports it (no SRC_INTF).
		reply(cmdGetPDR, kpdr{id: 3, precedence: 128, seid: 1, ohr: u8p(0), farID: 3, qerIDs: []uint32{3}, urrIDs: []uint32{1},
			teid: 200, gtpuAddr: "10.100.0.1", ueAddr: "10.60.0.1"}.attrs(t)),
		// Downlink PDR of flow C with SDF and two QERs (SRC_INTF as a
		// later gtp5g might report it).
		reply(cmdGetPDR, kpdr{id: 8, precedence: 128, seid: 1, farID: 8, qerIDs: []uint32{1, 5}, ueAddr: "10.60.0.1", srcIntf: u8p(1),
			sdf: &ksdf{action: 1, dir: 2, proto: 0xff, src: "192.168.100.5", dst: "10.60.0.1", smask: "255.255.255.0", dports: []uint32{5203 | 5203<<16}}}.attrs(t)),
		// A newer gtp5g's PDR attribute 13 (PDN type) is not a QFI.
		reply(cmdGetPDR, cat(kpdr{id: 9, seid: 1}.attrs(t), attr(13, []byte{1, 0, 0, 0}))),
	}
	c := testClient(t, stockFamilies, expect(t, gtp5gFamily, cmdGetPDR, netlink.Request|netlink.Dump, nil, msgs, nil))
	got, err := c.PDRs()
	if err != nil {
		t.Fatalf("PDRs: %v", err)
	}
	core := InterfaceCore
	want := []PDR{
		{SEID: 1, ID: 3, Precedence: 128, OuterHeaderRemoval: u8p(0), FARID: 3, QERIDs: []uint32{3}, URRIDs: []uint32{1},
			PDI: PDI{UEAddr: netip.MustParseAddr("10.60.0.1"), FTEID: &FTEID{TEID: 200, Addr: netip.MustParseAddr("10.100.0.1")}}},
		{SEID: 1, ID: 8, Precedence: 128, FARID: 8, QERIDs: []uint32{1, 5},
			PDI: PDI{SourceInterface: &core, UEAddr: netip.MustParseAddr("10.60.0.1"),
				SDF: &SDFFilter{Rule: &FlowDescription{Action: 1, Direction: 2, Protocol: 0xff,
					Src: netip.MustParseAddr("192.168.100.5"), SrcMask: netip.MustParseAddr("255.255.255.0"),
					Dst: netip.MustParseAddr("10.60.0.1"), DstPorts: []PortRange{{Start: 5203, End: 5203}}}}}},
		{SEID: 1, ID: 9},
	}
	if diff := cmp.Diff(want, got, cmpAddr); diff != "" {
		t.Errorf("PDRs differ (-want +got):\n%s", diff)
	}
}

func TestPDRsDumpPatched(t *testing.T) {
	pdrs := []genetlink.Message{
		reply(cmdGetPDR, kpdr{id: 3, seid: 1, farID: 3, qerIDs: []uint32{3}}.attrs(t)),
		reply(cmdGetPDR, kpdr{id: 8, seid: 1, farID: 8, qerIDs: []uint32{1, 5}}.attrs(t)),
	}
	recs := []genetlink.Message{
		reply(qosCmdGetPDR, pdrRecord(t, 7, 1, 8, 4, 17)),
		reply(qosCmdGetPDR, pdrRecord(t, 7, 1, 3, 2, 5)),
	}
	c := testClient(t, patchedFamilies, route(t, map[[2]uint16]genltest.Func{
		{testFamilyID, cmdGetPDR}:       expect(t, gtp5gFamily, cmdGetPDR, netlink.Request|netlink.Dump, nil, pdrs, nil),
		{testQoSFamilyID, qosCmdGetPDR}: expect(t, qosFamily, qosCmdGetPDR, netlink.Request|netlink.Dump, nil, recs, nil),
	}))
	got, err := c.PDRs()
	if err != nil {
		t.Fatalf("PDRs: %v", err)
	}
	want := []PDR{
		{SEID: 1, ID: 3, FARID: 3, QERIDs: []uint32{3}, QFI: 2, FlowMark: 5},
		{SEID: 1, ID: 8, FARID: 8, QERIDs: []uint32{1, 5}, QFI: 4, FlowMark: 17},
	}
	if diff := cmp.Diff(want, got, cmpAddr); diff != "" {
		t.Errorf("PDRs differ (-want +got):\n%s", diff)
	}
}

func TestFARsDump(t *testing.T) {
	msgs := []genetlink.Message{
		reply(cmdGetFAR, kfar{id: 8, seid: 1, action: 0x02, fwd: true, ohc: true, desc: 0x0100, teid: 100, peer: "10.100.0.2", port: 2152, tosTC: 0x2e, pdrIDs: []uint16{8}}.attrs(t)),
		reply(cmdGetFAR, kfar{id: 3, seid: 1, action: 0x02, u16Action: true, fwd: true, policy: "n6-policy"}.attrs(t)),
		reply(cmdGetFAR, kfar{id: 4, action: 0x01}.attrs(t)),
	}
	c := testClient(t, patchedFamilies, expect(t, gtp5gFamily, cmdGetFAR, netlink.Request|netlink.Dump, nil, msgs, nil))
	got, err := c.FARs()
	if err != nil {
		t.Fatalf("FARs: %v", err)
	}
	want := []FAR{
		{SEID: 1, ID: 8, ApplyAction: ActionForw, RelatedPDRs: []uint16{8}, Forwarding: &ForwardingParameters{
			OuterHeaderCreation:   &OuterHeaderCreation{Description: 0x0100, TEID: 100, Peer: netip.MustParseAddr("10.100.0.2"), Port: 2152},
			TransportLevelMarking: 0x2e}},
		{SEID: 1, ID: 3, ApplyAction: ActionForw, Forwarding: &ForwardingParameters{ForwardingPolicy: "n6-policy"}},
		{ID: 4, ApplyAction: ActionDrop},
	}
	if diff := cmp.Diff(want, got, cmpAddr); diff != "" {
		t.Errorf("FARs differ (-want +got):\n%s", diff)
	}
}

func TestDumpEmpty(t *testing.T) {
	c := testClient(t, stockFamilies, expect(t, gtp5gFamily, cmdGetQER, netlink.Request|netlink.Dump, nil, nil, nil))
	got, err := c.QERs()
	if err != nil {
		t.Fatalf("QERs: %v", err)
	}
	if len(got) != 0 {
		t.Fatalf("QERs = %v, want none", got)
	}
}

func TestErrnoMapping(t *testing.T) {
	tests := []struct {
		name  string
		errno unix.Errno
		is    error
	}{
		{"ENOENT", unix.ENOENT, os.ErrNotExist},
		{"ENODEV", unix.ENODEV, os.ErrNotExist},
		{"EPERM", unix.EPERM, os.ErrPermission},
		{"ENOBUFS", unix.ENOBUFS, ErrResync},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testClient(t, stockFamilies, func(genetlink.Message, netlink.Message) ([]genetlink.Message, error) {
				return nil, genltest.Error(int(tt.errno))
			})
			// A doit request: genltest cannot fake an error reply to a
			// dump (it echoes NLM_F_DUMP's bits, read back as ext-ack flags).
			_, err := c.Version()
			if !errors.Is(err, tt.is) {
				t.Fatalf("errors.Is(%v, %v) = false", err, tt.is)
			}
			if !errors.Is(err, tt.errno) {
				t.Fatalf("errors.Is(%v, %v) = false: errno lost", err, tt.errno)
			}
			var oe *OpError
			if !errors.As(err, &oe) || oe.Op != "get version" {
				t.Fatalf("error %v is not an OpError naming 'get version'", err)
			}
			if named := strings.Contains(err.Error(), "CAP_NET_ADMIN"); named != (tt.errno == unix.EPERM) {
				t.Errorf("%q: names CAP_NET_ADMIN %v, want it on EPERM only", err, named)
			}
			for _, other := range []error{os.ErrNotExist, os.ErrPermission, ErrResync} {
				if other != tt.is && errors.Is(err, other) {
					t.Errorf("errors.Is(%v, %v) = true, want false", err, other)
				}
			}
		})
	}
}

func TestMarkModeGet(t *testing.T) {
	ans := reply(qosCmdGetMark, []byte{
		0x05, 0x00, 0x03, 0x00, 0x02, 0x00, 0x00, 0x00, // MARK_MODE u8 2 (flow)
		0x08, 0x00, 0x04, 0x00, 0xff, 0xff, 0xff, 0x00, // MARK_MASK u32 0x00ffffff
		0x05, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, // MARK_SHIFT u8 0
	})
	c := testClient(t, patchedFamilies, expect(t, qosFamily, qosCmdGetMark, netlink.Request, nil, []genetlink.Message{ans}, nil))
	l, err := c.MarkLayout()
	if err != nil {
		t.Fatalf("MarkLayout: %v", err)
	}
	if diff := cmp.Diff(MarkLayout{Mode: MarkFlow, Mask: 0x00ffffff, Shift: 0}, l); diff != "" {
		t.Errorf("MarkLayout differs (-want +got):\n%s", diff)
	}
	if got := l.Value(0x80000011); got != 0x11 {
		t.Errorf("Value(0x80000011) = %#x, want 0x11 (bit 31 outside the field)", got)
	}
}

func TestMarkModeSet(t *testing.T) {
	for _, m := range []MarkMode{MarkOff, MarkQFI, MarkFlow, MarkPDR} {
		req := []byte{0x05, 0x00, 0x03, 0x00, byte(m), 0x00, 0x00, 0x00}
		c := testClient(t, patchedFamilies, expect(t, qosFamily, qosCmdSetMark, netlink.Request|netlink.Acknowledge, req, nil, nil))
		if err := c.SetMarkMode(m); err != nil {
			t.Fatalf("SetMarkMode(%v): %v", m, err)
		}
	}
	c := testClient(t, patchedFamilies, func(genetlink.Message, netlink.Message) ([]genetlink.Message, error) {
		t.Error("invalid mode reached the kernel")
		return nil, nil
	})
	if err := c.SetMarkMode(4); err == nil {
		t.Error("SetMarkMode(4) succeeded")
	}
}

func TestPolicer(t *testing.T) {
	ans := reply(qosCmdGetPolicer, []byte{0x05, 0x00, 0x06, 0x00, 0x01, 0x00, 0x00, 0x00})
	c := testClient(t, patchedFamilies, expect(t, qosFamily, qosCmdGetPolicer, netlink.Request, nil, []genetlink.Message{ans}, nil))
	on, err := c.Policer()
	if err != nil || !on {
		t.Fatalf("Policer = %v, %v; want true, nil", on, err)
	}
	for _, v := range []bool{false, true} {
		b := byte(0)
		if v {
			b = 1
		}
		req := []byte{0x05, 0x00, 0x06, 0x00, b, 0x00, 0x00, 0x00}
		c := testClient(t, patchedFamilies, expect(t, qosFamily, qosCmdSetPolicer, netlink.Request|netlink.Acknowledge, req, nil, nil))
		if err := c.SetPolicer(v); err != nil {
			t.Fatalf("SetPolicer(%v): %v", v, err)
		}
	}
}

// On a stock module (no gtp5g_qos family) the patch's calls fail with
// ErrNotSupported without sending anything.
func TestPatchCommandsOnStock(t *testing.T) {
	c := testClient(t, stockFamilies, func(greq genetlink.Message, _ netlink.Message) ([]genetlink.Message, error) {
		t.Errorf("request %d reached a stock module", greq.Header.Command)
		return nil, genltest.Error(int(unix.EOPNOTSUPP))
	})
	calls := map[string]func() error{
		"MarkMode":    func() error { _, err := c.MarkMode(); return err },
		"SetMarkMode": func() error { return c.SetMarkMode(MarkQFI) },
		"Policer":     func() error { _, err := c.Policer(); return err },
		"SetPolicer":  func() error { return c.SetPolicer(true) },
		"Subscribe":   func() error { _, err := c.Subscribe(context.Background()); return err },
	}
	for name, call := range calls {
		err := call()
		if !errors.Is(err, ErrNotSupported) || !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s on stock: %v; want ErrNotSupported and os.ErrNotExist", name, err)
		}
	}
}

// testSubscription returns a subscription whose socket is served by fn
// (genltest cannot join groups, so the join step is skipped).
func testSubscription(t *testing.T, ctx context.Context, fn genltest.Func) (*Client, *Subscription) {
	t.Helper()
	c := testClient(t, patchedFamilies, func(genetlink.Message, netlink.Message) ([]genetlink.Message, error) { return nil, nil })
	s, err := c.c.newSubscription(ctx, genltest.Dial(fn))
	if err != nil {
		t.Fatalf("newSubscription: %v", err)
	}
	return c, s
}

func TestSubscribeEvents(t *testing.T) {
	batches := [][]genetlink.Message{
		{qerEvent(t, 1, 41, kqer{id: 3, seid: 1, gbrDL: 15000, mbrDL: 18000, qfi: 2}, 5)},
		{
			pdrEvent(t, 2, 42, kpdr{id: 4, precedence: 128, seid: 1, farID: 4, qerIDs: []uint32{3}, ueAddr: "10.60.0.1", srcIntf: u8p(1)}, 2, 5),
			farEvent(t, 3, 43, kfar{id: 4, seid: 1, action: 2, fwd: true, ohc: true, desc: 0x100, teid: 100, peer: "10.100.0.2", port: 2152}),
			droppedEvent(t, 44, qosAttrFARID, 1, 5),
			droppedEvent(t, 45, qosAttrPDRID, 2, 6),
		},
	}
	i := 0
	_, s := testSubscription(t, context.Background(), func(greq genetlink.Message, nreq netlink.Message) ([]genetlink.Message, error) {
		if i >= len(batches) {
			return nil, errors.New("no more batches")
		}
		i++
		return batches[i-1], nil
	})
	var got []Event
	for range batches {
		evs, err := s.Receive()
		if err != nil {
			t.Fatalf("Receive: %v", err)
		}
		got = append(got, evs...)
	}
	core := InterfaceCore
	want := []Event{
		{Op: EventAdd, Seq: 41, Link: 7, Ifname: "upfgtp", QER: &QER{SEID: 1, ID: 3, GBR: Bitrate{Downlink: 15e6}, MBR: Bitrate{Downlink: 18e6}, QFI: 2, FlowMark: 5}},
		{Op: EventUpdate, Seq: 42, Link: 7, Ifname: "upfgtp", PDR: &PDR{SEID: 1, ID: 4, Precedence: 128, FARID: 4, QERIDs: []uint32{3}, QFI: 2, FlowMark: 5,
			PDI: PDI{SourceInterface: &core, UEAddr: netip.MustParseAddr("10.60.0.1")}}},
		{Op: EventDelete, Seq: 43, Link: 7, Ifname: "upfgtp", FAR: &FAR{SEID: 1, ID: 4, ApplyAction: ActionForw, Forwarding: &ForwardingParameters{
			OuterHeaderCreation: &OuterHeaderCreation{Description: 0x100, TEID: 100, Peer: netip.MustParseAddr("10.100.0.2"), Port: 2152}}}},
		{Op: EventDelete, Seq: 44, Link: 7, Ifname: "upfgtp", FAR: &FAR{SEID: 1, ID: 5}, IDsOnly: true},
		{Op: EventDelete, Seq: 45, Link: 7, Ifname: "upfgtp", PDR: &PDR{SEID: 2, ID: 6}, IDsOnly: true},
	}
	if diff := cmp.Diff(want, got, cmpAddr); diff != "" {
		t.Errorf("events differ (-want +got):\n%s", diff)
	}
}

// An overrun is reported once: the events after it skip the sequence
// numbers of those lost, and that is not a second loss.
func TestSubscribeENOBUFS(t *testing.T) {
	replies := []func() ([]genetlink.Message, error){
		func() ([]genetlink.Message, error) {
			return []genetlink.Message{qerEvent(t, 1, 10, kqer{id: 1}, 0)}, nil
		},
		func() ([]genetlink.Message, error) { return nil, os.NewSyscallError("recvmsg", unix.ENOBUFS) },
		func() ([]genetlink.Message, error) {
			return []genetlink.Message{qerEvent(t, 1, 50, kqer{id: 2}, 0)}, nil
		},
		func() ([]genetlink.Message, error) {
			return []genetlink.Message{qerEvent(t, 1, 52, kqer{id: 3}, 0)}, nil
		},
	}
	i := 0
	_, s := testSubscription(t, context.Background(), func(genetlink.Message, netlink.Message) ([]genetlink.Message, error) {
		i++
		return replies[i-1]()
	})
	if _, err := s.Receive(); err != nil {
		t.Fatalf("Receive before the overrun: %v", err)
	}
	if _, err := s.Receive(); !errors.Is(err, ErrResync) {
		t.Fatalf("Receive after overrun: %v; want ErrResync", err)
	}
	if evs, err := s.Receive(); err != nil || len(evs) != 1 || evs[0].Seq != 50 {
		t.Fatalf("Receive after the overrun was reported: %v, %v; want the event of seq 50 and no error", evs, err)
	}
	if _, err := s.Receive(); !errors.Is(err, ErrResync) {
		t.Fatalf("Receive after a later gap: %v; want ErrResync", err)
	}
}

func TestSubscribeSequenceGap(t *testing.T) {
	seqs := []uint32{0xffffffff, 0, 2} // wraps fine, then skips 1
	i := 0
	_, s := testSubscription(t, context.Background(), func(genetlink.Message, netlink.Message) ([]genetlink.Message, error) {
		m := qerEvent(t, 1, seqs[i], kqer{id: uint32(i + 1)}, 0)
		i++
		return []genetlink.Message{m}, nil
	})
	for k := 0; k < 2; k++ {
		if _, err := s.Receive(); err != nil {
			t.Fatalf("Receive %d: %v", k, err)
		}
	}
	evs, err := s.Receive()
	if !errors.Is(err, ErrResync) {
		t.Fatalf("Receive after a sequence gap: %v; want ErrResync", err)
	}
	if len(evs) != 1 || evs[0].Seq != 2 {
		t.Fatalf("events returned with the gap: %v; want the one with seq 2", evs)
	}
}

// TestCloseUnblocksReceive uses a real generic netlink socket joined to
// nlctrl's "notify" group (no root needed, and quiet): Receive blocks until
// the client, the subscription's context or the subscription is closed.
func TestCloseUnblocksReceive(t *testing.T) {
	ctrl, err := genetlink.Dial(nil)
	if err != nil {
		t.Skipf("no generic netlink here: %v", err)
	}
	nlctrl, err := ctrl.GetFamily("nlctrl")
	_ = ctrl.Close()
	if err != nil || len(nlctrl.Groups) == 0 {
		t.Skipf("cannot resolve nlctrl's notify group: %v", err)
	}
	qos := genetlink.Family{ID: nlctrl.ID, Name: qosFamilyName, Groups: []genetlink.MulticastGroup{{Name: qosGroup, ID: nlctrl.Groups[0].ID}}}

	closers := map[string]func(c *Client, s *Subscription, cancel context.CancelFunc){
		"client":       func(c *Client, _ *Subscription, _ context.CancelFunc) { _ = c.Close() },
		"subscription": func(_ *Client, s *Subscription, _ context.CancelFunc) { _ = s.Close() },
		"context":      func(_ *Client, _ *Subscription, cancel context.CancelFunc) { cancel() },
	}
	for name, closeFn := range closers {
		t.Run(name, func(t *testing.T) {
			conn, err := dialConn()
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			c := &Client{c: &client{c: conn, family: gtp5gFamily, qos: &qos, dial: dialConn, subs: map[*subscription]struct{}{}}}
			defer c.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s, err := c.Subscribe(ctx)
			if err != nil {
				t.Fatalf("Subscribe: %v", err)
			}
			done := make(chan error, 1)
			go func() { _, err := s.Receive(); done <- err }()
			select {
			case err := <-done:
				t.Fatalf("Receive returned before close: %v", err)
			case <-time.After(50 * time.Millisecond):
			}
			closeFn(c, s, cancel)
			select {
			case err := <-done:
				if !errors.Is(err, net.ErrClosed) {
					t.Errorf("Receive after close: %v; want net.ErrClosed", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Receive still blocked 5s after close")
			}
		})
	}
}

func TestSameNetNS(t *testing.T) {
	fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no /proc/thread-self/ns/net: %v", err)
	}
	defer unix.Close(fd)
	if !sameNetNS(fd) {
		t.Fatal("sameNetNS(own netns) = false")
	}
	ns := testenv.NewNetNS(t) // skips without root
	if sameNetNS(int(ns.Handle)) {
		t.Fatalf("sameNetNS(netns %s) = true from the test's netns", ns.Name)
	}
}

// One client used from several goroutines: each request gets its own
// reply (requests are serialised; a dump's reads are not interleaved).
func TestConcurrentRequests(t *testing.T) {
	qerMsgs := []genetlink.Message{reply(cmdGetQER, kqer{id: 1, seid: 1}.attrs(t)), reply(cmdGetQER, kqer{id: 2, seid: 1}.attrs(t))}
	ver := reply(cmdGetVersion, []byte{0x0b, 0x00, 0x00, 0x00, '0', '.', '1', '0', '.', '2', 0x00, 0x00})
	c := testClient(t, stockFamilies, func(greq genetlink.Message, nreq netlink.Message) ([]genetlink.Message, error) {
		switch {
		case nreq.Header.Type == 0:
			return nil, io.EOF // the read after a dump's data: DONE
		case greq.Header.Command == cmdGetQER:
			return qerMsgs, nil
		case greq.Header.Command == cmdGetVersion:
			return []genetlink.Message{ver}, nil
		}
		return nil, fmt.Errorf("unexpected command %d", greq.Header.Command)
	})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if q, err := c.QERs(); err != nil || len(q) != 2 {
					errs <- fmt.Errorf("QERs = %d, %v", len(q), err)
					return
				}
				if v, err := c.Version(); err != nil || v != "0.10.2" {
					errs <- fmt.Errorf("Version = %q, %v", v, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestAlive: the client finds its module alive while gtp5g's family is
// listed under the id it resolved, reloaded when the id differs, and gone
// (os.ErrNotExist) when it is not listed; only the controller is asked.
func TestAlive(t *testing.T) {
	fams := slices.Clone(patchedFamilies) // served as they are at each request
	c := testClient(t, fams, func(greq genetlink.Message, nreq netlink.Message) ([]genetlink.Message, error) {
		t.Errorf("Alive sent family %#x command %d; want the controller's family list only", uint16(nreq.Header.Type), greq.Header.Command)
		return nil, genltest.Error(int(unix.EINVAL))
	})
	if err := c.Alive(); err != nil {
		t.Fatalf("module loaded: %v", err)
	}
	fams[0].ID = testFamilyID + 7
	if err := c.Alive(); err == nil || !strings.Contains(err.Error(), "reloaded") || errors.Is(err, os.ErrNotExist) {
		t.Errorf("module reloaded: err %v, want one saying so", err)
	}
	fams[0].Name = "other"
	if err := c.Alive(); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("module unloaded: err %v, want os.ErrNotExist", err)
	}
}
