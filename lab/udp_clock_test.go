package lab

import (
	"testing"
	"time"
)

// A kernel receive time moved onto the monotonic clock carries a monotonic
// reading and keeps its wall-clock distance from now, so comparing it with
// a run's start (time.Now() before the run) uses the monotonic clock, which
// a step of the wall clock during the run does not move.
func TestOnMonotonic(t *testing.T) {
	wall := time.Now().Round(0).Add(-3 * time.Millisecond) // a receive time: wall clock only
	at := onMonotonic(wall)
	if at == at.Round(0) {
		t.Fatalf("onMonotonic(%v) carries no monotonic reading", wall)
	}
	if d := time.Since(at); d < 3*time.Millisecond || d > time.Second {
		t.Errorf("moved time is %v before now; want about 3 ms", d)
	}
}
