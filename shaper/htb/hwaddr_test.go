package htb

import "testing"

// lo's all-zero address and none are one device's address, whichever a
// netlink library reports: `--dev lo` is not a device in another namespace.
func TestSameHardwareAddr(t *testing.T) {
	for _, c := range []struct {
		a, b []byte
		want bool
	}{
		{make([]byte, 6), nil, true},
		{nil, make([]byte, 6), true},
		{[]byte{2, 0, 0, 0, 0, 1}, []byte{2, 0, 0, 0, 0, 1}, true},
		{[]byte{2, 0, 0, 0, 0, 1}, []byte{2, 0, 0, 0, 0, 2}, false},
		{[]byte{2, 0, 0, 0, 0, 1}, nil, false},
	} {
		if got := sameHardwareAddr(c.a, c.b); got != c.want {
			t.Errorf("sameHardwareAddr(%x, %x) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
