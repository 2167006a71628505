package shaper

import "errors"

// ErrNotOwned is returned (wrapped) when a device's root qdisc belongs to
// someone else and force is off: gtpqos changes nothing there.
var ErrNotOwned = errors.New("root qdisc not created by gtpqos")
