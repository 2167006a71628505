// Package layout checks the repository's layout rules: the QoS model and
// the rules-to-flows view stay free of kernel dependencies, and product
// functions stay short enough to read on a screen.
package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// root is the repository's top directory.
func root(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// kernelImports are the packages that talk to the kernel.
var kernelImports = []string{
	"github.com/vishvananda/netlink", "github.com/vishvananda/netns", "github.com/cilium/ebpf",
	"golang.org/x/sys", "github.com/mdlayher/netlink", "github.com/mdlayher/genetlink",
}

// modelPackages must not reach the kernel.
var modelPackages = []string{"./shaper", "./qosview/..."}

// planningPackages are a backend's pure half: the HTB tree's planning,
// incremental state and tc rendering, and the classifier tables they
// build. They must reach neither the kernel nor a process (os/exec), so
// they are tested, and read, without either.
var planningPackages = []string{"./shaper/htb/plan", "./shaper/classify/spec"}

// TestModelHasNoKernelImports fails if the model (package shaper) or
// qosview (its rule model too) depends, directly or not, on a package
// that talks to the kernel.
func TestModelHasNoKernelImports(t *testing.T) {
	for _, pkg := range modelPackages {
		for _, dep := range deps(t, pkg) {
			if k := kernelImport(dep); k != "" {
				t.Errorf("%s depends on %s: the model must not reach the kernel (move that code to a backend)", pkg, dep)
			}
		}
	}
}

// TestPlanningHasNoKernelImports fails if a planning package depends,
// directly or not, on a package that talks to the kernel or runs
// processes: that code belongs to the backend's kernel side (shaper/htb,
// shaper/classify).
func TestPlanningHasNoKernelImports(t *testing.T) {
	for _, pkg := range planningPackages {
		for _, dep := range deps(t, pkg) {
			if kernelImport(dep) != "" || dep == "os/exec" {
				t.Errorf("%s depends on %s: planning must not reach the kernel (move that code to shaper/htb)", pkg, dep)
			}
		}
	}
}

// deps lists pkg and every package it depends on (go list -deps).
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command on PATH")
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg)
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// kernelImport returns the kernel package dep is or lies under, or "".
func kernelImport(dep string) string {
	for _, k := range kernelImports {
		if dep == k || strings.HasPrefix(dep, k+"/") {
			return k
		}
	}
	return ""
}

// maxFuncLines is the longest a product function may be.
const maxFuncLines = 80

// eachProductFile parses every product Go file (tests, generated code and
// the tests/ tree left out) and calls f with its path from the top.
func eachProductFile(t *testing.T, f func(rel string, fset *token.FileSet, file *ast.File)) {
	t.Helper()
	eachGoFile(t, false, f)
}

// eachGoFile parses every Go file of the module but generated ones; with
// tests, test files and the tests/ tree too.
func eachGoFile(t *testing.T, tests bool, f func(rel string, fset *token.FileSet, file *ast.File)) {
	t.Helper()
	top := root(t)
	err := filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(top, path)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || (rel == "tests" && !tests) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || (strings.HasSuffix(path, "_test.go") && !tests) || generated(path) {
			return nil
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		f(rel, fset, file)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFunctionLength fails for product functions longer than maxFuncLines
// (tests, generated code and the tests/ tree are exempt).
func TestFunctionLength(t *testing.T) {
	eachProductFile(t, func(rel string, fset *token.FileSet, f *ast.File) {
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if n > maxFuncLines {
				t.Errorf("%s: func %s is %d lines (max %d): split it along its steps", rel, fn.Name.Name, n, maxFuncLines)
			}
		}
	})
}

// generated reports whether a Go file says it is generated.
func generated(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	head := string(b[:min(len(b), 512)])
	return strings.Contains(head, "Code generated") && strings.Contains(head, "DO NOT EDIT")
}

// issueRef matches a reference to a tracker issue: the word issue (or
// issues) followed by a number, with or without "#".
var issueRef = regexp.MustCompile(`(?i)\bissues?\s*#?[0-9]+`)

// TestNoIssueNumbers fails where code, comments, output strings or docs
// name a tracker issue: users do not know our issue numbers, and the
// repository cites only what is in it. It reads the repository's text
// files (.go, .md, .yaml, shell, Makefile, unit files).
func TestNoIssueNumbers(t *testing.T) {
	top := root(t)
	exts := map[string]bool{".go": true, ".md": true, ".yaml": true, ".yml": true, ".sh": true, ".service": true, ".c": true, ".h": true}
	err := filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "out" {
				return filepath.SkipDir
			}
			return nil
		}
		if !exts[filepath.Ext(path)] && d.Name() != "Makefile" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := issueRef.FindString(line); m != "" {
				rel, _ := filepath.Rel(top, path)
				t.Errorf("%s:%d: %q names a tracker issue: say what is meant instead", rel, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRouteNetlinkOnly fails where code opens a netlink handle without
// naming its families: NewHandle and NewHandleAt given no family list also
// open xfrm and netfilter sockets, which fail where those modules cannot load
// (minimal VMs, containers); gtpqos and its tests, which run in such VMs,
// need route netlink only.
func TestRouteNetlinkOnly(t *testing.T) {
	eachGoFile(t, true, func(rel string, fset *token.FileSet, f *ast.File) {
		name := importName(f, "github.com/vishvananda/netlink")
		if name == "" {
			return
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != name {
				return true
			}
			if (sel.Sel.Name == "NewHandle" && len(call.Args) == 0) || (sel.Sel.Name == "NewHandleAt" && len(call.Args) == 1) {
				t.Errorf("%s:%d: netlink.%s without families: pass unix.NETLINK_ROUTE", rel, fset.Position(call.Pos()).Line, sel.Sel.Name)
			}
			return true
		})
	})
}

// importName is the name f refers to the package at path by (its alias,
// or the path's last element), "" when f does not import it.
func importName(f *ast.File, path string) string {
	for _, im := range f.Imports {
		if strings.Trim(im.Path.Value, "`\"") != path {
			continue
		}
		if im.Name != nil {
			return im.Name.Name
		}
		return path[strings.LastIndex(path, "/")+1:]
	}
	return ""
}
