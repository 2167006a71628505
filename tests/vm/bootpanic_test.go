package vm

import (
	"strings"
	"testing"
)

// A kernel panic whose report lists no module is the kernel's own boot
// (the guest is booted again); one that lists a module is not, nor is a
// console without a panic.
func TestBootPanic(t *testing.T) {
	boot := "[    1.747038] Call Trace:\n[    1.747038]  __mod_timer+0x26c/0x360\n[    1.747038] Modules linked in:\n" +
		"[    1.747038] ---[ end trace 0000000000000000 ]---\n[    1.747038] Kernel panic - not syncing: Fatal exception in interrupt\n"
	ours := strings.Replace(boot, "Modules linked in:", "Modules linked in: gtp5g(O) sch_fq", 1)
	for console, want := range map[string]bool{
		boot:                                    true,
		ours:                                    false,
		"[    1.0] Run /init as init process\n": false,
		"Kernel panic - not syncing: VFS: Unable to mount root fs\n": false, // no oops report: not the case seen
	} {
		if got := bootPanic(console); got != want {
			t.Errorf("bootPanic(%q) = %v, want %v", console, got, want)
		}
	}
}
