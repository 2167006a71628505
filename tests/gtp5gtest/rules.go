package gtp5gtest

import (
	"fmt"
	"net"
	"syscall"
	"testing"

	gtp5gnl "github.com/free5gc/go-gtp5gnl"
	"github.com/khirono/go-nl"
)

// Rules is a go-gtp5gnl client bound to one gtp5g device, the way go-upf's
// forwarder holds one.
type Rules struct {
	// Link is the device the rules go to.
	Link *gtp5gnl.Link
	// NS names the device's namespace in messages.
	NS string

	conn *nl.Conn
	mux  *nl.Mux
	id   int // generic netlink family ID of gtp5g
}

// Client returns a go-gtp5gnl client on the device's netlink socket for
// one request (for calls Rules has no helper for). Each call returns a new
// client: go-nl v1.0.4's Client hands a request its last reply before it
// marks itself done and closes the reply channel, so the next request on
// the same Client can have its fresh channel closed under it ("panic: send
// on closed channel", seen in the VM after a few thousand rules).
func (r *Rules) Client() *gtp5gnl.Client {
	return &gtp5gnl.Client{Client: nl.NewClient(r.conn, r.mux), ID: r.id}
}

// DialRules opens a go-gtp5gnl client inside the namespace for device dev.
// The client's sockets are closed when the test ends.
func (n NS) DialRules(tb testing.TB, dev string) *Rules {
	tb.Helper()
	var r *Rules
	err := n.Do(func() error {
		mux, err := nl.NewMux()
		if err != nil {
			return fmt.Errorf("netlink mux: %w", err)
		}
		go func() { _ = mux.Serve() }()
		tb.Cleanup(mux.Close)
		conn, err := nl.Open(syscall.NETLINK_GENERIC)
		if err != nil {
			return fmt.Errorf("open generic netlink: %w", err)
		}
		tb.Cleanup(conn.Close)
		c, err := gtp5gnl.NewClient(conn, mux)
		if err != nil {
			return fmt.Errorf("resolve family gtp5g: %w", err)
		}
		ifi, err := net.InterfaceByName(dev)
		if err != nil {
			return err
		}
		r = &Rules{Link: &gtp5gnl.Link{Name: dev, Index: ifi.Index}, NS: n.Name, conn: conn, mux: mux, id: c.ID}
		return nil
	})
	if err != nil {
		tb.Fatalf("netns %s: gtp5g client for %s: %v", n.Name, dev, err)
	}
	return r
}

// OID is go-upf's rule key: {SEID, id}, or {id} for SEID 0.
func OID(seid uint64, id int) gtp5gnl.OID {
	if seid == 0 {
		return gtp5gnl.OID{uint64(id)}
	}
	return gtp5gnl.OID{seid, uint64(id)}
}

// AddQER creates QER id of session seid.
func (r *Rules) AddQER(tb testing.TB, seid uint64, id int, q QER) {
	tb.Helper()
	r.must(tb, "add QER", seid, id, gtp5gnl.CreateQEROID(r.Client(), r.Link, OID(seid, id), q.Attrs()))
}

// UpdateQER replaces QER id of session seid.
func (r *Rules) UpdateQER(tb testing.TB, seid uint64, id int, q QER) {
	tb.Helper()
	r.must(tb, "update QER", seid, id, gtp5gnl.UpdateQEROID(r.Client(), r.Link, OID(seid, id), q.Attrs()))
}

// AddFAR creates FAR id of session seid with the given attributes (see
// FARForward).
func (r *Rules) AddFAR(tb testing.TB, seid uint64, id int, attrs []nl.Attr) {
	tb.Helper()
	r.must(tb, "add FAR", seid, id, gtp5gnl.CreateFAROID(r.Client(), r.Link, OID(seid, id), attrs))
}

// AddPDR creates PDR id of session seid.
func (r *Rules) AddPDR(tb testing.TB, seid uint64, id int, p PDR) {
	tb.Helper()
	r.must(tb, "add PDR", seid, id, gtp5gnl.CreatePDROID(r.Client(), r.Link, OID(seid, id), p.Attrs()))
}

// Remove deletes a PDR, FAR or QER (kind "pdr", "far" or "qer").
func (r *Rules) Remove(tb testing.TB, kind string, seid uint64, id int) {
	tb.Helper()
	var err error
	switch kind {
	case "pdr":
		err = gtp5gnl.RemovePDROID(r.Client(), r.Link, OID(seid, id))
	case "far":
		err = gtp5gnl.RemoveFAROID(r.Client(), r.Link, OID(seid, id))
	case "qer":
		err = gtp5gnl.RemoveQEROID(r.Client(), r.Link, OID(seid, id))
	default:
		tb.Fatalf("remove: unknown rule kind %q", kind)
	}
	r.must(tb, "remove "+kind, seid, id, err)
}

// must fails the test if a rule operation failed, naming the namespace,
// device and rule.
func (r *Rules) must(tb testing.TB, what string, seid uint64, id int, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("%s/%s: %s seid=%d id=%d: %v", r.NS, r.Link.Name, what, seid, id, err)
	}
}
