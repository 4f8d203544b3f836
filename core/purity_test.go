package core_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// forbiddenImports are packages that perform I/O or bring in nondeterminism.
var forbiddenImports = []string{
	"os", "net", "database/sql", "syscall", "log", "math/rand", "crypto/rand",
	"io/ioutil", "io/fs", "unsafe", "runtime", "reflect/unsafe", "plugin",
}

// allowedModules are the only non-standard imports core may use.
var allowedModules = []string{"github.com/fxamacker/cbor/v2"}

// clockCalls are the functions of package time that read or wait on the clock.
var clockCalls = map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "AfterFunc": true, "Tick": true, "NewTimer": true, "NewTicker": true}

// subpackages are core's packages that must be among those checked: the
// walk below finds every package under core/, and this list makes sure it
// did not stop short of the ones we know.
var subpackages = []string{".", "schema", "helpers", "internal/wire"}

// TestCoreIsPure fails if any non-test file of a package under core/
// (coretest excepted, since it is a test helper built on rapid) imports an
// I/O package, anything of shell/, store/ or cmd/, reads the clock or starts
// a goroutine; or if a subpackage of core imports core or coretest (core
// imports its subpackages, never the other way).
func TestCoreIsPure(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	packages := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "coretest" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		checked++
		dir := filepath.ToSlash(filepath.Dir(path))
		packages[dir] = true
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if reason := forbidden(dir, p); reason != "" {
				t.Errorf("%s imports %q: %s", path, p, reason)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: goroutine started at %s", path, fset.Position(n.Pos()))
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "time" && clockCalls[n.Sel.Name] {
					t.Errorf("%s: time.%s at %s reads the clock", path, n.Sel.Name, fset.Position(n.Pos()))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no files checked")
	}
	for _, p := range subpackages {
		if !packages[p] {
			t.Errorf("package core/%s was not checked (checked: %v)", p, packages)
		}
	}
}

// forbidden says why a file of the core package in dir (relative to core/,
// "." for core itself) may not import p, or "" when it may.
func forbidden(dir, p string) string {
	for _, f := range forbiddenImports {
		if p == f || strings.HasPrefix(p, f+"/") {
			return "I/O or nondeterminism is the shell's job"
		}
	}
	const mod = "github.com/stepwise-agent/stepwise/"
	if strings.HasPrefix(p, mod) {
		rest := strings.TrimPrefix(p, mod)
		switch {
		case rest != "core" && !strings.HasPrefix(rest, "core/"):
			return "core must not depend on " + rest
		case rest == "core/coretest":
			return "coretest is for tests; core must not depend on it"
		case dir != "." && rest == "core":
			return "a subpackage of core must not import core: core imports it"
		}
		return ""
	}
	if strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
		for _, m := range allowedModules {
			if p == m || strings.HasPrefix(p, m+"/") {
				return ""
			}
		}
		return "not an allowed dependency of core (see allowedModules)"
	}
	return ""
}

func TestForbiddenCatchesIO(t *testing.T) {
	for _, p := range []string{"os", "os/exec", "net/http", "database/sql", "log/slog", "math/rand/v2", "crypto/rand", "syscall",
		"github.com/stepwise-agent/stepwise/shell", "github.com/stepwise-agent/stepwise/store", "github.com/stepwise-agent/stepwise/cmd/stepwise", "example.com/x"} {
		for _, dir := range subpackages {
			if forbidden(dir, p) == "" {
				t.Errorf("forbidden(%q, %q) allowed it", dir, p)
			}
		}
	}
	for _, p := range []string{"strings", "encoding/json", "crypto/sha256", "github.com/fxamacker/cbor/v2", "regexp", "time",
		"github.com/stepwise-agent/stepwise/core/schema", "github.com/stepwise-agent/stepwise/core/internal/wire"} {
		for _, dir := range subpackages {
			if r := forbidden(dir, p); r != "" {
				t.Errorf("forbidden(%q, %q) = %s", dir, p, r)
			}
		}
	}
	const root = "github.com/stepwise-agent/stepwise/core"
	if forbidden(".", root) != "" || forbidden("schema", root) == "" || forbidden("internal/wire", root) == "" {
		t.Error("only core itself may import core")
	}
	if forbidden(".", root+"/coretest") == "" {
		t.Error("core may import coretest")
	}
}
