package gtpnl

// SetSubscriptionReadBuffer shrinks a subscription's socket buffer so a
// test can provoke ENOBUFS on a real kernel.
func SetSubscriptionReadBuffer(s *Subscription, n int) error { return s.s.c.SetReadBuffer(n) }
