package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/tests/testenv"
)

const examples = "../../examples/"

// runIn runs the CLI with its netlink handle inside ns (nil: here).
func runIn(t *testing.T, ns *testenv.NetNS, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	rc := 0
	if ns == nil {
		rc = run(args, &out, &errb)
	} else {
		ns.Do(t, func() { rc = run(args, &out, &errb) })
	}
	return rc, out.String(), errb.String()
}

func TestPlanSeedFiles(t *testing.T) {
	rc, out, errs := runIn(t, nil, "plan", "-f", examples+"seed-aware.yaml", "--dev", "eth1")
	if rc != 0 {
		t.Fatalf("plan aware: rc %d, stderr %q", rc, errs)
	}
	for _, want := range []string{
		"# accounting packet: classes count the user's packets, 58 bytes less than the frame",
		"root handle 6771: stab overhead -58 linklayer ethernet htb default 2",
		"classid 6771:1 htb rate 30mbit ceil 30mbit overhead 58 burst 32k cburst 32k quantum 12500",
		"classid 6771:2 htb rate 1mbit ceil 30mbit",
		"parent 6771:1 classid 6771:10 htb rate 15mbit ceil 18mbit burst 32k cburst 32k quantum 12500",
		"parent 6771:1 classid 6771:11 htb rate 5mbit ceil 6mbit burst 32k cburst 32k quantum 12500",
		"parent 6771:1 classid 6771:12 htb rate 1mbit ceil 30mbit burst 32k cburst 32k quantum 12500",
		"handle 0x2/0xffffff fw flowid 6771:10", "handle 0x3/0xffffff fw flowid 6771:11", "handle 0x4/0xffffff fw flowid 6771:12",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan aware output lacks %q:\n%s", want, out)
		}
	}
	rc, out, _ = runIn(t, nil, "plan", "-f", examples+"seed-static.yaml")
	if rc != 0 || strings.Count(out, "htb rate 10mbit ceil 30mbit") != 3 {
		t.Errorf("plan static: rc %d, want three 10/30 classes:\n%s", rc, out)
	}
}

// badFiles are invalid inputs, each with what the one-line error must name.
var badFiles = []struct{ name, body, want string }{
	{"mbr-below-gbr", "link: 30mbit\nflows:\n  - {name: B, qer: 2, qfi: 3, gbr: 5mbit, mbr: 4mbit, mark: 3}\n", "flow B: mbr"},
	{"gbr-sum", "link: 30mbit\nflows:\n  - {name: A, qer: 1, gbr: 20mbit, mark: 2}\n  - {name: B, qer: 2, gbr: 20mbit, mark: 3}\n", "flow B (seid=0 qer=2): gbr"},
	{"qfi", "link: 30mbit\nflows:\n  - {name: C, qer: 3, qfi: 64, mark: 4}\n", "flow C: qfi"},
	{"unknown-key", "link: 30mbit\nflows:\n  - {name: A, qer: 1, gbr: 5mbit, colour: red}\n", `unknown key "colour"`},
	{"non-numeric", "link: 30mbit\nflows:\n  - {name: A, qer: 1, gbr: lots}\n", "flow A: gbr"},
	{"negative", "link: 30mbit\nflows:\n  - {name: A, qer: 1, mbr: -3mbit}\n", "flow A: mbr"},
}

func writeBad(t *testing.T) map[string]string {
	dir := t.TempDir()
	out := map[string]string{}
	for _, b := range badFiles {
		p := filepath.Join(dir, b.name+".yaml")
		if err := os.WriteFile(p, []byte(b.body), 0o644); err != nil {
			t.Fatal(err)
		}
		out[b.name] = p
	}
	return out
}

func oneLine(t *testing.T, what, stderr, want string) {
	t.Helper()
	if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, want) {
		t.Errorf("%s: stderr %q; want one line naming %q", what, stderr, want)
	}
}

func TestPlanBadInput(t *testing.T) {
	paths := writeBad(t)
	for _, b := range badFiles {
		rc, _, errs := runIn(t, nil, "plan", "-f", paths[b.name])
		if rc == 0 {
			t.Errorf("plan %s: rc 0, want failure", b.name)
		}
		oneLine(t, "plan "+b.name, errs, b.want)
	}
}

// A flow without a mark gets a class no mark classifier can reach: plan
// warns (exit 0), naming the flow and saying its GBR stays reserved.
func TestPlanWarnsUnreachableFlow(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nomark.yaml")
	body := "link: 30mbit\nflows:\n  - {name: A, qer: 1, gbr: 5mbit, mark: 2}\n  - {name: N, qer: 2, gbr: 3mbit}\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	rc, out, errs := runIn(t, nil, "plan", "-f", p)
	if rc != 0 {
		t.Fatalf("plan: rc %d, stderr %q", rc, errs)
	}
	want := "# problem: flow N (seid=0 qer=2): mark: no mark: classifier auto binds by mark and cannot steer its packets into class 6771:11"
	if !strings.Contains(out, want) || !strings.Contains(out, "GBR 3mbit stays reserved") || strings.Contains(out, "flow A (") {
		t.Errorf("plan output lacks the warning %q:\n%s", want, out)
	}
}

