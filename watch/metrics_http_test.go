package watch

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The endpoint answers GET and HEAD only; every other method gets 405.
func TestMetricsEndpointIsReadOnly(t *testing.T) {
	srv, addr := serveTestMetrics(t)
	defer srv.Close()
	for _, method := range []string{"GET", "HEAD", "POST", "PUT", "DELETE", "TRACE", "OPTIONS", "PATCH"} {
		req, _ := http.NewRequest(method, "http://"+addr+"/metrics", strings.NewReader(""))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		res.Body.Close()
		want := http.StatusMethodNotAllowed
		if method == "GET" || method == "HEAD" {
			want = http.StatusOK
		}
		if res.StatusCode != want {
			t.Errorf("%s /metrics: %d, want %d", method, res.StatusCode, want)
		}
	}
}

// Idle connections beyond MaxMetricsConns are not served (they wait in the
// kernel's queue) and cost the daemon nothing: a scrape still gets through
// once one of the held connections goes.
func TestMetricsEndpointBoundsConnections(t *testing.T) {
	srv, addr := serveTestMetrics(t)
	defer srv.Close()
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for i := 0; i < MaxMetricsConns; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	extra, err := net.Dial("tcp", addr) // completes in the kernel's backlog
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	if _, err := extra.Write([]byte("GET /metrics HTTP/1.0\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	extra.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := extra.Read(make([]byte, 64)); err == nil || n > 0 {
		t.Fatalf("connection %d was served while %d were open", MaxMetricsConns+1, MaxMetricsConns)
	}
	held[0].Close()
	extra.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64)
	n, err := extra.Read(buf)
	if err != nil || !strings.HasPrefix(string(buf[:n]), "HTTP/1.0 200") {
		t.Fatalf("after a held connection closed: %q, %v; want a 200 reply", buf[:n], err)
	}
}

func serveTestMetrics(t *testing.T) (*http.Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv, err := ServeMetrics(addr, NewMetrics())
	if err != nil {
		t.Fatal(err)
	}
	return srv, addr
}
