package watch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/free5gc/gtpqos/internal/yamlerr"
	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/devlock"
)

// Config is the daemon's configuration: the YAML file given with --config
// (see packaging/gtpqos-watch.yaml), with command-line flags on top.
// Sizes and rates are strings in tc's notation ("30mbit", "32k").
type Config struct {
	// N3 is the downlink device (its egress is shaped); required.
	N3 string `yaml:"n3"`
	// N6 is the uplink device (optional).
	N6 string `yaml:"n6"`
	// LinkRate is the downlink bottleneck (N3); required.
	LinkRate string `yaml:"link_rate"`
	// N6LinkRate is the uplink bottleneck (default LinkRate).
	N6LinkRate string `yaml:"n6_link_rate"`
	// Poll is the dump interval without events (stock gtp5g).
	Poll Duration `yaml:"poll"`
	// Resync is the interval of the periodic resync: every device read
	// back and given every flow (drift repair; gtp5g is not dumped).
	Resync Duration `yaml:"resync"`
	// Retry is the wait before retrying when gtp5g or a device is gone.
	Retry Duration `yaml:"retry"`
	// MarkMode is what watch does with the gtp5g patch's mark mode, which
	// is machine-wide (every UPF on the host shares it): current (default:
	// never write it; off means packets are classified by TEID and SDF
	// rules, as on stock gtp5g), auto (set pdr where the module offers it,
	// else flow), pdr, flow, qfi, or keep (anything but off is kept, off
	// becomes what auto picks).
	MarkMode string `yaml:"mark_mode"`
	// Classifier forces a classifier kind (auto, fw, bpf; gtpu without
	// the patch): --classifier, or policy.classifier in the file. A kind
	// other than auto here wins over policy.classifier.
	Classifier string `yaml:"classifier"`
	// MetricsAddr is the Prometheus listen address (loopback by default;
	// "off" disables it).
	MetricsAddr string `yaml:"metrics_addr"`
	// CleanupOnExit removes the trees on SIGTERM/SIGINT instead of leaving
	// them in place.
	CleanupOnExit bool `yaml:"cleanup_on_exit"`
	// Force adopts a root qdisc gtpqos did not create (replacing it).
	Force bool `yaml:"force"`
	// LockDir holds the per-device lock files.
	LockDir string `yaml:"lock_dir"`
	// EventsBuffer is the receive buffer of the socket gtp5g's QoS events
	// arrive on ("8m" if empty); events beyond it while the daemon is busy
	// are lost and cost a full dump.
	EventsBuffer string `yaml:"events_buffer"`
	// LogLevel is logrus's level (debug, info, warn, error).
	LogLevel string `yaml:"log_level"`
	// Policy holds the planner's knobs in the same form as a flows file's
	// policy section.
	Policy shaper.PolicyYAML `yaml:"policy"`
}

