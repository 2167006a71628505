package watch

import (
	"bufio"
	"context"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/free5gc/gtpqos/shaper"
)

// The per-class counters are written straight into the scrape's text, one
// family at a time, a line per flow class. Through the client library's
// collectors a scrape at 65k flows would build a quarter of a million
// metric objects (four per class, five labels each) and sort them before
// writing the first byte: some 18 MB per 10k flows, held at once, on
// every scrape. Written here, a scrape costs each device's flow classes
// with their counters (shaper.FlowCounters: about 60 bytes a class) and
// one line at a time.

// classCollector reads per-class counters from the devices at scrape time.
type classCollector struct {
	mu   sync.Mutex
	devs []*device
}

// classFamilies are the per-class counter families, in the order written.
var classFamilies = []struct {
	name, help string
	value      func(shaper.Counters) uint64
}{
	{"gtpqos_class_sent_bytes_total", "Bytes sent by a flow's class, in the tree's accounting unit (packet: the user's packets; frame: whole frames).",
		func(c shaper.Counters) uint64 { return c.Bytes }},
	{"gtpqos_class_sent_packets_total", "Packets sent by a flow's class.", func(c shaper.Counters) uint64 { return c.Packets }},
	{"gtpqos_class_drops_total", "Packets dropped in a flow's class.", func(c shaper.Counters) uint64 { return c.Drops }},
	{"gtpqos_class_overlimits_total", "Overlimit events of a flow's class (the class was over its rate or ceil).", func(c shaper.Counters) uint64 { return c.Overlimits }},
}

// devClasses is one device's flow classes with their counters, read once
// per scrape (none when the counters could not be read: no stale series).
type devClasses struct {
	dev     string
	up      bool
	classes []shaper.FlowCounters
}

// read reads every device's flow classes and counters.
func (c *classCollector) read() []devClasses {
	c.mu.Lock()
	devs := append([]*device(nil), c.devs...)
	c.mu.Unlock()
	out := make([]devClasses, 0, len(devs))
	for _, d := range devs {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		classes, err := d.be.FlowCounters(ctx)
		cancel()
		dc := devClasses{dev: d.be.Dev(), up: err == nil}
		if dc.up {
			dc.classes = classes
		}
		out = append(out, dc)
	}
	return out
}

// WriteText writes every metric in Prometheus' text format: the engine's
// (Registry), then the per-class counters read from the devices now.
// Nothing is written when the registry cannot be gathered.
func (m *Metrics) WriteText(w io.Writer) error {
	fams, err := m.Registry.Gather()
	if err != nil {
		return err
	}
	return m.writeText(w, fams)
}

// writeText writes the gathered registry, then the class counters.
func (m *Metrics) writeText(w io.Writer, fams []*dto.MetricFamily) error {
	bw := bufio.NewWriter(w)
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToText(bw, f); err != nil {
			return err
		}
	}
	writeClassFamilies(bw, m.classStat.read())
	return bw.Flush()
}

// writeClassFamilies writes the devices' class counters, each family's
// lines together as the format wants (errors stay in bw until Flush).
func writeClassFamilies(bw *bufio.Writer, devs []devClasses) {
	header(bw, "gtpqos_class_stats_up", "1 if the device's class counters could be read at this scrape.", "gauge")
	for _, d := range devs {
		up := "0"
		if d.up {
			up = "1"
		}
		bw.WriteString(`gtpqos_class_stats_up{dev="` + labelValue(d.dev) + `"} ` + up + "\n")
	}
	var line []byte
	for _, fam := range classFamilies {
		header(bw, fam.name, fam.help, "counter")
		for _, d := range devs {
			dev := labelValue(d.dev)
			for _, cl := range d.classes {
				line = append(line[:0], fam.name...)
				line = append(line, `{dev="`...)
				line = append(line, dev...)
				line = append(line, `",class="`...)
				line = strconv.AppendUint(line, uint64(cl.Class>>16), 16)
				line = append(line, ':')
				line = strconv.AppendUint(line, uint64(cl.Class&0xffff), 16)
				line = append(line, `",seid="`...)
				line = strconv.AppendUint(line, cl.Flow.SEID, 10)
				line = append(line, `",qer="`...)
				line = strconv.AppendUint(line, uint64(cl.Flow.QERID), 10)
				line = append(line, `",qfi="`...)
				line = strconv.AppendUint(line, uint64(cl.QFI), 10)
				line = append(line, `"} `...)
				line = strconv.AppendUint(line, fam.value(cl.Counters), 10)
				line = append(line, '\n')
				bw.Write(line)
			}
		}
	}
}

func header(bw *bufio.Writer, name, help, kind string) {
	bw.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " " + kind + "\n")
}

// labelValue escapes a label value for the text format (a device name may
// hold a quote or a backslash).
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func labelValue(v string) string { return labelEscaper.Replace(v) }
