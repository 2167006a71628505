package testenv

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/vishvananda/netns"
)

// live are the namespaces NewNetNS made and has not removed yet. A run
// interrupted by SIGINT (Ctrl-C) or SIGTERM ends without the tests'
// clean-ups, so the first namespace installs a handler that removes them
// all before the signal ends the process; the veths, qdiscs and classes
// inside go with their namespace.
var live = struct {
	sync.Mutex
	names map[string]bool
	once  sync.Once
}{names: map[string]bool{}}

func track(name string) {
	live.once.Do(func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
		go removeOnSignal(ch)
	})
	live.Lock()
	live.names[name] = true
	live.Unlock()
}

func untrack(name string) {
	live.Lock()
	delete(live.names, name)
	live.Unlock()
}

// removeOnSignal removes every live namespace when a signal arrives, then
// lets the signal end the process as it would have.
func removeOnSignal(ch chan os.Signal) {
	sig := <-ch
	live.Lock()
	n := len(live.names)
	for name := range live.names {
		_ = netns.DeleteNamed(name)
	}
	live.Unlock()
	fmt.Fprintf(os.Stderr, "testenv: %v: removed %d test network namespace(s)\n", sig, n)
	signal.Reset(sig)
	_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
}
