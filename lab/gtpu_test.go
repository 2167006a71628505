package lab

import (
	"bytes"
	"testing"
)

func TestPutGTPUHeaderMatchesGtp5g(t *testing.T) {
	b := make([]byte, GTPUHeaderLen)
	PutGTPUHeader(b, 0x01020304, 9, 1228)
	// flags 0x34 (v1, PT, E); T-PDU; length 1228+8; TEID; seq 0; N-PDU 0;
	// next ext 0x85; container length 1, PDU type 0, QFI 9, no next ext.
	want := []byte{0x34, 0xff, 0x04, 0xd4, 1, 2, 3, 4, 0, 0, 0, 0x85, 1, 0x00, 9, 0}
	if !bytes.Equal(b, want) {
		t.Fatalf("header = % x, want % x", b, want)
	}
}

func TestN3FrameFor1200BytePayload(t *testing.T) {
	// 1200 payload + 8 UDP + 20 IP inner, + GTP-U/UDP/IP/Ethernet outer.
	if got := 1200 + 8 + 20 + N3Overhead; got != 1286 {
		t.Fatalf("N3 frame for a 1200-byte UDP payload = %d bytes, want 1286", got)
	}
}

func TestParseGTPURoundTrip(t *testing.T) {
	inner := bytes.Repeat([]byte{0x45}, 100)
	pkt := make([]byte, GTPUHeaderLen+len(inner))
	PutGTPUHeader(pkt, 77, 63, len(inner))
	copy(pkt[GTPUHeaderLen:], inner)
	p, err := ParseGTPU(pkt)
	if err != nil {
		t.Fatal(err)
	}
	if p.TEID != 77 || !p.HasQFI || p.QFI != 63 || p.PDUType != 0 || !bytes.Equal(p.Inner, inner) {
		t.Fatalf("parsed %+v", p)
	}
}

func TestParseGTPURejects(t *testing.T) {
	good := make([]byte, GTPUHeaderLen+4)
	PutGTPUHeader(good, 1, 1, 4)
	for name, mut := range map[string]func([]byte) []byte{
		"short":        func(b []byte) []byte { return b[:7] },
		"version 2":    func(b []byte) []byte { b[0] = 0x54; return b },
		"echo request": func(b []byte) []byte { b[1] = 1; return b },
		"length":       func(b []byte) []byte { b[3] = 200; return b },
		"ext len 0":    func(b []byte) []byte { b[12] = 0; return b },
		"ext overrun":  func(b []byte) []byte { b[12] = 9; return b },
	} {
		b := mut(append([]byte(nil), good...))
		if _, err := ParseGTPU(b); err == nil {
			t.Errorf("%s: accepted % x", name, b)
		}
	}
}

func FuzzParseGTPU(f *testing.F) {
	b := make([]byte, GTPUHeaderLen+8)
	PutGTPUHeader(b, 1, 5, 8)
	f.Add(b)
	f.Add([]byte{0x30, 0xff, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseGTPU(b)
		if err == nil && len(p.Inner) > len(b) {
			t.Fatalf("inner longer than input")
		}
	})
}
