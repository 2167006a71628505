// Package deploy holds the container image, the free5gc-compose override
// and the Helm sidecar; its test checks them against the code: the
// capabilities (classify.DeployCaps), the metrics address and path the
// daemon serves, the watch flags the entrypoint uses, a read-only root.
package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/free5gc/gtpqos/shaper/classify"
	"github.com/free5gc/gtpqos/watch"
)

// docCaps are classify.GrantCaps as compose and Kubernetes spell them.
func docCaps() []string {
	var out []string
	for _, n := range classify.CapNames(classify.GrantCaps) {
		out = append(out, strings.TrimPrefix(n, "CAP_"))
	}
	return out
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// probeURL is what the health checks fetch: the daemon's default address.
func probeURL() string { return "http://" + watch.DefaultConfig().MetricsAddr + "/metrics" }

func TestComposeOverride(t *testing.T) {
	var f struct {
		Services map[string]struct {
			NetworkMode string   `yaml:"network_mode"`
			User        string   `yaml:"user"`
			CapAdd      []string `yaml:"cap_add"`
			CapDrop     []string `yaml:"cap_drop"`
			ReadOnly    bool     `yaml:"read_only"`
			Tmpfs       []string `yaml:"tmpfs"`
			Environment map[string]string
			Volumes     []any
			Healthcheck struct {
				Test []string
			}
		}
	}
	readYAML(t, "compose/docker-compose.gtpqos.yaml", &f)
	s, ok := f.Services["gtpqos"]
	if !ok {
		t.Fatal("no gtpqos service")
	}
	if s.NetworkMode != "service:free5gc-upf" {
		t.Errorf("network_mode %q, want service:free5gc-upf", s.NetworkMode)
	}
	if !slices.Equal(s.CapAdd, docCaps()) {
		t.Errorf("cap_add %v, want the documented %v", s.CapAdd, docCaps())
	}
	if !slices.Equal(s.CapDrop, []string{"ALL"}) {
		t.Errorf("cap_drop %v, want [ALL]", s.CapDrop)
	}
	if !s.ReadOnly {
		t.Error("read_only is not true")
	}
	if s.User != "65534:65534" {
		t.Errorf("user %q, want 65534:65534", s.User)
	}
	lock := watch.DefaultConfig().LockDir
	if len(s.Tmpfs) != 1 || !strings.HasPrefix(s.Tmpfs[0], lock+":") {
		t.Errorf("tmpfs %v, want one at the lock dir %s", s.Tmpfs, lock)
	}
	if s.Environment["GTPQOS_BPF_PIN_DIR"] != classify.DefaultPinRoot {
		t.Errorf("GTPQOS_BPF_PIN_DIR %q, want %s", s.Environment["GTPQOS_BPF_PIN_DIR"], classify.DefaultPinRoot)
	}
	if len(s.Healthcheck.Test) == 0 || s.Healthcheck.Test[len(s.Healthcheck.Test)-1] != probeURL() {
		t.Errorf("healthcheck %v, want it to fetch %s", s.Healthcheck.Test, probeURL())
	}
	if cfg, err := watch.LoadConfig("compose/watch.yaml"); err != nil {
		t.Errorf("compose/watch.yaml: %v", err)
	} else if cfg.MarkMode != "current" {
		t.Errorf("compose/watch.yaml: mark_mode %q: a container must not change the machine-wide mark mode unasked (current)", cfg.MarkMode)
	}
}

func TestHelmSidecarPatch(t *testing.T) {
	type container struct {
		Name            string
		SecurityContext struct {
			RunAsNonRoot             bool  `yaml:"runAsNonRoot"`
			AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
			ReadOnlyRootFilesystem   bool  `yaml:"readOnlyRootFilesystem"`
			Capabilities             struct{ Add, Drop []string }
		} `yaml:"securityContext"`
		ReadinessProbe struct {
			Exec struct{ Command []string }
		} `yaml:"readinessProbe"`
		VolumeMounts []struct {
			Name      string
			MountPath string `yaml:"mountPath"`
			ReadOnly  bool   `yaml:"readOnly"`
		} `yaml:"volumeMounts"`
	}
	var p struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []container
					Volumes    []struct {
						Name      string
						ConfigMap *struct{ Name string } `yaml:"configMap"`
					}
				}
			}
		}
	}
	readYAML(t, "helm/upf-sidecar-patch.yaml", &p)
	cs := p.Spec.Template.Spec.Containers
	if len(cs) != 1 || cs[0].Name != "gtpqos" {
		t.Fatalf("containers %+v, want the gtpqos sidecar", cs)
	}
	c := cs[0]
	sc := c.SecurityContext
	if !slices.Equal(sc.Capabilities.Add, docCaps()) || !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
		t.Errorf("capabilities add %v drop %v, want add %v drop [ALL]", sc.Capabilities.Add, sc.Capabilities.Drop, docCaps())
	}
	if !sc.RunAsNonRoot || !sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("securityContext %+v: want runAsNonRoot, readOnlyRootFilesystem, allowPrivilegeEscalation false", sc)
	}
	cmd := c.ReadinessProbe.Exec.Command
	if len(cmd) == 0 || cmd[len(cmd)-1] != probeURL() {
		t.Errorf("readiness probe %v, want it to fetch %s", cmd, probeURL())
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m.Name
		if m.MountPath == "/etc/gtpqos" && !m.ReadOnly {
			t.Error("the config is mounted writable")
		}
	}
	for _, want := range []string{"/etc/gtpqos", watch.DefaultConfig().LockDir, classify.DefaultPinRoot} {
		if mounts[want] == "" {
			t.Errorf("no volume mounted at %s", want)
		}
	}
	cm := false
	for _, v := range p.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == "gtpqos-watch" {
			cm = true
		}
	}
	if !cm {
		t.Error("the config is not the gtpqos-watch ConfigMap")
	}
	// The chart's ConfigMap carries the same name and renders its values.
	tpl, err := os.ReadFile("helm/gtpqos-sidecar/templates/configmap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(tpl), "name: gtpqos-watch") || !strings.Contains(string(tpl), "toYaml .Values.watch") {
		t.Errorf("configmap template does not render .Values.watch as gtpqos-watch:\n%s", tpl)
	}
	var values struct{ Watch map[string]any }
	readYAML(t, "helm/gtpqos-sidecar/values.yaml", &values)
	b, _ := yaml.Marshal(values.Watch)
	tmp := filepath.Join(t.TempDir(), "watch.yaml")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := watch.LoadConfig(tmp); err != nil {
		t.Errorf("values.yaml's watch config: %v", err)
	}
}

// TestContainerfileEntrypoint checks the image's entrypoint runs watch
// with flags the command has, and that it builds a static binary.
func TestContainerfileEntrypoint(t *testing.T) {
	b, err := os.ReadFile("Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"FROM scratch", "CGO_ENABLED=0", `ENTRYPOINT ["/gtpqos", "watch", "--config", "/etc/gtpqos/watch.yaml"]`, "USER 65534:65534"} {
		if !strings.Contains(s, want) {
			t.Errorf("Containerfile lacks %q", want)
		}
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command to build gtpqos")
	}
	bin := filepath.Join(t.TempDir(), "gtpqos")
	build := exec.Command("go", "build", "-o", bin, "../cmd/gtpqos")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, _ := exec.Command(bin, "watch", "-h").CombinedOutput()
	for _, m := range regexp.MustCompile(`"(--[a-z-]+)"`).FindAllStringSubmatch(s, -1) {
		if !strings.Contains(string(out), "  -"+strings.TrimPrefix(m[1], "--")+" ") {
			t.Errorf("entrypoint flag %s: gtpqos watch has no such flag:\n%s", m[1], out)
		}
	}
}
