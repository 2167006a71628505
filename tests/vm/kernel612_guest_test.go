package vm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// fq's 6.7 attributes (include/uapi/linux/pkt_sched.h); iproute2 6.1 and
// x/sys lack them.
const (
	tcaFQPriomap = 16 // struct tc_prio_qopt: bands, prio -> band
	tcaFQWeights = 17 // s32 per band
	fqBands      = 3
)

// TestKernel612Guest is the guest side of TestVMKernel612: VM612_STEP
// "fq" adds fq with a priomap and weights at VM612_PARENT over netlink and
// reads them back; "tcx" attaches a counting program at VM612_DEV's
// egress with TCX and sends packets to VM612_PEER through it.
func TestKernel612Guest(t *testing.T) {
	if os.Getenv("GTPQOS_IN_VM") != "1" || os.Getenv(kernel612GuestEnv) != "1" {
		t.Skip("runs inside the VM only (started by TestVMKernel612)")
	}
	dev, err := netlink.LinkByName(os.Getenv("VM612_DEV"))
	if err != nil {
		t.Fatalf("VM612_DEV: %v", err)
	}
	switch step := os.Getenv("VM612_STEP"); step {
	case "fq":
		t.Run("fq", func(t *testing.T) { checkFQWeights(t, dev.Attrs().Index) })
	case "tcx":
		t.Run("tcx", func(t *testing.T) { checkTCX(t, dev.Attrs().Index, os.Getenv("VM612_PEER")) })
	default:
		t.Fatalf("VM612_STEP=%q: want fq or tcx", step)
	}
}

func checkFQWeights(t *testing.T, ifindex int) {
	parent, err := parseTCHandle(os.Getenv("VM612_PARENT"))
	if err != nil {
		t.Fatal(err)
	}
	handle, err := parseTCHandle(os.Getenv("VM612_HANDLE"))
	if err != nil {
		t.Fatal(err)
	}
	// Every priority to band 1 but TC_PRIO_INTERACTIVE (6) to band 0;
	// weights 3:2:1 in units of fq's minimum.
	priomap := make([]byte, 4+16)
	binary.NativeEndian.PutUint32(priomap, fqBands)
	for i := 4; i < len(priomap); i++ {
		priomap[i] = 1
	}
	priomap[4+6] = 0
	weights := make([]byte, 4*fqBands)
	for i, w := range []uint32{3 * 16384, 2 * 16384, 16384} {
		binary.NativeEndian.PutUint32(weights[4*i:], w)
	}

	req := nl.NewNetlinkRequest(unix.RTM_NEWQDISC, unix.NLM_F_CREATE|unix.NLM_F_EXCL|unix.NLM_F_ACK)
	req.AddData(&nl.TcMsg{Family: unix.AF_UNSPEC, Ifindex: int32(ifindex), Handle: handle, Parent: parent})
	req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("fq")))
	opts := nl.NewRtAttr(nl.TCA_OPTIONS, nil)
	opts.AddRtAttr(tcaFQPriomap, priomap)
	opts.AddRtAttr(tcaFQWeights, weights)
	req.AddData(opts)
	if _, err := req.Execute(unix.NETLINK_ROUTE, 0); err != nil {
		t.Fatalf("add fq with priomap and weights at %s: %v", os.Getenv("VM612_PARENT"), err)
	}

	got, err := fqOptions(ifindex, handle)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[tcaFQWeights], weights) {
		t.Errorf("fq %s: dumped weights %x, want %x", os.Getenv("VM612_HANDLE"), got[tcaFQWeights], weights)
	}
	if !bytes.Equal(got[tcaFQPriomap], priomap) {
		t.Errorf("fq %s: dumped priomap %x, want %x", os.Getenv("VM612_HANDLE"), got[tcaFQPriomap], priomap)
	}
}

