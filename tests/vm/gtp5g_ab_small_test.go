package vm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The small-packet case on the real gtp5g datapath: 100-byte UDP payloads
// (128-byte IP packets, 186-byte N3 frames) at the rate scale TCG carries
// for them (each flow offered 30 × smallScale Mbit/s of payload, 750
// packets/s; the 1200-byte case runs at about 2,300 packets/s in total).
// The buckets are small (1 KiB) because at these rates 32 KiB would be
// seconds of a class's ceil, and the non-GBR minimum is scaled with the
// rest (1 Mbit/s would be more than the link).
const (
	smallScale   = 0.02
	smallPayload = 100
	smallOffer   = 30 * smallScale
	smallPolicy  = "  burst: 1k\n  cburst: 1k\n  non_gbr_min: 20kbit\n"
)

// smallCountOnlyYAML is the small case's "native policer on, no HTB" arm:
// the contracts at smallScale under classes that never shape (as
// testdata/ab-policer-count-only.yaml at abScale).
func smallCountOnlyYAML() string {
	return fmt.Sprintf(`link: 100mbit
policy:
  mode: static
  static_rate: 30mbit
  static_ceil: 30mbit
flows:
  - {name: A, seid: 1, qer: 1, qfi: 2, direction: downlink, gbr: %gmbit, mbr: %gmbit, mark: 2}
  - {name: B, seid: 1, qer: 2, qfi: 3, direction: downlink, gbr: %gmbit, mbr: %gmbit, mark: 3}
  - {name: C, seid: 1, qer: 3, qfi: 4, direction: downlink, gbr: 0, mbr: %gmbit, mark: 4}
`, 15*smallScale, 18*smallScale, 5*smallScale, 6*smallScale, 30*smallScale)
}

// TestGtp5gGuestABSmall runs 'gtpqos ab --dev n3 --payload 100' on the real
// gtp5g datapath in three arms: the aware tree counting the user's packets
// (packet accounting), the same tree counting N3 frames, and gtp5g's
// native policer alone. With 128-byte packets the seed's GBRs (A 15, B 5,
// C's minimum, scaled) fill the 186-byte-frame wire: with packet
// accounting A and B get their GBRs in user packets; counting frames, both
// miss them (a class then passes 128/186 of its rate); the native policer,
// which counts L4 payload, holds B's payload at its MBR and so lets its
// user packets exceed it by about 28/100.
func TestGtp5gGuestABSmall(t *testing.T) {
	requireGtp5gGuest(t)
	gtpqos, l := startGtp5gAB(t, smallScale)
	dir := t.TempDir()
	files := map[string]string{
		"aware":       armYAML("aware", smallScale, smallPolicy),
		"aware-frame": armYAML("aware", smallScale, smallPolicy+"  accounting: frame\n"),
		"count-only":  smallCountOnlyYAML(),
	}
	for name, body := range files {
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		files[name] = p
	}
	arms := []string{
		"policer-noHTB=" + files["count-only"] + ",policer=on",
		"aware-frame=" + files["aware-frame"] + ",policer=off",
		"aware=" + files["aware"] + ",policer=off",
	}
	// At 1 KiB buckets a class holds about 27 ms of tokens: a VM whose
	// CPU the loaded host takes away for longer loses them, and the tree
	// as a whole falls short of the link. Such a run is run once more,
	// saying why; if the second falls short too, its GBR floors are not
	// judged (it says so). A tree that fills the link is judged in full.
	for attempt := 1; ; attempt++ {
		got := l.abRun(t, gtpqos, smallPayload, smallOffer, arms)
		passed := 0.0
		for _, f := range got["aware"] {
			passed += f.IP
		}
		filled := passed >= 0.99*smallLink
		failures := smallChecks(t, got, filled || attempt == 1)
		if len(failures) == 0 {
			if !filled {
				t.Logf("attempt %d: the aware tree passed %.4f of the link's %.3f Mbit/s in all: the VM lacked CPU, so the GBR floors were not judged", attempt, passed, smallLink)
			}
			return
		}
		if attempt == 1 && !filled {
			t.Logf("attempt 1: the aware tree passed %.4f of the link's %.3f Mbit/s in all (the VM lost CPU time, not the tree's contract), so the run is repeated; it missed: %s",
				passed, smallLink, strings.Join(failures, "; "))
			continue
		}
		for _, f := range failures {
			t.Error(f)
		}
		return
	}
}

// smallLink is what the small case's link carries of user IP packets
// (Mbit/s): its rate is counted on the wire, where each 128-byte packet
// is a 186-byte N3 frame.
const smallLink = 30 * smallScale * 128 / 186

// smallChecks returns what the small case's arms got wrong; the GBR floors
// of packet accounting only with floors (a tree that filled the link).
func smallChecks(t *testing.T, got map[string]map[string]abFlow, floors bool) []string {
	t.Helper()
	var bad []string
	gbrA, mbrB := 15*smallScale, 6*smallScale
	for _, arm := range []string{"aware", "aware-frame", "policer-noHTB"} {
		a, b := got[arm]["A"], got[arm]["B"]
		t.Logf("%s: A %.4f Mbit/s of IP packets (%.4f payload), B %.4f (%.4f payload), C %.4f", arm, a.IP, a.Goodput, b.IP, b.Goodput, got[arm]["C"].IP)
	}
	gbrB := 5 * smallScale
	for _, f := range []struct {
		name string
		gbr  float64
	}{{"A", gbrA}, {"B", gbrB}} {
		if r := got["aware"][f.name].IP; floors && r < 0.97*f.gbr {
			bad = append(bad, fmt.Sprintf("aware, packet accounting: %s %.4f Mbit/s of IP packets, want at least its GBR %.3f (-3%%)", f.name, r, f.gbr))
		}
		if r := got["aware-frame"][f.name].IP; r >= 0.9*f.gbr {
			bad = append(bad, fmt.Sprintf("aware, frame accounting: %s %.4f Mbit/s of IP packets, want it short of its GBR %.3f (a class counting frames passes 128/186 of its rate)", f.name, r, f.gbr))
		}
	}
	if b := got["aware"]["B"].IP; b > 1.03*mbrB {
		bad = append(bad, fmt.Sprintf("aware, packet accounting: B %.4f Mbit/s of IP packets, above its MBR %.3f (+3%%)", b, mbrB))
	}
	if b := got["policer-noHTB"]["B"]; b.Goodput > 1.05*mbrB || b.IP < 1.15*mbrB {
		bad = append(bad, fmt.Sprintf("native policer: B %.4f Mbit/s of payload, %.4f of IP packets; want the payload at most its MBR %.3f (+5%%) and the IP packets above it by more than 15%%",
			b.Goodput, b.IP, mbrB))
	}
	return bad
}
