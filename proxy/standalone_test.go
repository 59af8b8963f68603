package proxy_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The engine stands alone (docs/architecture.md): no package under proxy/
// imports one of the module's packages outside proxy/, so none reaches
// internal/ either, directly or through another. Tests are left out: they
// drive the engine against internal/sim.
func TestEngineImportsNothingOutsideProxy(t *testing.T) {
	const module = "github.com/subpool/subpool/"
	fset := token.NewFileSet()
	seen := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		seen++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, module) && p != module+"proxy" && !strings.HasPrefix(p, module+"proxy/") {
				t.Errorf("proxy/%s imports %s: the engine may import only proxy/... of this module", filepath.ToSlash(path), p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 50 {
		t.Fatalf("read %d files under proxy/: the walk missed the engine", seen)
	}
}