// fqOptions dumps the device's qdiscs and returns the TCA_OPTIONS
// attributes of the fq whose handle is handle.
func fqOptions(ifindex int, handle uint32) (map[uint16][]byte, error) {
	req := nl.NewNetlinkRequest(unix.RTM_GETQDISC, unix.NLM_F_DUMP)
	req.AddData(&nl.TcMsg{Family: unix.AF_UNSPEC, Ifindex: int32(ifindex)})
	msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWQDISC)
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		msg := nl.DeserializeTcMsg(m)
		if int(msg.Ifindex) != ifindex || msg.Handle != handle {
			continue
		}
		attrs, err := nl.ParseRouteAttr(m[nl.SizeofTcMsg:])
		if err != nil {
			return nil, err
		}
		var kind string
		var opts []byte
		for _, a := range attrs {
			switch a.Attr.Type {
			case nl.TCA_KIND:
				kind = strings.TrimRight(string(a.Value), "\x00")
			case nl.TCA_OPTIONS:
				opts = a.Value
			}
		}
		if kind != "fq" {
			return nil, errors.New("qdisc " + strconv.FormatUint(uint64(handle>>16), 16) + ": is " + kind + ", not fq")
		}
		inner, err := nl.ParseRouteAttr(opts)
		if err != nil {
			return nil, err
		}
		out := map[uint16][]byte{}
		for _, a := range inner {
			out[a.Attr.Type] = a.Value
		}
		return out, nil
	}
	return nil, errors.New("no fq qdisc with handle " + strconv.FormatUint(uint64(handle>>16), 16) + ": in the dump")
}

// parseTCHandle reads "root", "1:" or "1:10" (hex, as tc writes them).
func parseTCHandle(s string) (uint32, error) {
	if s == "root" {
		return netlink.HANDLE_ROOT, nil
	}
	maj, min, ok := strings.Cut(s, ":")
	if !ok {
		return 0, errors.New("tc handle " + strconv.Quote(s) + ": want major:minor")
	}
	a, err := strconv.ParseUint(maj, 16, 16)
	if err != nil {
		return 0, errors.New("tc handle " + strconv.Quote(s) + ": " + err.Error())
	}
	var b uint64
	if min != "" {
		if b, err = strconv.ParseUint(min, 16, 16); err != nil {
			return 0, errors.New("tc handle " + strconv.Quote(s) + ": " + err.Error())
		}
	}
	return netlink.MakeHandle(uint16(a), uint16(b)), nil
}

// checkTCX attaches, with TCX, a program that counts packets in an array
// map and passes them on (TCX_NEXT), at the device's egress, sends UDP
// datagrams to peer and expects the count to cover them.
func checkTCX(t *testing.T, ifindex int, peer string) {
	counter, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		t.Fatalf("counter map: %v", err)
	}
	defer counter.Close()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.SchedCLS,
		License: "GPL",
		Instructions: asm.Instructions{
			asm.StoreImm(asm.RFP, -4, 0, asm.Word),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, -4),
			asm.LoadMapPtr(asm.R1, counter.FD()),
			asm.FnMapLookupElem.Call(),
			asm.JEq.Imm(asm.R0, 0, "out"),
			asm.Mov.Imm(asm.R1, 1),
			asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R0, -1).WithSymbol("out"), // TCX_NEXT
			asm.Return(),
		},
	})
	if err != nil {
		t.Fatalf("load tc program: %v", err)
	}
	defer prog.Close()
	l, err := link.AttachTCX(link.TCXOptions{Interface: ifindex, Program: prog, Attach: ebpf.AttachTCXEgress})
	if err != nil {
		t.Fatalf("TCX attach at egress: %v", err)
	}
	defer l.Close()
	info, err := l.Info()
	if err != nil {
		t.Fatalf("TCX link info: %v", err)
	}
	if info.Type != link.TCXType {
		t.Errorf("link type %v, want TCX", info.Type)
	}

	// Unconnected, so that the peer's port unreachable replies do not
	// fail the later writes.
	conn, err := net.ListenPacket("udp4", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	dst := &net.UDPAddr{IP: net.ParseIP(peer), Port: 9}
	const n = 20
	for i := 0; i < n; i++ {
		if _, err := conn.WriteTo([]byte("tcx"), dst); err != nil {
			t.Fatal(err)
		}
	}
	var count uint64
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if err := counter.Lookup(uint32(0), &count); err != nil {
			t.Fatal(err)
		}
		if count >= n {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if count < n {
		t.Errorf("TCX egress program counted %d packets, want >= the %d datagrams sent", count, n)
	}
	t.Logf("TCX egress program counted %d packets for %d datagrams", count, n)
}
