//go:build linux

package gtpnl

import "testing"

// FakeKernel is a gtp5g with the patch series behind netlink sockets of
// its own, for the production-path benchmark (see fake_kernel_test.go).
type FakeKernel struct{ k *fakeKernel }

// NewFakeKernel returns a fake gtp5g with no sessions.
func NewFakeKernel(tb testing.TB) FakeKernel { return FakeKernel{newFakeKernel(tb)} }

// Dial opens a gtpnl client on the fake, as Dial does on the kernel.
func (f FakeKernel) Dial() (*Client, error) { return f.k.client() }

// LoadSessions installs sessions 1..n (one downlink flow each, rates in
// kbit/s) without events.
func (f FakeKernel) LoadSessions(n int, gbr, mbr uint64) { f.k.loadSessions(n, gbr, mbr) }

// SetSession adds session seid (events: FAR, QER, PDR) or changes its
// QER's rates (one event), in kbit/s.
func (f FakeKernel) SetSession(seid, gbr, mbr uint64) { f.k.setSession(seid, gbr, mbr) }

// DeleteSession removes session seid's rules (three events).
func (f FakeKernel) DeleteSession(seid uint64) { f.k.deleteSession(seid) }
