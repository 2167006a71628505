package shaper

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"syscall"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/free5gc/gtpqos/internal/yamlerr"
)

// FlowsFile is a parsed flows file: the policy (DefaultPolicy of the link
// rate with the file's overrides applied) and the flows with their
// contracts. Both arms of an A/B run share one format: a static arm is the
// same flows with `policy: {mode: static}`.
//
// Format (YAML; unknown keys are errors):
//
//	link: 30mbit              # required: bottleneck rate
//	policy:                   # optional overrides of DefaultPolicy (PolicyYAML)
//	  backend: htb            # the backend that enforces the plan: htb | edt
//	  mode: aware             # aware | static
//	  static_rate: 10mbit     # static mode: every flow's rate
//	  static_ceil: 30mbit     # static mode: every flow's ceil
//	  non_gbr_min: 1mbit      # rate of non-GBR flows
//	  default_rate: 1mbit     # rate of the default class
//	  admission: refuse       # refuse | clamp
//	  accounting: packet      # packet (the user's IP packets) | frame
//	  overhead: auto          # auto (from the device) | bytes
//	  htb:                    # the HTB backend's knobs (package shaper/htb, Knobs);
//	    burst: 32k            # also read at the top of policy:, as before
//	    cburst: 32k           # bytes (k = 1024)
//	    quantum: 12500        # bytes, raised to max_frame if smaller
//	    max_frame: 1514
//	    prio: 0
//	    classifier: auto      # auto | fw | bpf | gtpu
//	    leaf: auto            # auto | fq_codel | fifo
//	    leaf_limit: 1000
//	    leaf_interval: 100ms
//	    pool: 64              # spare classes kept ready (watch)
//	flows:
//	  - name: A               # label for output
//	    seid: 1               # PFCP session id
//	    qer: 1                # QER id (with seid: the flow's identity)
//	    qfi: 2                # 0..63
//	    direction: downlink   # downlink (default) | uplink
//	    gbr: 15mbit           # 0 or absent: non-GBR
//	    mbr: 18mbit           # 0 or absent: up to the link
//	    mark: 2               # skb->mark (decimal, 0x hex or 0o octal; never zero-padded)
//	    teid: 0x64            # optional, for (TEID, QFI) classifiers
//	    session_ambr: 0       # optional session AMBR (non-GBR flows)
//
// Rates are bit/s with tc's decimal units: bit, kbit, mbit, gbit, tbit
// (case-insensitive, "/s" allowed: "30Mbit/s"); a bare number is bit/s.
// Byte-based units (tc's bps, kbps) are refused.
type FlowsFile struct {
	// Path is where the file was read from (for messages).
	Path string
	// Policy is DefaultPolicy(link) with the file's overrides.
	Policy Policy
	// Flows are the flows in file order.
	Flows []Flow
}

type fileYAML struct {
	Link   fileRate    `yaml:"link"`
	Policy *PolicyYAML `yaml:"policy"`
	// Flows are pointers so that a null entry ("- ~") is seen: yaml.v3
	// drops null elements of a slice of structs without a word.
	Flows []*flowYAML `yaml:"flows"`
}

// PolicyYAML is the one YAML form of a Policy (without the link rate,
// which a flows file gives as `link` and the watch config as `link_rate`):
// the `policy:` section of flows files and of the watch config. Every field
// is a string in tc's notation, so `quantum: 12500` and `quantum: "12500"`
// read alike; an empty field keeps DefaultPolicy's value.
//
// A backend's own knobs sit under the backend's key (HTB's: `htb:`); the
// backend checks them (RegisterKnobs) and reads them from
// Policy.BackendKnobs.
type PolicyYAML struct {
	Backend     string `yaml:"backend"`
	Mode        string `yaml:"mode"`
	StaticRate  string `yaml:"static_rate"`
	StaticCeil  string `yaml:"static_ceil"`
	NonGBRMin   string `yaml:"non_gbr_min"`
	DefaultRate string `yaml:"default_rate"`
	Admission   string `yaml:"admission"`
	Accounting  string `yaml:"accounting"`
	Overhead    string `yaml:"overhead"`
	// DelayBudget is every flow's delay budget ("20ms"); DelayBudgets the
	// QFIs' own, QFI -> duration.
	DelayBudget  string            `yaml:"delay_budget"`
	DelayBudgets map[string]string `yaml:"delay_budgets"`
	// HTB holds the HTB backend's knobs (package shaper/htb, Knobs).
	HTB Knobs `yaml:"htb"`
	// EDT holds the edt backend's knobs (package shaper/edtbackend).
	EDT Knobs `yaml:"edt"`
	// The HTB knobs as the top-level keys policies gave them before each
	// backend had its own key: each reads as the same key under htb:, and
	// giving a key both ways is refused.
	Burst        string `yaml:"burst"`
	CBurst       string `yaml:"cburst"`
	Quantum      string `yaml:"quantum"`
	MaxFrame     string `yaml:"max_frame"`
	Prio         string `yaml:"prio"`
	Classifier   string `yaml:"classifier"`
	Leaf         string `yaml:"leaf"`
	LeafLimit    string `yaml:"leaf_limit"`
	LeafInterval string `yaml:"leaf_interval"`
	Pool         string `yaml:"pool"`
}

