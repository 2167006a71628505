package watch

import (
	"strings"
	"testing"
)

func TestLockDeviceRefusesSecondInstance(t *testing.T) {
	dir := t.TempDir()
	l, err := LockDevice(dir, "n3x")
	if err != nil {
		t.Fatalf("first lock: %v", err)
	}
	_, err = LockDevice(dir, "n3x")
	if err == nil || !strings.Contains(err.Error(), "n3x") || !strings.Contains(err.Error(), "another gtpqos watch") {
		t.Fatalf("second lock on the same device: err = %v, want a refusal naming the device", err)
	}
	other, err := LockDevice(dir, "n6x")
	if err != nil {
		t.Fatalf("lock on another device: %v", err)
	}
	other.Unlock()
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	l2, err := LockDevice(dir, "n3x")
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	l2.Unlock()
}
