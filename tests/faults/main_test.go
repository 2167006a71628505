package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/free5gc/gtpqos/shaper"
	"github.com/free5gc/gtpqos/shaper/backends"
)

// gtpqosBin is the built binary; buildErr says why there is none.
var (
	gtpqosBin string
	buildErr  error
)

// writerEnv makes the test binary a watch-equivalent writer (see
// runWriter) instead of running tests.
const writerEnv = "GTPQOS_FAULT_WRITER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(writerEnv); spec != "" {
		if err := runWriter(spec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// GTPQOS_FAULTS_BIN runs the tests against another build (an older
	// one, to see which contract it breaks).
	if bin := os.Getenv("GTPQOS_FAULTS_BIN"); bin != "" {
		gtpqosBin = bin
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "gtpqos-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	gtpqosBin, buildErr = build(dir)
	rc := m.Run()
	os.RemoveAll(dir)
	os.Exit(rc)
}

// build builds cmd/gtpqos into dir.
func build(dir string) (string, error) {
	if _, err := exec.LookPath("go"); err != nil {
		return "", fmt.Errorf("needs the go command on PATH to build gtpqos")
	}
	_, file, _, _ := runtime.Caller(0)
	top := filepath.Join(filepath.Dir(file), "..", "..")
	bin := filepath.Join(dir, "gtpqos")
	// No symbol table or DWARF: half the link's time, and the tests
	// never read them.
	cmd := exec.Command("go", "build", "-ldflags=-s -w", "-o", bin, "./cmd/gtpqos")
	cmd.Dir = top
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build gtpqos: %v\n%s", err, out)
	}
	return bin, nil
}

// requireBinary skips (no go command) or fails (the build broke).
func requireBinary(t *testing.T) {
	t.Helper()
	if buildErr != nil {
		if strings.HasPrefix(buildErr.Error(), "needs") {
			t.Skip(buildErr.Error())
		}
		t.Fatal(buildErr)
	}
}

// runWriter is the watch-equivalent writer: in the current network
// namespace it opens dev's backend as `gtpqos watch` does (incremental,
// its pool of spare classes growing in the background, holding the
// device's lock as a watch) and applies each flows file of spec
// ("dev|lockdir|file1,file2,...") in turn, as the daemon applies each
// change: the first file with a full Apply that reads the kernel, each
// next one as an Update of the sessions that changed, which writes its
// delta reading nothing back (a full Apply where the backend asks for
// one).
func runWriter(spec string) error {
	parts := strings.SplitN(spec, "|", 3)
	if len(parts) != 3 {
		return fmt.Errorf("bad %s %q", writerEnv, spec)
	}
	be, err := backends.Open(parts[0], backends.Options{Incremental: true, Writer: "watch", WriterRole: "n3", LockDir: parts[1]})
	if err != nil {
		return err
	}
	defer be.Close()
	ctx := context.Background()
	var prev []shaper.Flow
	for i, f := range strings.Split(parts[2], ",") {
		ff, err := shaper.LoadFlowsFile(f)
		if err != nil {
			return err
		}
		err = shaper.ErrFullApplyNeeded
		if i > 0 {
			_, err = be.Update(ctx, changedSessions(prev, ff.Flows), ff.Policy)
		}
		if errors.Is(err, shaper.ErrFullApplyNeeded) {
			_, err = be.Apply(ctx, ff.Flows, ff.Policy, shaper.ApplyOptions{Strict: true})
		}
		if err != nil {
			return err
		}
		prev = ff.Flows
	}
	fmt.Println("applied")
	return nil
}

// changedSessions returns the flows of every session whose flows differ
// between prev and next (none: the session is gone), as the watch engine
// hands them to Update.
func changedSessions(prev, next []shaper.Flow) map[uint64][]shaper.Flow {
	group := func(fl []shaper.Flow) map[uint64][]shaper.Flow {
		m := map[uint64][]shaper.Flow{}
		for _, f := range fl {
			m[f.ID.SEID] = append(m[f.ID.SEID], f)
		}
		return m
	}
	a, b := group(prev), group(next)
	out := map[uint64][]shaper.Flow{}
	for seid, fl := range b {
		if !slices.Equal(a[seid], fl) {
			out[seid] = fl
		}
	}
	for seid := range a {
		if _, ok := b[seid]; !ok {
			out[seid] = nil
		}
	}
	return out
}
