package watch

import (
	"testing"
	"time"
)

// Failures in a row double the wait from Options.Retry up to maxBackoff; a
// success starts again at Retry; a Retry above maxBackoff is kept as is.
func TestNextBackoff(t *testing.T) {
	var got []time.Duration
	var last time.Duration
	for range 7 {
		last = nextBackoff(last, 2*time.Second)
		got = append(got, last)
	}
	want := []time.Duration{2, 4, 8, 16, 30, 30, 30}
	for i, w := range want {
		if got[i] != w*time.Second {
			t.Fatalf("waits %v, want %v seconds", got, want)
		}
	}
	if w := nextBackoff(0, 2*time.Second); w != 2*time.Second {
		t.Errorf("after a success: %v, want the base 2s", w)
	}
	if w := nextBackoff(time.Minute, time.Minute); w != time.Minute {
		t.Errorf("base 1m above the bound: %v, want 1m", w)
	}
}
