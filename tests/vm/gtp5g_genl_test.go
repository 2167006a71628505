package vm

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"testing"

	gtp5gnl "github.com/free5gc/go-gtp5gnl"
	"github.com/google/go-cmp/cmp"
	"github.com/khirono/go-nl"
	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/free5gc/gtpqos/tests/gtp5gtest"
	"github.com/free5gc/gtpqos/tests/testenv"
)

// What the generic netlink family "gtp5g" shows on the wire, recorded from
// a stock gtp5g v0.10.2 (tests/vm/testdata/gtp5g-v0.10.2-genl.json) and
// compared with the loaded module's by TestGtp5gSeriesStockFamily. This is
// observed behaviour, not gtp5g's code: the family's description from the
// genl controller, its policies, GET_VERSION's replies, and the dumps of a
// fixed rule set. Numbers the kernel assigns at run time (family and group
// ids) are left out.

const (
	// recordGenlEnv set to 1 (with a stock GTP5G_KO) makes
	// TestVMGtp5gSeries rewrite the recording.
	recordGenlEnv     = "GTPQOS_RECORD_GTP5G_GENL"
	genlRecordingFile = "gtp5g-v0.10.2-genl.json"
)

// genlRecording is the recorded view of the gtp5g family.
type genlRecording struct {
	Family struct {
		Name    string   `json:"name"`
		Version uint32   `json:"version"`
		HdrSize uint32   `json:"hdrsize"`
		MaxAttr uint32   `json:"maxattr"`
		Ops     []genlOp `json:"ops"`
		Groups  []string `json:"mcast_groups"`
	} `json:"family"`
	// Policy is CTRL_CMD_GETPOLICY's answer for the family: an error
	// ("errno N") or each message's attributes in hex, the family id left
	// out.
	Policy []string `json:"policy"`
	// Version holds GET_VERSION's reply to a request without attributes
	// and to one with attribute 1 as a flag (what clients probing for the
	// series' first revision send).
	Version map[string]genlReply `json:"get_version"`
	// Dumps are the GET_PDR/FAR/QER dump messages of the fixed rule set,
	// in hex, sorted.
	Dumps map[string][]string `json:"dumps"`
}

type genlOp struct {
	ID    uint32 `json:"id"`
	Flags uint32 `json:"flags"`
}

type genlReply struct {
	// CmdIsFamilyID: gtp5g puts the request's nlmsg_type (the family id)
	// where the genl command goes.
	CmdIsFamilyID bool   `json:"cmd_is_family_id"`
	GenlVersion   uint8  `json:"genl_version"`
	Payload       string `json:"payload"`
}

func (r genlRecording) marshal() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	return append(b, '\n'), err
}

func loadGenlRecording(path string) (genlRecording, error) {
	var r genlRecording
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(b, &r)
}

func diffGenlRecording(want, got genlRecording) string { return cmp.Diff(want, got) }

// genlObservation is the loaded module's view, and whether it has the
// series (then it must not be recorded).
type genlObservation struct {
	rec genlRecording
	qos bool
}

