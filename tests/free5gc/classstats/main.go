// Command classstats prints a device's HTB class counters as `tc -s class
// show` does (class id, then a Sent line), framed by the monotonic clock
// read just before and just after the one netlink dump: a window between
// two readings is then known to a few milliseconds, where the start and
// exit of a tc process under an emulated guest blur it by tenths of a
// second. Usage: classstats -dev n3w
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

func main() {
	dev := flag.String("dev", "", "device whose classes to read")
	flag.Parse()
	if err := run(*dev); err != nil {
		fmt.Fprintln(os.Stderr, "classstats:", err)
		os.Exit(1)
	}
}

func now() (float64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, err
	}
	return float64(ts.Sec) + float64(ts.Nsec)/1e9, nil
}

func run(dev string) error {
	link, err := netlink.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("device %q: %w", dev, err)
	}
	before, err := now()
	if err != nil {
		return err
	}
	classes, err := netlink.ClassList(link, 0)
	if err != nil {
		return fmt.Errorf("classes of %s: %w", dev, err)
	}
	after, err := now()
	if err != nil {
		return err
	}
	fmt.Printf("MONO %.6f %.6f\n", before, after)
	for _, c := range classes {
		a := c.Attrs()
		if c.Type() != "htb" || a.Statistics == nil || a.Statistics.Basic == nil {
			continue
		}
		fmt.Printf("class htb %s parent %s\n Sent %d bytes %d pkt\n", netlink.HandleStr(a.Handle), netlink.HandleStr(a.Parent), a.Statistics.Basic.Bytes, a.Statistics.Basic.Packets)
	}
	return nil
}