// Extra positional arguments used to be ignored: "apply -f a.yaml b.yaml"
// applied a.yaml alone. They are usage errors (exit 2, one line), found
// before any device is opened.
func TestExtraArgumentsAreUsageErrors(t *testing.T) {
	f := examples + "seed-aware.yaml"
	for _, args := range [][]string{
		{"apply", "-f", f, "--dev", "nosuchdev0", "examples/seed-static.yaml"},
		{"plan", "-f", f, "extra"},
		{"verify", "--dev", "nosuchdev0", "extra"},
	} {
		rc, _, errs := runIn(t, nil, args...)
		if rc != 2 {
			t.Errorf("%v: rc %d, want 2 (usage)", args, rc)
		}
		oneLine(t, strings.Join(args, " "), errs, "unexpected argument")
	}
}

var directPkts = regexp.MustCompile(`direct_packets_stat \d+ `)

func TestIntegrationCLI(t *testing.T) {
	testenv.RequireCmd(t, "ip", "tc")
	ns := testenv.NewNetNS(t)
	ns.AddVethPair(t, "gqc0", "gqd0")
	state := func() string {
		return directPkts.ReplaceAllString(ns.Run(t, "tc", "qdisc", "show", "dev", "gqc0")+
			ns.Run(t, "tc", "class", "show", "dev", "gqc0")+ns.Run(t, "tc", "filter", "show", "dev", "gqc0"), "")
	}
	pristine := state()

	rc, out, errs := runIn(t, ns, "apply", "-f", examples+"seed-aware.yaml", "--dev", "gqc0")
	if rc != 0 || !strings.Contains(out, "classes created 3") || !strings.Contains(out, "classifier ") {
		t.Fatalf("apply aware: rc %d\n%s%s", rc, out, errs)
	}
	if n := strings.Count(ns.Run(t, "tc", "class", "show", "dev", "gqc0"), "class htb 6771:"); n != 5 {
		t.Errorf("%d classes after apply, want 5 (link, default, A, B, C)", n)
	}
	rc, out, _ = runIn(t, ns, "apply", "-f", examples+"seed-aware.yaml", "--dev", "gqc0")
	if rc != 0 || !strings.Contains(out, "in sync") {
		t.Errorf("second apply: rc %d, want 'in sync':\n%s", rc, out)
	}

	// Invalid input: one line, non-zero, the tree untouched.
	applied := state()
	paths := writeBad(t)
	for _, b := range badFiles {
		rc, _, errs := runIn(t, ns, "apply", "-f", paths[b.name], "--dev", "gqc0")
		if rc == 0 {
			t.Errorf("apply %s: rc 0, want failure", b.name)
		}
		oneLine(t, "apply "+b.name, errs, b.want)
	}
	rc, _, errs = runIn(t, ns, "apply", "-f", examples+"seed-aware.yaml", "--dev", "nosuchdev0")
	if rc == 0 {
		t.Errorf("apply to a nonexistent device: rc 0")
	}
	oneLine(t, "nonexistent device", errs, "device nosuchdev0")
	rc, _, errs = runIn(t, ns, "apply", "-f", examples+"seed-aware.yaml")
	if rc != 2 {
		t.Errorf("apply without --dev: rc %d, want 2", rc)
	}
	oneLine(t, "missing device", errs, "--dev")
	if now := state(); now != applied {
		t.Errorf("invalid input changed the tree:\n%s\nwas:\n%s", now, applied)
	}

	rc, out, _ = runIn(t, ns, "apply", "-f", examples+"seed-static.yaml", "--dev", "gqc0")
	// The static arm counts frames (as the seed did): the link class and
	// the three flow classes change in place, and the root's size table.
	if rc != 0 || !strings.Contains(out, "changed 4") || !strings.Contains(out, "created 0") || !strings.Contains(out, "switched to frame in place") {
		t.Errorf("apply static: rc %d, want the link and 3 flow classes changed in place:\n%s", rc, out)
	}
	rc, out, _ = runIn(t, ns, "reset", "--dev", "gqc0")
	if rc != 0 || !strings.Contains(out, "removed") {
		t.Errorf("reset: rc %d: %s", rc, out)
	}
	if now := state(); now != pristine {
		t.Errorf("after reset:\n%s\nbefore apply:\n%s", now, pristine)
	}

	// A foreign root qdisc: refused without --force, replaced with it.
	ns.Run(t, "tc", "qdisc", "add", "dev", "gqc0", "root", "handle", "1:", "htb")
	foreign := state()
	rc, _, errs = runIn(t, ns, "apply", "-f", examples+"seed-aware.yaml", "--dev", "gqc0")
	if rc == 0 {
		t.Errorf("apply over a foreign root: rc 0")
	}
	oneLine(t, "foreign root", errs, "--force")
	if now := state(); now != foreign {
		t.Errorf("refused apply changed the foreign tree")
	}
	if rc, out, errs := runIn(t, ns, "apply", "-f", examples+"seed-aware.yaml", "--dev", "gqc0", "--force"); rc != 0 {
		t.Errorf("apply --force: rc %d\n%s%s", rc, out, errs)
	}
}

