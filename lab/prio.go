package lab

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// datapathNice is the nice value of the lab's datapath threads (UPF, gNB,
// senders): on a busy machine, a starved stand-in would otherwise let the
// bottleneck queue run dry or deliver in bursts, and the lab would measure
// the scheduler instead of HTB.
const datapathNice = -10

// boostThread locks the calling goroutine to its OS thread and raises the
// thread's priority. The goroutine must never unlock: when it exits, the
// runtime discards the thread and the priority with it. Failure (no
// CAP_SYS_NICE) is ignored: the lab still works, just less steadily.
func boostThread() {
	runtime.LockOSThread()
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), datapathNice)
}
