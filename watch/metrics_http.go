package watch

import (
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"golang.org/x/net/netutil"
)

// ServeMetrics listens on addr and serves m on /metrics. Metrics name every
// subscriber's flows, so addr must be a loopback address; put a proxy in
// front to export them.
func ServeMetrics(addr string, m *Metrics) (*http.Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("metrics address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("metrics address %q: not a loopback address (metrics are served on loopback only; put a proxy in front to export them)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener %s: %w", addr, err)
	}
	// The name was checked, not what it resolved to: /etc/hosts may map
	// localhost anywhere.
	if ta, ok := ln.Addr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("metrics address %q: resolves to %s, not a loopback address (metrics are served on loopback only)", addr, ln.Addr())
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", readOnly(metricsHandler(m)))
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		// A scrape of the largest tree takes well under a second to write.
		WriteTimeout:   30 * time.Second,
		IdleTimeout:    30 * time.Second,
		MaxHeaderBytes: 16 << 10,
	}
	// Connections past the limit wait in the kernel's accept queue instead
	// of costing the daemon a descriptor and a goroutine each.
	go func() { _ = srv.Serve(netutil.LimitListener(ln, MaxMetricsConns)) }()
	return srv, nil
}

// MaxMetricsConns bounds the metrics endpoint's open connections.
const MaxMetricsConns = 16

// readOnly answers anything but GET and HEAD with 405.
func readOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// metricsHandler serves m in Prometheus' text format (gzipped when the
// scraper accepts it), streamed as WriteText writes it.
func metricsHandler(m *Metrics) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fams, err := m.Registry.Gather()
		if err != nil {
			http.Error(w, "gather metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
		w.Header().Set("Vary", "Accept-Encoding")
		var out io.Writer = w
		if acceptsGzip(r) {
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			defer gz.Close()
			out = gz
		}
		// A write that fails now (the scraper went away) cuts the reply
		// short; there is no one left to tell.
		_ = m.writeText(out, fams)
	})
}

// acceptsGzip says whether the request accepts a gzipped reply (not with
// q=0; codings are case-insensitive).
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, params, _ := strings.Cut(part, ";")
		if !strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			continue
		}
		if k, v, ok := strings.Cut(params, "="); ok && strings.TrimSpace(k) == "q" {
			q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return err == nil && q > 0
		}
		return true
	}
	return false
}
