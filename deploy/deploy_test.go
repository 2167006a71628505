// Package deploy holds the container image, the free5gc-compose override
// and the Helm sidecar; its test checks them against the code: the
// capabilities (classify.DeployCaps), the metrics address and path the
// daemon serves, the watch flags the entrypoint uses, a read-only root.
package deploy

import (
	"debug/elf"
	"fmt"
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
	if s.User != "0:0" {
		t.Errorf("user %q, want 0:0 (runtimes grant cap_add to uid 0 only)", s.User)
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
			RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
			RunAsUser                *int  `yaml:"runAsUser"`
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
	// The runtime grants capabilities.add to uid 0 only (no ambient
	// capabilities), so the sidecar is uid 0 with every other one dropped.
	if sc.RunAsUser == nil || *sc.RunAsUser != 0 || (sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) {
		t.Errorf("securityContext runAsUser %v runAsNonRoot %v: want uid 0 (capabilities.add reach uid 0 only)", sc.RunAsUser, sc.RunAsNonRoot)
	}
	if !sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("securityContext %+v: want readOnlyRootFilesystem, allowPrivilegeEscalation false", sc)
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
// with flags the command has, that the Containerfile pulls no base image
// (every stage is scratch), and that what make image stages for it
// (scripts/image.sh --context) is static: the image has no loader.
func TestContainerfileEntrypoint(t *testing.T) {
	b, err := os.ReadFile("Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"FROM scratch", "COPY gtpqos /gtpqos", "COPY busybox /busybox", `ENTRYPOINT ["/gtpqos", "watch", "--config", "/etc/gtpqos/watch.yaml"]`, "USER 0:0"} {
		if !strings.Contains(s, want) {
			t.Errorf("Containerfile lacks %q", want)
		}
	}
	for _, m := range regexp.MustCompile(`(?mi)^\s*FROM\s+(.*)$`).FindAllStringSubmatch(s, -1) {
		if strings.TrimSpace(m[1]) != "scratch" {
			t.Errorf("Containerfile: FROM %s: the image is built from scratch, with nothing pulled from a registry", m[1])
		}
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command to build gtpqos")
	}
	dir := t.TempDir()
	out, err := exec.Command("bash", "../scripts/image.sh", "--context", dir).CombinedOutput()
	noBusybox := false
	if err != nil {
		if _, e := os.Stat(filepath.Join(dir, "gtpqos")); e != nil || !strings.Contains(string(out), "busybox-static") {
			t.Fatalf("scripts/image.sh --context: %v\n%s", err, out)
		}
		noBusybox = true
	}
	bin := filepath.Join(dir, "gtpqos")
	checkStatic(t, bin)
	help, _ := exec.Command(bin, "watch", "-h").CombinedOutput()
	for _, m := range regexp.MustCompile(`"(--[a-z-]+)"`).FindAllStringSubmatch(s, -1) {
		if !strings.Contains(string(help), "  -"+strings.TrimPrefix(m[1], "--")+" ") {
			t.Errorf("entrypoint flag %s: gtpqos watch has no such flag:\n%s", m[1], help)
		}
	}
	if noBusybox {
		t.Skip("busybox not staged (no static busybox here: Debian's busybox-static, make deps)")
	}
	checkStatic(t, filepath.Join(dir, "busybox"))
}

// checkStatic fails unless path is an ELF executable with no program
// interpreter and no shared libraries.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has a program interpreter: not static", path)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v: not static", path, libs)
	}
}

// upfBase stands in for free5gc-compose's docker-compose.yaml: its UPF
// service as that file declares it (name, container name, capability,
// network), without the other network functions.
const upfBase = `version: "3.8"
services:
  free5gc-upf:
    container_name: upf
    image: free5gc/upf:v4.2.3
    command: bash -c "./upf-iptables.sh && ./upf -c ./config/upfcfg.yaml"
    volumes:
      - ./config/upfcfg.yaml:/free5gc/config/upfcfg.yaml
    cap_add:
      - NET_ADMIN
    networks:
      privnet:
        aliases:
          - upf.free5gc.org
networks:
  privnet:
    ipam:
      driver: default
      config:
        - subnet: 10.100.200.0/24
    driver_opts:
      com.docker.network.bridge.name: br-free5gc
`

// composeCommand is docker-compose, or docker's compose plugin.
func composeCommand() []string {
	if p, err := exec.LookPath("docker-compose"); err == nil {
		return []string{p}
	}
	if p, err := exec.LookPath("docker"); err == nil && exec.Command(p, "compose", "version").Run() == nil {
		return []string{p, "compose"}
	}
	return nil
}

