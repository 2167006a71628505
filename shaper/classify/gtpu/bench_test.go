package gtpu

import (
	"fmt"
	"testing"
	"time"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/classify"
)

// BenchmarkClassify measures the per-packet cost of gtpu_egress with 10 and
// 10,000 flows in the map, by BPF_PROG_TEST_RUN with Repeat (the kernel
// times the loop; the syscall is amortised). The packet hits the last key
// inserted; the cost must not grow with the number of flows (hash map).
//
//	go test -run '^$' -bench Classify -benchtime 20x ./shaper/classify/gtpu/
func BenchmarkClassify(b *testing.B) {
	for _, n := range []int{10, 10000} {
		for _, tc := range []struct {
			name string
			p    func(teid uint32) pkt
		}{
			{"hit", func(teid uint32) pkt { return pkt{teid: teid, exts: []extHdr{pdu(5)}} }},
			{"hit-after-ext", func(teid uint32) pkt {
				return pkt{teid: teid, s: true, exts: []extHdr{{typ: 0x40, content: []byte{0, 1}}, pdu(5)}}
			}},
			{"miss", func(uint32) pkt { return pkt{teid: 1 << 30, exts: []extHdr{pdu(5)}} }},
		} {
			b.Run(fmt.Sprintf("flows=%d/%s", n, tc.name), func(b *testing.B) {
				o := loadForTest(b)
				want := make(map[Key]uint32, n)
				for i := 0; i < n; i++ {
					want[Key{TEID: uint32(i + 1), QFI: 5}] = 0x10000 | uint32(i%60000+2)
				}
				if _, err := o.SyncDownlink(want); err != nil {
					b.Fatal(err)
				}
				if err := o.SetDefaultClass(classDefault); err != nil {
					b.Fatal(err)
				}
				data := tc.p(uint32(n)).build()
				const repeat = 100000
				var total time.Duration
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					verdict, d := runTimed(b, o, data, repeat)
					if verdict != actOK {
						b.Fatalf("verdict %#x, want TC_ACT_OK", verdict)
					}
					total += d
				}
				b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/pkt")
			})
		}
	}
}

// runTimed runs gtpu_egress repeat times in the kernel and returns the
// verdict and the kernel's mean time per run.
func runTimed(tb testing.TB, o *Objects, data []byte, repeat int) (uint32, time.Duration) {
	tb.Helper()
	ret, d, err := o.DownlinkProgram().Benchmark(data, repeat, nil)
	if err != nil {
		tb.Skipf("kernel refuses BPF_PROG_TEST_RUN: %v", err)
	}
	return ret, d
}

// BenchmarkSyncOneChange measures one Sync that changes a single key of a
// 10,000-entry downlink map: the diff is computed in user space and only
// that key is written, so the cost is one map update plus the diff.
//
//	go test -run '^$' -bench SyncOneChange ./shaper/classify/gtpu/
func BenchmarkSyncOneChange(b *testing.B) {
	o := loadForTest(b)
	want := make(map[Key]uint32, 10000)
	for i := 0; i < 10000; i++ {
		want[Key{TEID: uint32(i + 1), QFI: 5}] = 0x10010
	}
	if _, err := o.SyncDownlink(want); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		want[Key{TEID: 1, QFI: 5}] = 0x10000 | uint32(i%2+0x11)
		res, err := o.SyncDownlink(want)
		if err != nil {
			b.Fatal(err)
		}
		if res.Writes() != 1 {
			b.Fatalf("sync wrote %d keys, want 1", res.Writes())
		}
	}
}

// BenchmarkClassifySDF measures gtpu_egress when the TEID has SDF rules
// and the inner packet matches the first rule or only the last of
// shaper.MaxSDFRules (each earlier rule asks for another source port).
//
//	go test -run '^$' -bench ClassifySDF -benchtime 20x ./shaper/classify/gtpu/
func BenchmarkClassifySDF(b *testing.B) {
	for _, at := range []int{1, shaper.MaxSDFRules} {
		b.Run(fmt.Sprintf("match-rule-%d", at), func(b *testing.B) {
			o := loadForTest(b)
			var rs []shaper.SDFRule
			for i := 1; i < at; i++ {
				rs = append(rs, shaper.SDFRule{Flow: flowC, Proto: 17, UE: ue1, SrcPorts: []shaper.PortRange{{Lo: uint16(i), Hi: uint16(i)}}})
			}
			rs = append(rs, shaper.SDFRule{Flow: flowA, Proto: 17, Src: dn, SrcMask: full, UE: ue1, DstPorts: []shaper.PortRange{{Lo: 5001, Hi: 5001}}})
			want, _ := compileRules([]shaper.SessionRules{{Direction: shaper.Downlink, TEID: 100, SEID: 1, Rules: rs}}, shaper.Downlink,
				map[shaper.FlowID]classify.Entry{flowA: {ClassID: classA}, flowC: {ClassID: classC}}, func(e classify.Entry) uint32 { return e.ClassID })
			if _, err := o.dlr.sync(want); err != nil {
				b.Fatal(err)
			}
			data := gtp(100, 1, innerV4(17, dn, ue1, 4000, 5001)).build()
			var total time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				verdict, d := runTimed(b, o, data, 100000)
				if verdict != actOK {
					b.Fatalf("verdict %#x, want TC_ACT_OK", verdict)
				}
				total += d
			}
			b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/pkt")
		})
	}
}
