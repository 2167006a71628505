package lab

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// runUDP runs paced UDP senders in dn and receivers in ue.
func (l *Lab) runUDP(ctx context.Context, spec TrafficSpec) ([]FlowTraffic, error) {
	n := len(l.pdrs)
	nsec := seconds(spec.Duration)
	rx, tx, err := l.udpSockets()
	defer func() {
		for i := range n {
			if rx[i] != nil {
				rx[i].Close()
			}
			if tx[i] != nil {
				tx[i].Close()
			}
		}
	}()
	if err != nil {
		return nil, err
	}
	out := make([]FlowTraffic, n)
	var rid [4]byte
	_, _ = rand.Read(rid[:])
	runID := binary.BigEndian.Uint32(rid[:]) | 1
	start := spec.Start
	end := start.Add(spec.Duration)
	ctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	var wg sync.WaitGroup
	sendErr := make([]error, n)
	for i := range n {
		out[i].Name = l.pdrs[i].Name
		if l.offered(i, spec) == 0 {
			continue // silent in this run
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			boostThread()
			dst := netip.AddrPortFrom(l.pdrs[i].UE, l.pdrs[i].UEPort)
			out[i].Sent, sendErr[i] = paceUDP(ctx, tx[i], dst, spec.Payload, l.offered(i, spec), start, runID)
		}()
	}
	l.gnb.stamp.Store(true)
	defer l.gnb.stamp.Store(false)
	rxDone := make(chan struct{})
	var rwg sync.WaitGroup
	for i := range n {
		out[i].Intervals = newIntervals(nsec)
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			rec := newDelayRecorder(nsec)
			out[i].Received = receiveUDP(rx[i], out[i].Intervals, rec, start, rxDone, runID)
			out[i].DelayMs = rec.ms
		}()
	}
	wg.Wait()
	// Let the last packets drain from the queues, then stop the receivers.
	time.Sleep(200 * time.Millisecond)
	close(rxDone)
	for i := range n {
		rx[i].SetReadDeadline(time.Now())
	}
	rwg.Wait()
	for i := range n {
		finishIntervals(out[i].Intervals)
	}
	if err := errors.Join(sendErr...); err != nil {
		return out, err
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return out, err
	}
	if e := context.Cause(ctx); e != nil && !errors.Is(e, context.DeadlineExceeded) {
		return out, e
	}
	return out, nil
}

// udpSockets opens each flow's receiver (in ue) and sender (in dn); the
// caller closes what was opened, also on error.
func (l *Lab) udpSockets() (rx, tx []*net.UDPConn, err error) {
	rx, tx = make([]*net.UDPConn, len(l.pdrs)), make([]*net.UDPConn, len(l.pdrs))
	for i, p := range l.pdrs {
		rx[i], err = listenUDP(l.topo.ue, netip.AddrPortFrom(p.UE, p.UEPort).String(), sockOpts{rcvBuf: 8 << 20, timestamps: true})
		if err != nil {
			return rx, tx, fmt.Errorf("flow %s receiver: %w", p.Name, err)
		}
		tx[i], err = listenUDP(l.topo.dn, p.DN.String(), sockOpts{sndBuf: 4 << 20})
		if err != nil {
			return rx, tx, fmt.Errorf("flow %s sender: %w", p.Name, err)
		}
	}
	return rx, tx, nil
}

// Built-in UDP payload layout: bytes 0..7 sequence number, 8..15 the gNB's
// N3 receive time (written by the gNB; zero when sent), 16..19 the run id
// (so a receiver ignores late packets of an earlier run still queued in a
// leaf), 20..27 the send time (ns since the run's start, for one-way delay),
// then zeros.
const udpHeaderLen = 28

// paceUDP sends sequence-numbered datagrams of size payload at rate bit/s
// from start until ctx ends; it returns the number sent.
func paceUDP(ctx context.Context, c *net.UDPConn, dst netip.AddrPort, payload int, rate float64, start time.Time, runID uint32) (uint64, error) {
	buf := make([]byte, payload)
	binary.BigEndian.PutUint32(buf[16:], runID)
	perPkt := time.Duration(float64(payload*8) / rate * float64(time.Second))
	if perPkt <= 0 {
		return 0, fmt.Errorf("udp sender to %v: rate %.0f bit/s too high", dst, rate)
	}
	time.Sleep(time.Until(start))
	var seq uint64
	for ctx.Err() == nil {
		due := uint64(time.Since(start)/perPkt) + 1
		for seq < due && ctx.Err() == nil {
			binary.BigEndian.PutUint64(buf, seq)
			stampSend(buf, start)
			if _, err := c.WriteToUDPAddrPort(buf, dst); err != nil {
				return seq, fmt.Errorf("udp sender to %v: %w", dst, err)
			}
			seq++
		}
		time.Sleep(time.Millisecond)
	}
	return seq, nil
}

