package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The engine is pure (DESIGN.md §7): replaying events must give the same
// decisions, so nothing under internal/engine may do I/O, read the clock or
// use unseeded randomness. These tests enforce it for every package under
// internal/engine, policies included.

// forbiddenDeps may not appear anywhere in the dependency graph of the
// engine's packages.
var forbiddenDeps = []string{"net", "net/http", "database/sql", "log", "log/slog"}

// forbiddenImports may not be imported by the module's own packages in that
// graph. (os is reachable through fmt, so only a direct import is an error.)
var forbiddenImports = []string{"os", "os/exec", "net", "net/http", "database/sql", "log", "log/slog", "crypto/rand"}

func TestEngineImportsNoIO(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not found")
	}
	// The test runs in internal/engine, so ./... is internal/engine/...;
	// -deps lists the non-test packages and everything they depend on.
	out, err := exec.Command("go", "list", "-e", "-deps",
		"-f", "{{.ImportPath}}\t{{join .Imports \" \"}}", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 5 {
		t.Fatalf("go list listed %d packages:\n%s", len(lines), out)
	}
	for _, problem := range impureDeps(lines) {
		t.Error(problem)
	}
}

const modulePath = "github.com/allot-sched/allot"

// impureDeps checks `go list -deps` lines of the form "path\timports".
func impureDeps(lines []string) []string {
	var out []string
	for _, line := range lines {
		pkg, imports, _ := strings.Cut(line, "\t")
		for _, bad := range forbiddenDeps {
			if pkg == bad {
				out = append(out, bad+" is a dependency of internal/engine")
			}
		}
		if !strings.HasPrefix(pkg, modulePath+"/") {
			continue
		}
		for _, imp := range strings.Fields(imports) {
			for _, bad := range forbiddenImports {
				if imp == bad {
					out = append(out, pkg+" imports "+bad)
				}
			}
		}
	}
	return out
}

func TestImpureDepsFindsViolations(t *testing.T) {
	lines := []string{
		"fmt\terrors io os strconv", // os through fmt is fine
		"os\tsyscall",
		"net\terrors",
		modulePath + "/internal/engine/policy/x\tfmt log",
		modulePath + "/internal/engine\tfmt os sort",
	}
	got := impureDeps(lines)
	want := []string{"net is a dependency of internal/engine",
		modulePath + "/internal/engine/policy/x imports log", modulePath + "/internal/engine imports os"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("flagged %q, want %q", got, want)
	}
}

// clockCalls are the time functions that read the clock or wait on it.
var clockCalls = map[string]bool{"Now": true, "Since": true, "Until": true, "Tick": true, "After": true, "AfterFunc": true, "NewTimer": true, "NewTicker": true, "Sleep": true}

// randConstructors are the math/rand functions that do not touch the global
// source: they build a seeded generator.
var randConstructors = map[string]bool{"New": true, "NewSource": true, "NewPCG": true, "NewChaCha8": true, "NewZipf": true}

func TestEngineSourcesReadNoClockOrGlobalRand(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		files++
		for _, bad := range impureUses(f) {
			t.Errorf("%s: %s", fset.Position(bad.pos), bad.what)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 5 {
		t.Fatalf("scanned %d files; the walk did not find the engine's sources", files)
	}
}

type impureUse struct {
	pos  token.Pos
	what string
}

// impureUses finds references to the clock and the global random source in
// f, resolving the names under which time and math/rand are imported.
func impureUses(f *ast.File) []impureUse {
	names := map[string]string{} // local name → import path
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		switch path {
		case "time", "math/rand", "math/rand/v2":
		default:
			continue
		}
		name := filepath.Base(path)
		if path == "math/rand/v2" {
			name = "rand"
		}
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = path
	}
	var out []impureUse
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		switch path := names[id.Name]; path {
		case "time":
			if clockCalls[sel.Sel.Name] {
				out = append(out, impureUse{sel.Pos(), "time." + sel.Sel.Name + " reads the clock; take the time from the event or Cycle(now)"})
			}
		case "math/rand", "math/rand/v2":
			if !randConstructors[sel.Sel.Name] && ast.IsExported(sel.Sel.Name) && !isRandType(sel.Sel.Name) {
				out = append(out, impureUse{sel.Pos(), path + "." + sel.Sel.Name + " uses the global random source; draw from the engine's seeded generator"})
			}
		}
		return true
	})
	return out
}

// isRandType reports whether name is a type of math/rand, which may be named
// (e.g. *rand.Rand in a struct field).
func isRandType(name string) bool {
	switch name {
	case "Rand", "Source", "Source64", "PCG", "ChaCha8", "Zipf":
		return true
	}
	return false
}

// TestImpurityScannerFindsViolations keeps the scanner honest: it must flag
// each kind of impure use in a sample file and accept the seeded forms.
func TestImpurityScannerFindsViolations(t *testing.T) {
	src := `package p
import (
	"math/rand/v2"
	mr "math/rand"
	clock "time"
)
var r = rand.New(rand.NewPCG(1, 2)) // allowed: seeded
var _ *rand.Rand = r
func f() {
	_ = clock.Now()
	_ = clock.Since(clock.Time{})
	_ = rand.IntN(3)
	mr.Seed(1)
	_ = mr.Intn(2)
	_ = r.IntN(3) // allowed: a method of the seeded generator
	_ = clock.Duration(1)
}`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range impureUses(f) {
		got = append(got, strconv.Itoa(fset.Position(u.pos).Line)+":"+strings.Fields(u.what)[0])
	}
	want := []string{"10:time.Now", "11:time.Since", "12:math/rand/v2.IntN", "13:math/rand.Seed", "14:math/rand.Intn"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("flagged %v, want %v", got, want)
	}
}
