package gtp5gtest

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/tests/testenv"
)

func TestDoRunsInsideTheNamespace(t *testing.T) {
	n := In("probe", testenv.NewNetNS(t))
	dev := testenv.UniqueName("gt")
	n.IP(t, "link", "add", dev, "type", "veth", "peer", "name", dev+"p")
	err := n.Do(func() error {
		_, err := net.InterfaceByName(dev)
		return err
	})
	if err != nil {
		t.Fatalf("link %s made in netns %s not seen by Do: %v", dev, n.NetNS.Name, err)
	}
	if _, err := net.InterfaceByName(dev); err == nil {
		t.Fatalf("link %s visible outside netns %s", dev, n.NetNS.Name)
	}
	want := errors.New("from f")
	if err := n.Do(func() error { return want }); err != want {
		t.Fatalf("Do returned %v, want f's error", err)
	}
	if out, err := n.TryIP("link", "show", "nosuchdev0"); err == nil || !strings.Contains(out, "nosuchdev0") {
		t.Fatalf("TryIP on a missing link: %v, %q; want an error naming it", err, out)
	}
}
