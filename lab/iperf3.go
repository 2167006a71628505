package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// iperf3Report is the part of iperf3's --json output the lab reads.
type iperf3Report struct {
	Intervals []struct {
		Sum struct {
			Start         float64 `json:"start"`
			Bytes         uint64  `json:"bytes"`
			BitsPerSecond float64 `json:"bits_per_second"`
			LostPackets   int64   `json:"lost_packets"`
			Packets       uint64  `json:"packets"`
		} `json:"sum"`
	} `json:"intervals"`
	End struct {
		Sum struct {
			Packets     uint64 `json:"packets"`
			LostPackets uint64 `json:"lost_packets"`
		} `json:"sum"`
		SumSent struct {
			Retransmits uint64 `json:"retransmits"`
		} `json:"sum_sent"`
	} `json:"end"`
	Error string `json:"error"`
}

// startIn starts cmd on a thread inside ns, so the process lives there.
func startIn(ns *namespace, cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return inNS(ns.handle, cmd.Start)
}

// killGroup ends a started command and its process group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// runIperf3 runs one iperf3 server per flow in dn (bound to the DN
// endpoint) and a reverse-mode client in ue (bound to the UE address),
// like the seed's commands.
func (l *Lab) runIperf3(ctx context.Context, spec TrafficSpec) ([]FlowTraffic, error) {
	bin, err := exec.LookPath("iperf3")
	if err != nil {
		return nil, fmt.Errorf("traffic iperf3: %w (install it: make deps)", err)
	}
	n := len(l.pdrs)
	nsec := seconds(spec.Duration)
	var servers []*exec.Cmd
	defer func() {
		for _, s := range servers {
			killGroup(s)
			_ = s.Wait()
		}
	}()
	for _, p := range l.pdrs {
		s := exec.Command(bin, "-s", "-1", "-B", p.DN.Addr().String(), "-p", strconv.Itoa(int(p.DN.Port())))
		if err := startIn(l.topo.dn, s); err != nil {
			return nil, fmt.Errorf("flow %s: start iperf3 server on %v: %w", p.Name, p.DN, err)
		}
		servers = append(servers, s)
	}
	time.Sleep(500 * time.Millisecond) // let the servers listen
	out := make([]FlowTraffic, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, p := range l.pdrs {
		args := []string{"-c", p.DN.Addr().String(), "-p", strconv.Itoa(int(p.DN.Port())), "-R",
			"-t", strconv.Itoa(nsec), "-i", "1", "-B", p.UE.String(), "--json"}
		if !spec.TCP {
			args = append(args, "-u", "-l", strconv.Itoa(spec.Payload),
				"-b", strconv.FormatFloat(l.offered(i, spec), 'f', 0, 64))
		} else if r := l.offered(i, spec); r > 0 {
			args = append(args, "-b", strconv.FormatFloat(r, 'f', 0, 64))
		}
		var stdout, stderr bytes.Buffer
		c := exec.Command(bin, args...)
		c.Stdout, c.Stderr = &stdout, &stderr
		if err := startIn(l.topo.ue, c); err != nil {
			return nil, fmt.Errorf("flow %s: start iperf3 client: %w", p.Name, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chan error, 1)
			go func() { done <- c.Wait() }()
			var werr error
			select {
			case werr = <-done:
			case <-ctx.Done():
				killGroup(c)
				<-done
				errs[i] = ctx.Err()
				return
			}
			out[i], errs[i] = parseIperf3(p.Name, stdout.Bytes(), nsec, spec.TCP)
			if errs[i] == nil && werr != nil {
				errs[i] = fmt.Errorf("flow %s: iperf3 client: %w: %s", p.Name, werr, bytes.TrimSpace(stderr.Bytes()))
			}
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// parseIperf3 turns a client's --json report into a FlowTraffic.
func parseIperf3(name string, js []byte, nsec int, tcp bool) (FlowTraffic, error) {
	ft := FlowTraffic{Name: name, Intervals: newIntervals(nsec)}
	var r iperf3Report
	if err := json.Unmarshal(js, &r); err != nil {
		return ft, fmt.Errorf("flow %s: iperf3 json: %w", name, err)
	}
	if r.Error != "" {
		return ft, fmt.Errorf("flow %s: iperf3: %s", name, r.Error)
	}
	for _, iv := range r.Intervals {
		s := int(iv.Sum.Start + 0.5)
		if s < 0 || s >= nsec {
			continue
		}
		ft.Intervals[s].Bytes = iv.Sum.Bytes
		ft.Intervals[s].Lost = iv.Sum.LostPackets
		if tcp {
			ft.Intervals[s].Lost = -1
		}
	}
	finishIntervals(ft.Intervals)
	for _, iv := range r.Intervals {
		if s := int(iv.Sum.Start + 0.5); s >= 0 && s < nsec {
			ft.Intervals[s].Mbps = iv.Sum.BitsPerSecond / 1e6
		}
	}
	if !tcp {
		ft.Received = r.End.Sum.Packets - r.End.Sum.LostPackets
		ft.Sent = r.End.Sum.Packets
	} else {
		ft.Retransmits = r.End.SumSent.Retransmits
	}
	return ft, nil
}