// LegacyKnobsBackend is the backend the top-level knob keys of a policy
// (burst, quantum, classifier, ...) belong to.
const LegacyKnobsBackend = "htb"

type flowYAML struct {
	Name        string   `yaml:"name"`
	SEID        string   `yaml:"seid"`
	QER         string   `yaml:"qer"`
	QFI         string   `yaml:"qfi"`
	Direction   string   `yaml:"direction"`
	GBR         fileRate `yaml:"gbr"`
	MBR         fileRate `yaml:"mbr"`
	Mark        string   `yaml:"mark"`
	TEID        string   `yaml:"teid"`
	SessionAMBR fileRate `yaml:"session_ambr"`
}

// fileRate is a rate a file gives under one key, read with Rate's
// UnmarshalText. Decoding keeps a bad rate's error instead of failing
// there: the file's structure is checked whole first (unknown keys, a
// second document), and the error is reported after, with the flow and the
// key it belongs to. An empty value is no rate, as an absent key is.
type fileRate struct {
	v     Rate
	given bool
	err   error
}

// rateText reads s as a fileRate.
func rateText(s string) fileRate {
	var r fileRate
	if s != "" {
		r.given, r.err = true, r.v.UnmarshalText([]byte(s))
	}
	return r
}

// UnmarshalYAML reads the value's text; a list or a map is yaml's own
// error, which names the line.
func (r *fileRate) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	*r = rateText(s)
	return nil
}

// get sets *dst to the rate if one was given; an error names key.
func (r fileRate) get(key string, dst *uint64) error {
	if r.err != nil {
		return fmt.Errorf("%s: %w", key, r.err)
	}
	if r.given {
		*dst = uint64(r.v)
	}
	return nil
}

// MaxFlowsFileSize bounds what LoadFlowsFile reads: a flows file for the
// most classes one tree holds (65,518 flows in each direction, one line
// each) is under 10 MiB, and parsing costs memory dozens of times the
// file's size, so a larger input is refused before it is parsed.
const MaxFlowsFileSize = 16 << 20

// LoadFlowsFile reads and parses a flows file. Errors are one line naming
// the file, the flow and the field. A file larger than MaxFlowsFileSize
// is refused after reading at most that much, and anything but a regular
// file (a FIFO, /dev/zero) before reading.
func LoadFlowsFile(path string) (FlowsFile, error) {
	data, err := ReadBounded(path, MaxFlowsFileSize)
	if err != nil {
		return FlowsFile{}, fmt.Errorf("flows file %w", err)
	}
	return ParseFlowsFile(path, data)
}

// ReadBounded reads the regular file at path, refusing one larger than max
// bytes after reading at most max+1 of them. Anything else (a FIFO, a
// device, a directory) is refused before the first read: a FIFO with no
// writer would block the command for good, out of reach of its signals.
// Errors start with the path.
func ReadBounded(path string, max int64) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO must not wait for a writer either.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPath(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPath(err))
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s); give a file", path, fileKind(st.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPath(err))
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: larger than %d MiB: refused before parsing (is it the right file?)", path, max>>20)
	}
	return data, nil
}

// fileKind names a non-regular file's type for messages.
func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}

// unwrapPath drops the *os.PathError around err, whose text would repeat
// the path.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// yamlWhere says where each of the file's types sits, for unknown keys.
var yamlWhere = map[string]string{"fileYAML": "at top level", "PolicyYAML": "in policy", "flowYAML": "in a flow"}