// Duration is a time.Duration written as "2s" in YAML.
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (want e.g. 2s, 1m)", n.Line, n.Value)
	}
	if v <= 0 {
		return fmt.Errorf("line %d: duration %q must be positive", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// DefaultConfig returns the defaults every field falls back to.
func DefaultConfig() Config {
	return Config{
		Poll:        Duration(DefaultPoll),
		Resync:      Duration(DefaultResync),
		Retry:       Duration(DefaultRetry),
		MarkMode:    "current",
		Classifier:  "auto",
		MetricsAddr: "127.0.0.1:9477",
		LockDir:     devlock.DefaultDir,
		LogLevel:    "info",
	}
}

// yamlWhere says where the config's types sit, for unknown keys.
var yamlWhere = map[string]string{"Config": "at top level", "PolicyYAML": "in policy"}

// MaxConfigSize bounds what LoadConfig reads: the annotated example is
// about 3 KiB.
const MaxConfigSize = 1 << 20

// LoadConfig reads a YAML config file over DefaultConfig. Unknown keys are
// errors naming the key and line; so is a second YAML document, and a file
// above MaxConfigSize is refused before it is parsed.
func LoadConfig(path string) (Config, error) {
	cfg := DefaultConfig()
	b, err := shaper.ReadBounded(path, MaxConfigSize)
	if err != nil {
		return cfg, fmt.Errorf("config %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	err = dec.Decode(&cfg)
	if errors.Is(err, io.EOF) {
		return cfg, nil
	}
	if err != nil {
		return cfg, yamlerr.OneLine("config "+path, err, yamlWhere)
	}
	return cfg, yamlerr.OneDocument("config "+path, dec)
}

// minEventsBuffer is the smallest events buffer taken: below it not even
// one event fits.
const minEventsBuffer = 4 << 10

// eventsBuffer returns EventsBuffer in bytes (0: gtpnl's default).
func (c Config) eventsBuffer() (int, error) {
	if c.EventsBuffer == "" {
		return 0, nil
	}
	n, err := shaper.ParseSize(c.EventsBuffer)
	if err != nil {
		return 0, fmt.Errorf("events buffer: %w", err)
	}
	if n < minEventsBuffer {
		return 0, fmt.Errorf("events buffer %s: want at least %s", c.EventsBuffer, shaper.FormatSize(minEventsBuffer))
	}
	return int(n), nil
}

// Policies returns the downlink (N3) and uplink (N6) policies.
func (c Config) Policies() (dl, ul shaper.Policy, err error) {
	if c.LinkRate == "" {
		return dl, ul, errors.New("link rate missing (--link-rate or link_rate)")
	}
	dlRate, err := shaper.ParseRate(c.LinkRate)
	if err != nil {
		return dl, ul, fmt.Errorf("link rate: %w", err)
	}
	ulRate := dlRate
	if c.N6LinkRate != "" {
		if ulRate, err = shaper.ParseRate(c.N6LinkRate); err != nil {
			return dl, ul, fmt.Errorf("n6 link rate: %w", err)
		}
	}
	if dl, err = c.policy(dlRate); err != nil {
		return dl, ul, err
	}
	ul, err = c.policy(ulRate)
	return dl, ul, err
}

// policy is DefaultPolicy(link) with the config's policy section applied.
func (c Config) policy(link uint64) (shaper.Policy, error) {
	pol := shaper.DefaultPolicy(link)
	py := c.Policy
	if c.Classifier != "" && c.Classifier != "auto" { // auto: the policy's
		py.Classifier = c.Classifier
	}
	if err := py.Apply(&pol); err != nil {
		return pol, fmt.Errorf("policy: %w", err)
	}
	return pol, nil
}

// Check checks what it can of the config without gtp5g or the devices,
// so that a config given wrongly is refused before anything starts: the
// required devices and rates, the policy and the mark mode. Its errors
// name the command-line flags; the file's keys are named after them.
func (c Config) Check() error {
	if c.N3 == "" {
		return errors.New("--n3 is required (the N3 device, e.g. --n3 eth1)")
	}
	if c.LinkRate == "" {
		return errors.New("--link-rate is required (the N3 bottleneck, e.g. --link-rate 30mbit)")
	}
	if _, _, err := c.Policies(); err != nil {
		return err
	}
	if err := checkMarkModeName(c.MarkMode); err != nil {
		return fmt.Errorf("--mark-mode: %w", err)
	}
	for _, d := range []struct {
		name string
		v    Duration
	}{{"poll", c.Poll}, {"resync", c.Resync}, {"retry", c.Retry}} {
		if time.Duration(d.v) < MinInterval {
			return fmt.Errorf("--%s %s: below %s (each one reads every rule and class of the device)", d.name, time.Duration(d.v), MinInterval)
		}
	}
	return nil
}

// MinInterval is the shortest poll, resync or retry interval taken: a
// shorter one would keep the daemon and the kernel busy reading.
const MinInterval = 100 * time.Millisecond
