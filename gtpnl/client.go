// Package gtpnl is a generic netlink client for free5GC's gtp5g kernel
// module: it reads the module's version, dumps its QERs, PDRs and FARs
// (decoded per gtp5g v0.10.2's attributes) from the "gtp5g" family, and,
// with the gtpqos gtp5g-patch series, uses that series' own family
// "gtp5g_qos" for the features, the QFI and flow mark of each rule, the
// mark mode and native policer, and QoS rule change events.
//
// The package never logs; errors name the operation and the object at
// fault, and map the kernel's errno to os.ErrNotExist, os.ErrPermission and
// ErrResync (see OpError).
package gtpnl

import "context"

// Client is a gtp5g generic netlink client. Its methods are safe for
// concurrent use.
type Client struct {
	c *client
}

// Dial opens a client in the network namespace of the calling thread and
// resolves the generic netlink families "gtp5g" and, if the module has the
// gtp5g-patch series, "gtp5g_qos". If the module is not loaded, the error's
// text is "gtp5g module not loaded" and errors.Is(err, os.ErrNotExist)
// holds.
func Dial() (*Client, error) {
	c, err := newClient()
	if err != nil {
		return nil, err
	}
	return &Client{c: c}, nil
}

// Close releases the client's socket and those of its subscriptions. A
// receive pending on any of them returns.
func (c *Client) Close() error { return c.c.Close() }

// Version returns gtp5g's version string (e.g. "0.10.2").
func (c *Client) Version() (string, error) { return c.c.version() }

// Features returns what the gtpqos gtp5g-patch series adds to the loaded
// module (its gtp5g_qos family's GET_FEATURES): none on a stock gtp5g.
func (c *Client) Features() (Features, error) { return c.c.features() }

// Families describes the generic netlink families the loaded module
// offers: gtp5g, and gtp5g_qos with its features when the gtp5g-patch
// series is applied.
func (c *Client) Families() ([]Family, error) { return c.c.families() }

// Alive checks that the module the client was made for is still loaded:
// gtp5g's family is listed under the id the client resolved. A module
// unloaded (the error matches os.ErrNotExist) or reloaded (its family has
// a new id, and the client's sockets and subscriptions speak to one that
// is gone) needs a new client. One request, no dump: families are listed,
// not looked up by name, so an unloaded module is not loaded again by the
// kernel's request_module.
func (c *Client) Alive() error { return c.c.alive() }

// QERs dumps every QER of every gtp5g device in the client's netns. With
// the gtp5g-patch series each carries its flow mark (a second dump, of
// gtp5g_qos, joined by SEID and id).
func (c *Client) QERs() ([]QER, error) { return c.c.qers() }

// PDRs dumps every PDR of every gtp5g device in the client's netns. With
// the gtp5g-patch series each carries its QFI and flow mark (a second
// dump, of gtp5g_qos, joined by SEID and id).
func (c *Client) PDRs() ([]PDR, error) { return c.c.pdrs() }

// FARs dumps every FAR of every gtp5g device in the client's netns.
func (c *Client) FARs() ([]FAR, error) { return c.c.fars() }

// MarkMode returns the flow-mark mode (gtp5g-patch). On a module without
// the feature the error matches ErrNotSupported.
func (c *Client) MarkMode() (MarkMode, error) {
	l, err := c.c.markLayout()
	return l.Mode, err
}

// MarkLayout returns the flow-mark mode with the mask and shift of the mark
// field (gtp5g-patch).
func (c *Client) MarkLayout() (MarkLayout, error) { return c.c.markLayout() }

// SetMarkMode switches the flow-mark mode (gtp5g-patch). Needs
// CAP_NET_ADMIN.
func (c *Client) SetMarkMode(m MarkMode) error { return c.c.setMarkMode(m) }

// Policer reports whether gtp5g's native MBR policer is on, over generic
// netlink (gtp5g-patch). Without the patch use package kmod's
// /proc/gtp5g/qos knob.
func (c *Client) Policer() (bool, error) { return c.c.policer() }

// SetPolicer switches gtp5g's native MBR policer over generic netlink
// (gtp5g-patch).
func (c *Client) SetPolicer(on bool) error { return c.c.setPolicer(on) }

// Subscribe joins the gtp5g_qos family's event group (gtp5g-patch) on a
// socket of its own and returns a subscription that yields
// add/update/delete events of QERs, PDRs and FARs. Joining needs
// CAP_NET_ADMIN over the netns (else the error matches os.ErrPermission).
// The subscription is closed when ctx is done, when its Close is called,
// or when the client is closed. On a module without the group (stock
// gtp5g, or a kernel too old to restrict the group) the error matches
// ErrNotSupported (and os.ErrNotExist).
func (c *Client) Subscribe(ctx context.Context) (*Subscription, error) {
	return c.c.subscribe(ctx)
}

// DefaultEventsBuffer is the receive buffer Subscribe asks for: 8 MiB,
// thousands of events (gtp5g's events take 0.5 to 2 KiB of it each).
const DefaultEventsBuffer = 8 << 20

// Subscription is a stream of QoS events from gtp5g.
type Subscription struct {
	s *subscription
}

// Receive blocks until gtp5g sends one or more events and returns them in
// order. If events were lost — the socket overflowed (ENOBUFS), or the
// sequence numbers skip (gtp5g dropped one) — the error matches ErrResync:
// dump the rules again, then keep receiving. On a skip the events received
// after the gap are returned with that error. After Close it returns an
// error matching net.ErrClosed.
func (s *Subscription) Receive() ([]Event, error) { return s.s.receive() }

// SetReadBuffer sets the subscription socket's receive buffer to n bytes
// (Subscribe asks for DefaultEventsBuffer; the kernel adds as much again
// for its bookkeeping). Events that arrive while the buffer is full are
// lost, and the next Receive says so with ErrResync. With CAP_NET_ADMIN
// the size is set as asked, else net.core.rmem_max caps it.
func (s *Subscription) SetReadBuffer(n int) error { return s.s.setReadBuffer(n) }

// Close leaves the group and closes the subscription's socket, unblocking
// a pending Receive.
func (s *Subscription) Close() error { return s.s.close() }