// ParseFlowsFile parses a flows file's contents; name is used in messages.
func ParseFlowsFile(name string, data []byte) (FlowsFile, error) {
	y, err := decodeFlowsFile(name, data)
	if err != nil {
		return FlowsFile{}, err
	}
	ff := FlowsFile{Path: name}
	if !y.Link.given {
		return ff, fmt.Errorf("%s: link: missing (the bottleneck rate, e.g. 30mbit)", name)
	}
	var link uint64
	if err := y.Link.get("link", &link); err != nil {
		return ff, fmt.Errorf("%s: %w", name, err)
	}
	if link == 0 {
		return ff, fmt.Errorf("%s: link: must be above 0", name)
	}
	ff.Policy = DefaultPolicy(link)
	if y.Policy != nil {
		if err := y.Policy.Apply(&ff.Policy); err != nil {
			return ff, fmt.Errorf("%s: policy: %w", name, err)
		}
	}
	for i, fy := range y.Flows {
		if fy == nil {
			return ff, fmt.Errorf("%s: flow #%d: empty entry (null): give the flow's keys or remove the line", name, i+1)
		}
		f, err := fy.flow()
		if err != nil {
			label := fmt.Sprintf("flow #%d", i+1)
			if fy.Name != "" && printableName(fy.Name) {
				label = "flow " + fy.Name
			}
			return ff, fmt.Errorf("%s: %s: %w", name, label, err)
		}
		ff.Flows = append(ff.Flows, f)
	}
	return ff, nil
}

// printableName reports whether s holds no control characters: names reach
// terminals and logs, where a newline or an escape sequence would forge
// lines or repaint the screen.
func printableName(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return false
		}
	}
	return true
}

// parseUint is ParseUint with the field named in the error.
func parseUint(field, s string, bits int) (uint64, error) {
	v, err := ParseUint(s, bits)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", field, err)
	}
	return v, nil
}

// Apply sets pol's fields from the non-empty fields of p; an error names
// the field at fault.
func (p *PolicyYAML) Apply(pol *Policy) error {
	if p.Backend != "" {
		pol.Backend = p.Backend
	}
	for _, step := range []func(*Policy) error{p.applyKinds, p.applyRates, p.applyBudgets, p.applyKnobs} {
		if err := step(pol); err != nil {
			return err
		}
	}
	return nil
}

// decodeFlowsFile decodes one YAML document of known fields with yaml.v3,
// whose errors name the line; an empty document is an error.
func decodeFlowsFile(name string, data []byte) (fileYAML, error) {
	var y fileYAML
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&y); err != nil {
		if errors.Is(err, io.EOF) {
			return y, fmt.Errorf("%s: empty flows file (want at least 'link:')", name)
		}
		return y, yamlerr.OneLine(name, err, yamlWhere)
	}
	return y, yamlerr.OneDocument(name, dec)
}

// applyKinds sets the mode and admission kinds and the accounting.
func (p *PolicyYAML) applyKinds(pol *Policy) error {
	var err error
	if pol.Mode, err = ParseMode(p.Mode); err != nil {
		return fmt.Errorf("mode: %w", err)
	}
	if pol.Admission, err = ParseAdmission(p.Admission); err != nil {
		return fmt.Errorf("admission: %w", err)
	}
	return p.applyAccounting(pol)
}

// applyRates sets the rates (bit/s).
func (p *PolicyYAML) applyRates(pol *Policy) error {
	// The first bad rate, in the keys' order.
	if err := cmp.Or(
		rateText(p.StaticRate).get("static_rate", &pol.StaticRate),
		rateText(p.StaticCeil).get("static_ceil", &pol.StaticCeil),
		rateText(p.NonGBRMin).get("non_gbr_min", &pol.NonGBRMin),
		rateText(p.DefaultRate).get("default_rate", &pol.DefaultRate),
	); err != nil {
		return err
	}
	if p.NonGBRMin != "" && p.DefaultRate == "" {
		pol.DefaultRate = pol.NonGBRMin
	}
	return nil
}

// legacyKnobs are the top-level knob keys p gives, as LegacyKnobsBackend's
// knobs.
func (p *PolicyYAML) legacyKnobs() Knobs {
	k := Knobs{}
	for _, kv := range []struct{ key, v string }{{"burst", p.Burst}, {"cburst", p.CBurst}, {"quantum", p.Quantum},
		{"max_frame", p.MaxFrame}, {"prio", p.Prio}, {"classifier", p.Classifier}, {"leaf", p.Leaf},
		{"leaf_limit", p.LeafLimit}, {"leaf_interval", p.LeafInterval}, {"pool", p.Pool}} {
		if kv.v != "" {
			k[kv.key] = kv.v
		}
	}
	return k
}

