// Command udpload sends UDP datagrams from one address to another at a
// fixed rate for a while: the load of the free5GC VM scenario, one process
// per flow. Usage: udpload -src 10.200.0.2 -dst 10.60.0.1:9000 -rate 5000000 -for 13s
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"time"
)

func main() {
	src := flag.String("src", "", "source IPv4 address")
	dst := flag.String("dst", "", "destination address:port")
	size := flag.Int("size", 1372, "UDP payload bytes (1400-byte IP packets)")
	rate := flag.Float64("rate", 1e6, "IP bit/s to offer")
	dur := flag.Duration("for", 10*time.Second, "how long to send")
	flag.Parse()
	if err := run(*src, *dst, *size, *rate, *dur); err != nil {
		fmt.Fprintln(os.Stderr, "udpload:", err)
		os.Exit(1)
	}
}

func run(src, dst string, size int, rate float64, dur time.Duration) error {
	la, err := net.ResolveUDPAddr("udp4", src+":0")
	if err != nil {
		return err
	}
	ra, err := net.ResolveUDPAddr("udp4", dst)
	if err != nil {
		return err
	}
	c, err := net.DialUDP("udp4", la, ra)
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, size)
	perPacket := float64((size + 28) * 8)
	start := time.Now()
	sent := 0.0
	for time.Since(start) < dur {
		due := rate * time.Since(start).Seconds() / perPacket
		for ; sent < due; sent++ {
			_, _ = c.Write(buf) // a full queue drops, as the datapath would
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}
