package ab

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// WriteFiles writes results.json, results.csv (one row per run and flow),
// timeseries.csv (one row per run, flow and second), fig1-goodput.svg,
// fig2-timeseries.svg and, where delay was measured, fig4-delay.svg into
// dir, creating it. It returns the paths written.
func WriteFiles(dir string, res *Results) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("output dir %s: %w", dir, err)
	}
	var paths []string
	write := func(name string, data []byte) error {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		paths = append(paths, p)
		return nil
	}
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode results.json: %w", err)
	}
	if err := write("results.json", append(js, '\n')); err != nil {
		return paths, err
	}
	if err := write("results.csv", resultsCSV(res)); err != nil {
		return paths, err
	}
	if err := write("timeseries.csv", seriesCSV(res)); err != nil {
		return paths, err
	}
	if err := write("fig1-goodput.svg", Figure1(res)); err != nil {
		return paths, err
	}
	if err := write("fig2-timeseries.svg", Figure2(res)); err != nil {
		return paths, err
	}
	if hasDelay(res) {
		if err := write("fig4-delay.svg", FigureDelay(res)); err != nil {
			return paths, err
		}
	}
	return paths, nil
}

func f3(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }

func resultsCSV(res *Results) []byte {
	var b csvBuf
	w := csv.NewWriter(&b)
	_ = w.Write(append([]string{"arm", "run", "flow", "class", "gbr_mbps", "mbr_mbps", "goodput_mbps", "outer_mbps",
		"frame_bytes", "class_drops", "udp_lost", "tcp_retransmits", "gbr_pass", "mbr_pass", "aggregate_mbps"}, append(slices.Clone(delayColumns), "backend")...))
	for _, r := range res.RunList {
		for _, f := range r.Flows {
			_ = w.Write(append([]string{r.Arm, strconv.Itoa(r.Index), f.Name, f.Class, f3(f.GBR), f3(f.MBR), f3(f.Goodput), f3(f.Outer),
				strconv.FormatFloat(f.Frame, 'f', 1, 64), strconv.FormatUint(f.Drops, 10), strconv.FormatInt(f.Lost, 10),
				strconv.FormatUint(f.Retransmits, 10), strconv.FormatBool(f.GBRPass), strconv.FormatBool(f.MBRPass), f3(r.Aggregate)},
				append(delayCells(f.Delay), r.Backend)...))
		}
	}
	w.Flush()
	return b.data
}

func seriesCSV(res *Results) []byte {
	var b csvBuf
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"arm", "run", "flow", "second", "goodput_mbps", "backend"})
	for _, r := range res.RunList {
		for _, f := range r.Flows {
			for s, v := range f.Series {
				_ = w.Write([]string{r.Arm, strconv.Itoa(r.Index), f.Name, strconv.Itoa(s), f3(v), r.Backend})
			}
		}
	}
	w.Flush()
	return b.data
}

type csvBuf struct{ data []byte }

func (b *csvBuf) Write(p []byte) (int, error) { b.data = append(b.data, p...); return len(p), nil }