// sections are the policy's backend sections by backend name: adding a
// backend with knobs adds its key to PolicyYAML and here.
func (p *PolicyYAML) sections() map[string]Knobs {
	return map[string]Knobs{"htb": p.HTB, "edt": p.EDT}
}

// applyKnobs checks the backends' knobs (the top-level keys and each
// backend's section) and adds them to pol's, over what pol holds.
func (p *PolicyYAML) applyKnobs(pol *Policy) error {
	legacy := p.legacyKnobs()
	if err := CheckKnobs(KnobSet{}.With(LegacyKnobsBackend, legacy)); err != nil {
		// A top-level key is named as it was given.
		return errors.Unwrap(err)
	}
	sections := p.sections()
	for _, name := range slices.Sorted(maps.Keys(sections)) {
		if err := CheckKnobs(KnobSet{}.With(name, sections[name])); err != nil {
			return err
		}
	}
	for key := range legacy {
		if _, both := sections[LegacyKnobsBackend][key]; both {
			return fmt.Errorf("%s: given both at the top and under %s: give it once, as %s.%s", key, LegacyKnobsBackend, LegacyKnobsBackend, key)
		}
	}
	sections[LegacyKnobsBackend] = mergeKnobs(legacy, sections[LegacyKnobsBackend])
	for name, k := range sections {
		pol.BackendKnobs = pol.BackendKnobs.With(name, mergeKnobs(pol.BackendKnobs.Of(name), k))
	}
	return nil
}

// mergeKnobs returns base's knobs with over's on top.
func mergeKnobs(base, over Knobs) Knobs {
	out := maps.Clone(base)
	if out == nil {
		out = Knobs{}
	}
	maps.Copy(out, over)
	return out
}

// applyAccounting sets which bytes the classes count (accounting,
// overhead).
func (p *PolicyYAML) applyAccounting(pol *Policy) error {
	var err error
	if pol.Accounting, err = ParseAccounting(p.Accounting); err != nil {
		return fmt.Errorf("accounting: %w", err)
	}
	if pol.Overhead, err = ParseOverhead(p.Overhead); err != nil {
		return fmt.Errorf("overhead: %w", err)
	}
	return nil
}

func (fy flowYAML) flow() (Flow, error) {
	f := Flow{Name: fy.Name, Direction: Downlink}
	if !printableName(fy.Name) {
		return f, fmt.Errorf("name %q: control characters (newlines, escape sequences) are not allowed in a name that is printed", fy.Name)
	}
	if fy.QER == "" {
		return f, errors.New("qer: missing (the QER id)")
	}
	v, err := parseUint("qer", fy.QER, 32)
	if err != nil {
		return f, err
	}
	f.ID.QERID = uint32(v)
	if fy.SEID != "" {
		if f.ID.SEID, err = parseUint("seid", fy.SEID, 64); err != nil {
			return f, err
		}
	}
	if fy.QFI != "" {
		v, err := parseUint("qfi", fy.QFI, 8)
		if err != nil {
			return f, err
		}
		if v > 63 {
			return f, fmt.Errorf("qfi: %d above 63", v)
		}
		f.QFI = uint8(v)
	}
	if fy.Direction != "" {
		d, err := ParseDirection(fy.Direction)
		if err != nil {
			return f, fmt.Errorf("direction: %w", err)
		}
		f.Direction = d
	}
	// The first bad rate, in the keys' order.
	if err := cmp.Or(
		fy.GBR.get("gbr", &f.GBR),
		fy.MBR.get("mbr", &f.MBR),
		fy.SessionAMBR.get("session_ambr", &f.SessionAMBR),
	); err != nil {
		return f, err
	}
	if f.MBR != 0 && f.MBR < f.GBR {
		return f, fmt.Errorf("mbr: MBR %s below GBR %s", FormatRate(f.MBR), FormatRate(f.GBR))
	}
	if fy.Mark != "" {
		v, err := parseUint("mark", fy.Mark, 32)
		if err != nil {
			return f, err
		}
		f.Mark = uint32(v)
	}
	if fy.TEID != "" {
		v, err := parseUint("teid", fy.TEID, 32)
		if err != nil {
			return f, err
		}
		f.TEID = uint32(v)
	}
	return f, nil
}