// TestComposeMerge has compose itself merge the override onto a stand-in
// for free5gc-compose's file (compose config, which starts nothing): the
// sidecar joins the UPF's namespace, keeps its capabilities, read-only
// root and lock tmpfs, publishes no port, and finds its config where the
// README puts it (gtpqos/watch.yaml in the free5gc-compose checkout).
func TestComposeMerge(t *testing.T) {
	compose := composeCommand()
	if compose == nil {
		t.Skip("needs docker-compose or docker compose")
	}
	dir := t.TempDir()
	base := filepath.Join(dir, "docker-compose.yaml")
	if err := os.WriteFile(base, []byte(upfBase), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "gtpqos"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile("compose/watch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gtpqos", "watch.yaml"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	override, err := filepath.Abs("compose/docker-compose.gtpqos.yaml")
	if err != nil {
		t.Fatal(err)
	}
	run := func(files ...string) ([]byte, error) {
		args := append([]string{}, compose[1:]...)
		for _, f := range files {
			args = append(args, "-f", f)
		}
		cmd := exec.Command(compose[0], append(args, "config")...)
		cmd.Dir = dir
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			err = fmt.Errorf("%s config: %v: %s", strings.Join(compose, " "), err, stderr.String())
		}
		return out, err
	}
	// Alone, the override names a service it does not define: compose
	// must refuse it, or the merge below would prove nothing.
	if _, err := run(override); err == nil {
		t.Error("the override alone passed compose config: network_mode service:free5gc-upf was not resolved")
	}
	out, err := run(base, override)
	if err != nil {
		t.Fatal(err)
	}
	type service struct {
		ContainerName string   `yaml:"container_name"`
		NetworkMode   string   `yaml:"network_mode"`
		User          string   `yaml:"user"`
		CapAdd        []string `yaml:"cap_add"`
		CapDrop       []string `yaml:"cap_drop"`
		ReadOnly      bool     `yaml:"read_only"`
		Tmpfs         any      `yaml:"tmpfs"`
		Ports         []any    `yaml:"ports"`
		Networks      any      `yaml:"networks"`
		Volumes       []any    `yaml:"volumes"`
	}
	var merged struct{ Services map[string]service }
	if err := yaml.Unmarshal(out, &merged); err != nil {
		t.Fatalf("compose config output: %v\n%s", err, out)
	}
	upf, ok := merged.Services["free5gc-upf"]
	if !ok || upf.ContainerName != "upf" || !slices.Equal(upf.CapAdd, []string{"NET_ADMIN"}) || upf.Networks == nil {
		t.Errorf("free5gc-upf after the merge %+v: the override must leave the UPF as it was", upf)
	}
	s, ok := merged.Services["gtpqos"]
	if !ok {
		t.Fatalf("no gtpqos service after the merge:\n%s", out)
	}
	if s.NetworkMode != "service:free5gc-upf" {
		t.Errorf("network_mode %q, want service:free5gc-upf", s.NetworkMode)
	}
	if s.Networks != nil || len(s.Ports) > 0 {
		t.Errorf("networks %v, ports %v: the sidecar has the UPF's namespace and publishes nothing", s.Networks, s.Ports)
	}
	caps := slices.Clone(s.CapAdd)
	want := docCaps()
	slices.Sort(caps)
	slices.Sort(want)
	if !slices.Equal(caps, want) || !slices.Equal(s.CapDrop, []string{"ALL"}) {
		t.Errorf("cap_add %v cap_drop %v, want add %v drop [ALL]", s.CapAdd, s.CapDrop, docCaps())
	}
	if !s.ReadOnly || s.User != "0:0" {
		t.Errorf("read_only %v user %q, want true and 0:0", s.ReadOnly, s.User)
	}
	var tmpfs []string
	switch v := s.Tmpfs.(type) {
	case string:
		tmpfs = []string{v}
	case []any:
		for _, e := range v {
			tmpfs = append(tmpfs, fmt.Sprint(e))
		}
	}
	lock := watch.DefaultConfig().LockDir
	if len(tmpfs) != 1 || (tmpfs[0] != lock && !strings.HasPrefix(tmpfs[0], lock+":")) {
		t.Errorf("tmpfs %v, want one at the lock dir %s", s.Tmpfs, lock)
	}
	// Volumes come back in the short form (docker-compose) or the long
	// one (docker compose); either way the config's source is resolved
	// against the base file's directory.
	mounts := map[string]string{}
	readOnly := map[string]bool{}
	for _, v := range s.Volumes {
		switch v := v.(type) {
		case string:
			parts := strings.Split(v, ":")
			if len(parts) >= 2 {
				mounts[parts[1]] = parts[0]
				readOnly[parts[1]] = len(parts) > 2 && slices.Contains(strings.Split(parts[2], ","), "ro")
			}
		case map[string]any:
			target, _ := v["target"].(string)
			mounts[target], _ = v["source"].(string)
			readOnly[target], _ = v["read_only"].(bool)
		}
	}
	if src, wantSrc := mounts["/etc/gtpqos/watch.yaml"], filepath.Join(dir, "gtpqos", "watch.yaml"); src != wantSrc || !readOnly["/etc/gtpqos/watch.yaml"] {
		t.Errorf("config mount from %q (read-only %v), want %s read-only", src, readOnly["/etc/gtpqos/watch.yaml"], wantSrc)
	}
	if mounts[classify.DefaultPinRoot] != classify.DefaultPinRoot {
		t.Errorf("pin directory mount %q, want the host's %s", mounts[classify.DefaultPinRoot], classify.DefaultPinRoot)
	}
}
