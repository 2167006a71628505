package vm

import (
	"os"
	"testing"
	"time"
)

// TestVMShaperIntegration runs the HTB backend's netns integration tests on the
// Debian kernel, where cls_fw and fq_codel exist, so the shaper picks the
// fw classifier and fq_codel leaves (the scale test included, with 1,000
// flows instead of 10,000 in the VM). The bound leaves room for a host
// shared with other VMs: 4 minutes of guest time were not enough beside
// two others.
func TestVMShaperIntegration(t *testing.T) {
	RunGoTests(t, "./shaper/htb/", "TestIntegration", nil, 9*time.Minute)
}

// labRateScale is the lab's rate scale in the VM, unless
// GTPQOS_LAB_RATE_SCALE is set on the host. The lab's UPF and gNB are
// user-space processes; under TCG, with the host shared, the guest CPU
// cannot carry the seed's 90 Mbit/s offered load (at 0.5 the aware arm
// reached only 76% of the ceiling with the host loaded), while 0.2 (a
// 6 Mbit/s bottleneck, 18 Mbit/s offered) meets every check with margin.
func labRateScale() string {
	if s := os.Getenv("GTPQOS_LAB_RATE_SCALE"); s != "" {
		return s
	}
	return "0.2"
}

// TestVMLabStaticVsAware runs the lab's static-vs-aware check of the seed
// experiment on the Debian kernel, with rates scaled by labRateScale.
// GTPQOS_VM_LAB_RUN overrides the lab tests run (a -test.run regexp).
func TestVMLabStaticVsAware(t *testing.T) {
	Require(t)
	run := "TestLabSeedStaticVsAware"
	if r := os.Getenv("GTPQOS_VM_LAB_RUN"); r != "" {
		run = r
	}
	scale := labRateScale()
	t.Logf("lab rates scaled by %s in the VM", scale)
	RunGoTests(t, "./lab/", run, map[string]string{"GTPQOS_LAB_RATE_SCALE": scale}, 6*time.Minute)
}

// TestVMGtpuClassifier runs the stock-gtp5g (TEID, QFI) BPF classifier's
// tests (BPF_PROG_TEST_RUN parser cases, map sync, veth datapath) on the
// Debian 6.1 kernel, so the committed objects are known to load and verify
// there too, not only on the host's newer kernel.
func TestVMGtpuClassifier(t *testing.T) {
	RunGoTests(t, "./shaper/classify/gtpu/", "Test", nil, 4*time.Minute)
}
