// Package gtpnl is a generic netlink client for free5GC's gtp5g kernel
// module: it reads the module's version and features, dumps its QERs, PDRs
// and FARs (decoded per gtp5g v0.10.2's attributes), and, with the gtpqos
// gtp5g-patch series, drives the mark mode and native policer and follows
// QoS rule changes as events.
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
// resolves the generic netlink family "gtp5g". If the module is not loaded,
// the error's text is "gtp5g module not loaded" and errors.Is(err,
// os.ErrNotExist) holds.
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
func (c *Client) Version() (string, error) {
	v, err := c.c.version()
	return v.version, err
}

// Features returns what the gtpqos gtp5g-patch series adds to the loaded
// module: none on a stock gtp5g.
func (c *Client) Features() (Features, error) {
	v, err := c.c.version()
	return v.features, err
}

// QERs dumps every QER of every gtp5g device in the client's netns.
func (c *Client) QERs() ([]QER, error) { return c.c.qers() }

// PDRs dumps every PDR of every gtp5g device in the client's netns.
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

// Subscribe joins gtp5g's QoS event group (gtp5g-patch) on a socket of its
// own and returns a subscription that yields add/update/delete events of
// QERs, PDRs and FARs. The subscription is closed when ctx is done, when
// its Close is called, or when the client is closed. On a stock module the
// error matches ErrNotSupported (and os.ErrNotExist).
func (c *Client) Subscribe(ctx context.Context) (*Subscription, error) {
	return c.c.subscribe(ctx)
}

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

// Close leaves the group and closes the subscription's socket, unblocking
// a pending Receive.
func (s *Subscription) Close() error { return s.s.close() }