// recordGtp5gGenl reads the loaded module's gtp5g family as genlRecording
// records it.
func recordGtp5gGenl(t *testing.T) genlObservation {
	t.Helper()
	var obs genlObservation
	rec := &obs.rec
	c, err := genetlink.Dial(nil)
	if err != nil {
		t.Fatalf("generic netlink: %v", err)
	}
	defer c.Close()
	if _, err := c.GetFamily("gtp5g_qos"); err == nil {
		obs.qos = true
	}

	// The family, from CTRL_CMD_GETFAMILY.
	ae := netlink.NewAttributeEncoder()
	ae.String(unix.CTRL_ATTR_FAMILY_NAME, "gtp5g")
	req, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := c.Execute(genetlink.Message{Header: genetlink.Header{Command: unix.CTRL_CMD_GETFAMILY, Version: 1}, Data: req},
		unix.GENL_ID_CTRL, netlink.Request)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("CTRL_CMD_GETFAMILY gtp5g: %d messages, %v", len(msgs), err)
	}
	var famID uint16
	ad, err := netlink.NewAttributeDecoder(msgs[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	for ad.Next() {
		switch ad.Type() {
		case unix.CTRL_ATTR_FAMILY_ID:
			famID = ad.Uint16()
		case unix.CTRL_ATTR_FAMILY_NAME:
			rec.Family.Name = ad.String()
		case unix.CTRL_ATTR_VERSION:
			rec.Family.Version = ad.Uint32()
		case unix.CTRL_ATTR_HDRSIZE:
			rec.Family.HdrSize = ad.Uint32()
		case unix.CTRL_ATTR_MAXATTR:
			rec.Family.MaxAttr = ad.Uint32()
		case unix.CTRL_ATTR_OPS:
			ad.Nested(func(ops *netlink.AttributeDecoder) error {
				for ops.Next() {
					ops.Nested(func(op *netlink.AttributeDecoder) error {
						var o genlOp
						for op.Next() {
							switch op.Type() {
							case unix.CTRL_ATTR_OP_ID:
								o.ID = op.Uint32()
							case unix.CTRL_ATTR_OP_FLAGS:
								o.Flags = op.Uint32()
							}
						}
						rec.Family.Ops = append(rec.Family.Ops, o)
						return nil
					})
				}
				return nil
			})
		case unix.CTRL_ATTR_MCAST_GROUPS:
			ad.Nested(func(gs *netlink.AttributeDecoder) error {
				for gs.Next() {
					gs.Nested(func(g *netlink.AttributeDecoder) error {
						for g.Next() {
							if g.Type() == unix.CTRL_ATTR_MCAST_GRP_NAME {
								rec.Family.Groups = append(rec.Family.Groups, g.String())
							}
						}
						return nil
					})
				}
				return nil
			})
		}
	}
	if err := ad.Err(); err != nil {
		t.Fatalf("decode the gtp5g family: %v", err)
	}

	// Its policies, from CTRL_CMD_GETPOLICY (6.1 has it).
	msgs, err = c.Execute(genetlink.Message{Header: genetlink.Header{Command: unix.CTRL_CMD_GETPOLICY, Version: 1}, Data: req},
		unix.GENL_ID_CTRL, netlink.Request|netlink.Dump)
	var errno unix.Errno
	switch {
	case errors.As(err, &errno):
		rec.Policy = []string{fmt.Sprintf("errno %d", int(errno))}
	case err != nil:
		t.Fatalf("CTRL_CMD_GETPOLICY gtp5g: %v", err)
	default:
		for _, m := range msgs {
			rec.Policy = append(rec.Policy, hexWithout(t, m.Data, unix.CTRL_ATTR_FAMILY_ID))
		}
	}
	t.Logf("gtp5g family: version %d, maxattr %d, %d ops, groups %v, policy %v",
		rec.Family.Version, rec.Family.MaxAttr, len(rec.Family.Ops), rec.Family.Groups, rec.Policy)

	// GET_VERSION.
	rec.Version = map[string]genlReply{}
	for name, data := range map[string][]byte{"no attributes": nil, "attribute 1 as a flag": {4, 0, 1, 0}} {
		msgs, err := c.Execute(genetlink.Message{Header: genetlink.Header{Command: 16}, Data: data}, famID, netlink.Request)
		if err != nil || len(msgs) != 1 {
			t.Fatalf("GET_VERSION (%s): %d messages, %v", name, len(msgs), err)
		}
		rec.Version[name] = genlReply{CmdIsFamilyID: msgs[0].Header.Command == uint8(famID),
			GenlVersion: msgs[0].Header.Version, Payload: hex.EncodeToString(msgs[0].Data)}
	}

	// Dumps of a fixed rule set in a fresh namespace.
	ns := gtp5gtest.In("genl", testenv.NewNetNS(t))
	ns.AddLink(t, "gtpgenl", gtp5gtest.RoleUPF)
	r := ns.DialRules(t, "gtpgenl")
	r.AddQER(t, 1, 1, gtp5gtest.QER{QFI: 2, GBRKbps: 15000, MBRKbps: 18000})
	r.AddQER(t, 1, 2, gtp5gtest.QER{QFI: 9, MBRKbps: 100000})
	r.AddFAR(t, 1, 1, gtp5gtest.FARForward(100, "10.100.0.2"))
	r.AddFAR(t, 1, 2, gtp5gtest.FARForward(0, ""))
	r.AddPDR(t, 1, 1, gtp5gtest.PDR{Precedence: 32, SrcIntf: gtp5gtest.SrcCore, UEIP: "10.60.0.1", SDFSrc: "10.200.0.2", FARID: 1, QERIDs: []uint32{1, 2}})
	r.AddPDR(t, 1, 2, gtp5gtest.PDR{Precedence: 32, SrcIntf: gtp5gtest.SrcAccess, FTEID: 200, FTEIDAddr: "10.100.0.1", OHR: true, FARID: 2, QERIDs: []uint32{2}})
	routes := nl.AttrList{{Type: 1, Value: nl.AttrString("10.70.0.0/24")}}
	if err := gtp5gnl.CreatePDROID(r.Client(), r.Link, gtp5gtest.OID(1, 3), []nl.Attr{
		{Type: gtp5gnl.PDR_PRECEDENCE, Value: nl.AttrU32(64)},
		{Type: gtp5gnl.PDR_FAR_ID, Value: nl.AttrU32(1)},
		{Type: gtp5gnl.PDR_QER_ID, Value: nl.AttrU32(1)},
		{Type: gtp5gnl.PDR_PDI, Value: nl.AttrList{{Type: gtp5gtest.PDISrcIntf, Value: nl.AttrU8(1)}, {Type: pdiFramedRoute, Value: routes}}},
	}); err != nil {
		t.Fatalf("add the framed-route PDR: %v", err)
	}
	rec.Dumps = map[string][]string{}
	for name, cmd := range map[string]uint8{"pdr": 7, "far": 8, "qer": 9} {
		var msgs []genetlink.Message
		err := ns.Do(func() error {
			// A socket per dump: gtp5g's dumps lack NLM_F_MULTI, their
			// NLMSG_DONE comes in a read this one never makes.
			dc, err := genetlink.Dial(nil)
			if err != nil {
				return err
			}
			defer dc.Close()
			msgs, err = dc.Execute(genetlink.Message{Header: genetlink.Header{Command: cmd}}, famID, netlink.Request|netlink.Dump)
			return err
		})
		if err != nil {
			t.Fatalf("dump %s: %v", name, err)
		}
		for _, m := range msgs {
			rec.Dumps[name] = append(rec.Dumps[name], hex.EncodeToString(m.Data))
		}
		sort.Strings(rec.Dumps[name])
	}
	return obs
}

// hexWithout is b's attributes in hex, leaving out those of type skip.
func hexWithout(t *testing.T, b []byte, skip uint16) string {
	t.Helper()
	var out []byte
	for len(b) >= 4 {
		n := int(b[0]) | int(b[1])<<8
		typ := (uint16(b[2]) | uint16(b[3])<<8) & 0x3fff
		if n < 4 || n > len(b) {
			break
		}
		aligned := (n + 3) &^ 3
		if aligned > len(b) {
			aligned = len(b)
		}
		if typ != skip {
			out = append(out, b[:aligned]...)
		}
		b = b[aligned:]
	}
	return hex.EncodeToString(out)
}