func newIntervals(n int) []Interval {
	iv := make([]Interval, n)
	for s := range iv {
		iv[s].Second = s
	}
	return iv
}

// receiveUDP counts payload per second and per-second loss from sequence
// gaps, and records each packet's one-way delay and order in rec, until
// done is closed and the socket's deadline fires. Packets are
// placed in seconds by the time they left N3 (the gNB's kernel receive
// time, which it writes into payload bytes 8..15), else by their kernel
// receive time here (SO_TIMESTAMPNS): a stand-in or receiver goroutine that
// is scheduled late does not move bytes between seconds.
func receiveUDP(c *net.UDPConn, iv []Interval, rec *delayRecorder, start time.Time, done <-chan struct{}, runID uint32) uint64 {
	buf := make([]byte, 65536)
	oob := make([]byte, 128)
	var got uint64
	var next uint64 // next expected sequence number
	for {
		n, oobn, _, _, err := c.ReadMsgUDP(buf, oob)
		if err != nil {
			select {
			case <-done:
				return got
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return got
		}
		if n < udpHeaderLen || binary.BigEndian.Uint32(buf[16:]) != runID {
			continue // not ours, or from an earlier run
		}
		got++
		seq := binary.BigEndian.Uint64(buf)
		rx := time.Now()
		kernelRx, ok := rxTimestamp(oob[:oobn])
		if ok {
			rx = onMonotonic(kernelRx)
		}
		reordered := rec.add(seq, sentAt(buf), rx.Sub(start))
		at := receivedAt(buf, kernelRx, start, len(iv))
		s := int(at.Sub(start) / time.Second)
		if at.Before(start) || s >= len(iv) {
			continue
		}
		if reordered {
			iv[s].Reordered++
		}
		iv[s].Bytes += uint64(n)
		if seq >= next {
			iv[s].Lost += int64(seq - next)
			next = seq + 1
		}
	}
}

// receivedAt is when a packet left N3: the gNB's kernel receive time
// written into payload bytes 8..15, else the kernel receive time here
// (SO_TIMESTAMPNS), else now, each moved onto the monotonic clock. A time
// that cannot belong to the run (a second before its start or after its
// end, as a step of the wall clock or a bogus kernel stamp would give) is
// passed over for the next, so one bad clock reading cannot move a whole
// run's packets out of its seconds.
func receivedAt(payload []byte, kernelRx time.Time, start time.Time, seconds int) time.Time {
	inRun := func(t time.Time) bool {
		return !t.IsZero() && !t.Before(start.Add(-time.Second)) && t.Before(start.Add(time.Duration(seconds+1)*time.Second))
	}
	if ns := binary.BigEndian.Uint64(payload[8:]); ns != 0 {
		if at := onMonotonic(time.Unix(0, int64(ns))); inRun(at) {
			return at
		}
	}
	if !kernelRx.IsZero() {
		if at := onMonotonic(kernelRx); inRun(at) {
			return at
		}
	}
	return time.Now()
}

// onMonotonic moves a wall-clock time taken moments ago (a kernel receive
// time, read back from a packet or a control message) onto the monotonic
// clock, measuring only the moments since it on the wall clock. Compared
// with a run's start as it is, a step of the wall clock during the run
// (NTP) would put every packet after it outside the run's seconds.
func onMonotonic(at time.Time) time.Time {
	now := time.Now()
	return now.Add(at.Sub(now.Round(0)))
}

// rxTimestamp extracts SCM_TIMESTAMPNS from a control message buffer.
func rxTimestamp(oob []byte) (time.Time, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= 16 {
			ts := (*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
			return time.Unix(ts.Sec, ts.Nsec), true
		}
	}
	return time.Time{}, false
}

// finishIntervals derives Mbit/s from bytes.
func finishIntervals(iv []Interval) {
	for s := range iv {
		iv[s].Mbps = float64(iv[s].Bytes) * 8 / 1e6
	}
}
