package vm

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/free5gc/gtpqos/tests/testenv"
)

// TestCPIOWriterExtracts checks the newc archive with GNU cpio: files,
// modes, directories and symlinks come back as written.
func TestCPIOWriterExtracts(t *testing.T) {
	testenv.RequireCmd(t, "cpio")
	var buf bytes.Buffer
	w := newCPIOWriter(&buf)
	w.Dir("bin")
	w.File("bin/tool", 0o755, []byte("#!/bin/sh\necho hi\n"))
	w.File("odd", 0o600, []byte("x")) // forces padding
	w.Symlink("bin/link", "tool")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.Len()%4 != 0 {
		t.Fatalf("archive length %d not 4-aligned", buf.Len())
	}
	dir := t.TempDir()
	cmd := exec.Command("cpio", "-idm", "--quiet", "-H", "newc")
	cmd.Dir, cmd.Stdin = dir, &buf
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cpio -i: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "bin/tool"))
	if err != nil || string(b) != "#!/bin/sh\necho hi\n" {
		t.Fatalf("bin/tool = %q, %v", b, err)
	}
	st, err := os.Stat(filepath.Join(dir, "bin/tool"))
	if err != nil || st.Mode().Perm() != 0o755 {
		t.Fatalf("bin/tool mode %v, %v; want 0755", st.Mode(), err)
	}
	if st, err := os.Stat(filepath.Join(dir, "odd")); err != nil || st.Mode().Perm() != 0o600 || st.Size() != 1 {
		t.Fatalf("odd: %v %v", st, err)
	}
	if l, err := os.Readlink(filepath.Join(dir, "bin/link")); err != nil || l != "tool" {
		t.Fatalf("bin/link -> %q, %v; want tool", l, err)
	}
}
