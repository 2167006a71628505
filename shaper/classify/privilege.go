package classify

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// capNames are the capabilities gtpqos may need, by number.
var capNames = map[int]string{
	unix.CAP_NET_ADMIN: "CAP_NET_ADMIN",
	unix.CAP_BPF:       "CAP_BPF",
	unix.CAP_PERFMON:   "CAP_PERFMON",
	unix.CAP_SYS_ADMIN: "CAP_SYS_ADMIN",
}

// HasCap reports whether the calling thread's effective set holds c. An
// unreadable set counts as holding it (the kernel's answer then decides).
func HasCap(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return true
	}
	return data[c/32].Effective&(1<<(uint(c)%32)) != 0
}

// MissingCaps returns the names of those of caps the process lacks.
func MissingCaps(caps ...int) []string {
	var out []string
	for _, c := range caps {
		if !HasCap(c) {
			out = append(out, capNames[c])
		}
	}
	return out
}

// BPFCaps are the capabilities loading and attaching a tc BPF program
// needs: CAP_BPF for the map and the program (with
// kernel.unprivileged_bpf_disabled set, as distributions do), and
// CAP_NET_ADMIN for a networking program type and for the filter. CAP_SYS_ADMIN
// includes CAP_BPF.
var BPFCaps = []int{unix.CAP_NET_ADMIN, unix.CAP_BPF}

// bpfPermErr turns the kernel's EPERM for what (a map, a program) into a
// line naming the missing capability; other errors pass through.
func bpfPermErr(what string, err error, caps []int) error {
	if !errors.Is(err, unix.EPERM) {
		return err
	}
	missing := missingForBPF(caps)
	if len(missing) == 0 {
		return fmt.Errorf("%s: the kernel refused it (operation not permitted) though the process holds %s; a security module or kernel.unprivileged_bpf_disabled may forbid it", what, strings.Join(capList(caps), ", "))
	}
	return fmt.Errorf("%s: missing %s (operation not permitted)", what, strings.Join(missing, " and "))
}

// missingForBPF is MissingCaps(caps...) less CAP_BPF where CAP_SYS_ADMIN
// stands in for it.
func missingForBPF(caps []int) []string {
	var missing []string
	for _, n := range MissingCaps(caps...) {
		if n == "CAP_BPF" && HasCap(unix.CAP_SYS_ADMIN) {
			continue
		}
		missing = append(missing, n)
	}
	return missing
}

// NeedBPFCaps fails, in one line naming what is missing, when this process
// could not load and attach tc BPF programs (BPFCaps). Checked before the
// first write: the kernel's refusal would come only after the tree is built.
func NeedBPFCaps() error {
	if missing := missingForBPF(BPFCaps); len(missing) > 0 {
		return fmt.Errorf("missing %s (loading and attaching its BPF programs needs %s)",
			strings.Join(missing, " and "), strings.Join(capList(BPFCaps), " and "))
	}
	return nil
}

func capList(caps []int) []string {
	out := make([]string, len(caps))
	for i, c := range caps {
		out[i] = capNames[c]
	}
	return out
}

// Readier is implemented by classifiers that can tell, before the first
// write, whether this process may install them and a later one adopt them
// (capabilities, pin directory). The error names what is missing.
type Readier interface {
	Ready(dev string) error
}

// DeployCaps are the capabilities gtpqos documents for every command and
// the daemon, whatever the classifier (fw needs only CAP_NET_ADMIN; bpf and
// gtpu also CAP_BPF); the manifests grant GrantCaps. Never CAP_SYS_ADMIN.
var DeployCaps = BPFCaps

// GrantCaps are what the systemd unit, the compose file and the Helm
// sidecar grant: DeployCaps, for every classifier (the gtpu classifier
// needs no CAP_PERFMON, even on Debian 12's 6.1). Never CAP_SYS_ADMIN.
var GrantCaps = DeployCaps

// CapNames returns the capabilities' names as the kernel's headers spell
// them ("CAP_NET_ADMIN").
func CapNames(caps []int) []string { return capList(caps) }
