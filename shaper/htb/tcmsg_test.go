package htb

import (
	"bytes"
	"encoding/binary"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// payload strips the netlink header off a request: what remains has the
// layout of the kernel's messages (struct tcmsg, then attributes).
func payload(t *testing.T, req *nl.NetlinkRequest) []byte {
	t.Helper()
	b := req.Serialize()
	if int(binary.NativeEndian.Uint32(b)) != len(b) {
		t.Fatalf("nlmsg_len %d, message %d bytes", binary.NativeEndian.Uint32(b), len(b))
	}
	return b[unix.SizeofNlMsghdr:]
}

func TestSizeSpecBytes(t *testing.T) {
	s := sizeSpec{Overhead: -58, LinkLayer: linkLayerEthernet}
	b := s.serialize()
	// struct tc_sizespec: cell_log, size_log, cell_align (s16), overhead
	// (s32), linklayer, mpu, mtu, tsize (u32).
	want := make([]byte, 24)
	binary.NativeEndian.PutUint32(want[4:], uint32(0xffffffc6)) // -58
	binary.NativeEndian.PutUint32(want[8:], 1)
	if !bytes.Equal(b, want) {
		t.Errorf("tc_sizespec % x, want % x", b, want)
	}
	back, err := parseSizeSpec(b)
	if err != nil || back != s {
		t.Errorf("round trip %+v, %v", back, err)
	}
	if _, err := parseSizeSpec(b[:20]); err == nil {
		t.Error("short size table accepted")
	}
}

func TestRootRequests(t *testing.T) {
	add := rootAddReq(7, 2, &sizeSpec{Overhead: -58, LinkLayer: linkLayerEthernet})
	if add.Type != unix.RTM_NEWQDISC || add.Flags&(unix.NLM_F_CREATE|unix.NLM_F_REPLACE) != unix.NLM_F_CREATE|unix.NLM_F_REPLACE {
		t.Errorf("root add: type %d flags %#x", add.Type, add.Flags)
	}
	ri, err := parseRoot(payload(t, add))
	if err != nil || ri.kind != "htb" || ri.handle != rootHandle() || ri.ifindex != 7 || ri.defcls != 2 ||
		ri.stab == nil || ri.stab.Overhead != -58 || ri.stab.LinkLayer != 1 {
		t.Errorf("root add reads back as %+v (stab %+v), %v", ri, ri.stab, err)
	}
	// The in-place change carries the size table and no options (HTB has
	// no change operation for them); without a table it removes it.
	chg := payload(t, rootStabReq(7, &sizeSpec{Overhead: -14, LinkLayer: 1}))
	if ri, err := parseRoot(chg); err != nil || ri.stab == nil || ri.stab.Overhead != -14 || ri.defcls != 0 {
		t.Errorf("size table change reads back as %+v, %v", ri, err)
	}
	attrs, _ := nl.ParseRouteAttr(chg[nl.SizeofTcMsg:])
	for _, a := range attrs {
		if a.Attr.Type == nl.TCA_OPTIONS {
			t.Error("size table change carries TCA_OPTIONS")
		}
	}
	if ri, _ := parseRoot(payload(t, rootStabReq(7, nil))); ri.stab != nil {
		t.Error("size table removal carries a table")
	}
	if get := rootGetReq(7); get.Flags&unix.NLM_F_ECHO == 0 {
		t.Error("root get without NLM_F_ECHO: the kernel would not answer")
	}
}

func TestClassRequest(t *testing.T) {
	hc := &netlink.HtbClass{ClassAttrs: netlink.ClassAttrs{LinkIndex: 7, Handle: 0x67710001, Parent: rootHandle()},
		Rate: 30e6 / 8, Ceil: 30e6 / 8, Buffer: 100, Cbuffer: 200, Quantum: 12500, Prio: 3}
	req, err := classReq(unix.NLM_F_CREATE, hc, rateOverhead{58, 58})
	if err != nil {
		t.Fatal(err)
	}
	back, over, ok, err := parseClass(payload(t, req))
	if err != nil || !ok {
		t.Fatalf("parse: %v %v", ok, err)
	}
	if over != (rateOverhead{58, 58}) || back.Rate != hc.Rate || back.Ceil != hc.Ceil || back.Buffer != 100 || back.Cbuffer != 200 ||
		back.Quantum != 12500 || back.Prio != 3 || back.Handle != hc.Handle || back.Parent != hc.Parent || back.LinkIndex != 7 {
		t.Errorf("class reads back as %+v overhead %+v", back, over)
	}
	// Rates of 2^32 bytes/s and above go in the 64-bit attributes.
	hc.Rate, hc.Ceil = 5e9, 6e9
	req, _ = classReq(0, hc, rateOverhead{})
	if back, _, _, _ := parseClass(payload(t, req)); back.Rate != 5e9 || back.Ceil != 6e9 {
		t.Errorf("64-bit rates read back as %d/%d", back.Rate, back.Ceil)
	}
}

func TestAckError(t *testing.T) {
	msg := func(errno int32, flags uint16, tlv string) syscall.NetlinkMessage {
		b := make([]byte, 4+unix.SizeofNlMsghdr)
		binary.NativeEndian.PutUint32(b, uint32(errno))
		binary.NativeEndian.PutUint32(b[4:], 40) // the echoed header's length
		if tlv != "" {
			a := nl.NewRtAttr(unix.NLMSGERR_ATTR_MSG, nl.ZeroTerminated(tlv))
			b = append(b, a.Serialize()...)
		}
		return syscall.NetlinkMessage{Header: syscall.NlMsghdr{Type: unix.NLMSG_ERROR, Flags: flags}, Data: b}
	}
	if err := ackError(msg(0, 0, "")); err != nil {
		t.Errorf("ack: %v", err)
	}
	if err := ackError(msg(-int32(unix.EINVAL), 0, "")); err != syscall.EINVAL {
		t.Errorf("plain error: %v", err)
	}
	err := ackError(msg(-int32(unix.EINVAL), unix.NLM_F_ACK_TLVS|unix.NLM_F_CAPPED, "Change operation not supported by specified qdisc"))
	if err == nil || !strings.Contains(err.Error(), "invalid argument: Change operation not supported") {
		t.Errorf("extended error: %v", err)
	}
}
