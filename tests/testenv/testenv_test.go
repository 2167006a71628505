package testenv

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netns"
)

func TestUniqueNameFitsInterfaceName(t *testing.T) {
	a, b := UniqueName("gqt-"), UniqueName("gqt-")
	if a == b {
		t.Fatalf("two calls gave the same name %q", a)
	}
	if len(a) > 15 || !strings.HasPrefix(a, "gqt-") {
		t.Fatalf("name %q: want prefix gqt- and at most 15 bytes", a)
	}
}

func TestNewNetNSIsolatedAndRemoved(t *testing.T) {
	var name string
	t.Run("inner", func(t *testing.T) {
		ns := NewNetNS(t)
		name = ns.Name
		ns.AddVethPair(t, "va", "vb")
		out := ns.Run(t, "ip", "-o", "link", "show")
		if !strings.Contains(out, "va@vb") {
			t.Fatalf("veth not in netns:\n%s", out)
		}
	})
	if name == "" {
		t.Skip("inner test skipped")
	}
	if list, _ := runOut("ip", "netns", "list"); strings.Contains(list, name) {
		t.Fatalf("netns %s still present after cleanup:\n%s", name, list)
	}
}

// TestNetNSRemovedOnInterrupt: a run stopped by SIGINT (Ctrl-C) removes the
// namespaces its tests made, though their clean-ups never run.
func TestNetNSRemovedOnInterrupt(t *testing.T) {
	RequireRoot(t)
	if os.Getenv("TESTENV_INTERRUPT_CHILD") == "1" {
		fmt.Println("NETNS", NewNetNS(t).Name)
		time.Sleep(time.Minute) // until the parent interrupts
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestNetNSRemovedOnInterrupt$", "-test.v")
	cmd.Env = append(os.Environ(), "TESTENV_INTERRUPT_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var name string
	for sc := bufio.NewScanner(out); sc.Scan(); {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "NETNS" {
			name = f[1]
			break
		}
	}
	if name == "" {
		t.Fatal("the child made no namespace")
	}
	defer func() { _ = netns.DeleteNamed(name) }() // should the handler fail
	if _, err := os.Stat("/run/netns/" + name); err != nil {
		t.Fatalf("the child's namespace is not there: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if _, err := os.Stat("/run/netns/" + name); !os.IsNotExist(err) {
		t.Errorf("namespace %s still there after SIGINT (stat: %v)", name, err)
	}
}