// TestIntegrationCLIAccounting: apply says which bytes the classes count
// and writes nothing the second time; switching the flows file to frame
// accounting and back changes the tree in place and says so.
func TestIntegrationCLIAccounting(t *testing.T) {
	testenv.RequireCmd(t, "ip", "tc")
	ns := testenv.NewNetNS(t)
	ns.AddVethPair(t, "gqe0", "gqf0")
	ns.Run(t, "ip", "addr", "add", "10.78.0.1/24", "dev", "gqe0")
	seed, err := os.ReadFile(examples + "seed-aware.yaml")
	if err != nil {
		t.Fatal(err)
	}
	frame := filepath.Join(t.TempDir(), "frame.yaml")
	body := strings.Replace(string(seed), "  mode: aware", "  mode: aware\n  accounting: frame", 1)
	if body == string(seed) {
		t.Fatal("seed-aware.yaml has no 'mode: aware' line to add accounting after")
	}
	if err := os.WriteFile(frame, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		file string
		want []string
	}{
		{examples + "seed-aware.yaml", []string{"classes created 3", "note: accounting packet: classes count the user's packets, 58 bytes less than the frame (N3: Ethernet 14 + IPv4 20 + UDP 8 + GTP-U 8 + optional fields 4 + PDU Session Container 4 = 58)"}},
		{examples + "seed-aware.yaml", []string{"in sync"}},
		{frame, []string{"note: accounting frame: every class counts whole frames", "note: accounting switched to frame in place: no size table, classes count whole frames (class counters kept)", "changed class 6771:1 (link): rate 30mbit ceil 30mbit"}},
		{frame, []string{"in sync"}},
		{examples + "seed-aware.yaml", []string{"note: accounting switched to packet in place: size table overhead -58 on the root, the link class adds 58 back (class counters kept)"}},
	}
	for i, s := range steps {
		rc, out, errs := runIn(t, ns, "apply", "-f", s.file, "--dev", "gqe0")
		if rc != 0 {
			t.Fatalf("step %d: rc %d\n%s%s", i, rc, out, errs)
		}
		for _, w := range s.want {
			if !strings.Contains(out, w) {
				t.Errorf("step %d (%s): output lacks %q:\n%s", i, filepath.Base(s.file), w, out)
			}
		}
	}
	if q := ns.Run(t, "tc", "-d", "qdisc", "show", "dev", "gqe0"); !strings.Contains(q, "overhead -58") {
		t.Errorf("size table after switching back:\n%s", q)
	}
}

// --direction keeps one direction's flows and plans them for a device of
// that direction (an uplink device's overhead is not a GTP-U frame's), in
// any case of the word; an unknown direction is a usage error.
func TestPlanDirection(t *testing.T) {
	p := filepath.Join(t.TempDir(), "both.yaml")
	body := "link: 30mbit\nflows:\n  - {name: D, qer: 1, gbr: 5mbit, mark: 2}\n  - {name: U, qer: 2, gbr: 3mbit, mark: 3, direction: uplink}\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := func(dir string) string {
		t.Helper()
		rc, out, errs := runIn(t, nil, "plan", "-f", p, "--direction", dir)
		if rc != 0 {
			t.Fatalf("plan --direction %s: rc %d, stderr %q", dir, rc, errs)
		}
		return out
	}
	up, down := plan("uplink"), plan("downlink")
	if !strings.Contains(up, "rate 3mbit") || strings.Contains(up, "rate 5mbit") {
		t.Errorf("--direction uplink: want U's class alone:\n%s", up)
	}
	if !strings.Contains(down, "rate 5mbit") || strings.Contains(down, "rate 3mbit") {
		t.Errorf("--direction downlink: want D's class alone:\n%s", down)
	}
	if acct := func(s string) string { return strings.SplitN(s, "\n", 3)[1] }; acct(up) == acct(down) {
		t.Errorf("uplink and downlink devices planned with the same accounting line %q", acct(up))
	}
	for _, alias := range []string{"UL", "Uplink", "ul"} {
		if got := plan(alias); got != up {
			t.Errorf("--direction %s differs from --direction uplink:\n%s\nwant:\n%s", alias, got, up)
		}
	}
	rc, out, errs := runIn(t, nil, "plan", "-f", p, "--direction", "sideways")
	if rc != 2 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "--direction") {
		t.Errorf("--direction sideways: rc %d, stdout %q, stderr %q; want exit 2 and one line naming the flag", rc, out, errs)
	}
}
