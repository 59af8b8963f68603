package codeshape

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// maxBody is the most lines a function or function literal body may span,
// counted from the line of its opening brace to the line of its closing
// one.
const maxBody = 80

// longAllowed are functions allowed over maxBody, by "path name" as long
// reports them; none since issue 46 split the last. An entry must say
// why, and the test fails once it is short again.
var longAllowed = []string{}

// longFunc is a body over maxBody: where it is and how many lines it
// spans.
type longFunc struct {
	key   string // "path name"; a literal is named for its enclosing function, "name.func"
	line  int
	lines int
}

// long lists the bodies over maxBody in one parsed file.
func long(fset *token.FileSet, path string, f *ast.File) []longFunc {
	var out []longFunc
	check := func(name string, body *ast.BlockStmt) {
		if body == nil {
			return
		}
		n := fset.Position(body.Rbrace).Line - fset.Position(body.Lbrace).Line
		if n > maxBody {
			out = append(out, longFunc{key: path + " " + name, line: fset.Position(body.Lbrace).Line, lines: n})
		}
	}
	for _, d := range f.Decls {
		name := "var" // a literal in a package-level declaration
		if fd, ok := d.(*ast.FuncDecl); ok {
			name = fd.Name.Name
			check(name, fd.Body)
		}
		ast.Inspect(d, func(n ast.Node) bool {
			if lit, ok := n.(*ast.FuncLit); ok {
				check(name+".func", lit.Body)
			}
			return true
		})
	}
	return out
}

// moduleLong walks every Go file of the module, tests included.
func moduleLong(t *testing.T, root string) []longFunc {
	t.Helper()
	fset := token.NewFileSet()
	var out []longFunc
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if p != root && (strings.HasPrefix(e.Name(), ".") || e.Name() == "testdata" || e.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out = append(out, long(fset, filepath.ToSlash(rel), f)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// No function or function literal in the module spans more than maxBody
// lines, but those longAllowed; and each of those still does, so the list
// shrinks as they are split.
func TestNoFunctionOver80Lines(t *testing.T) {
	found := moduleLong(t, filepath.Join("..", ".."))
	var seen []string
	for _, l := range found {
		if slices.Contains(longAllowed, l.key) {
			seen = append(seen, l.key)
			continue
		}
		path, name, _ := strings.Cut(l.key, " ")
		t.Errorf("%s:%d: %s spans %d lines, over %d; split it (move table rows or steps into helpers)", path, l.line, name, l.lines, maxBody)
	}
	for _, k := range longAllowed {
		if !slices.Contains(seen, k) {
			t.Errorf("%s is in longAllowed but no longer over %d lines (or gone); take it off the list", k, maxBody)
		}
	}
}

// The measure itself: a body of maxBody lines passes, one more is
// reported, and so is a long function literal, named for where it is.
func TestLongCountsBraceToBrace(t *testing.T) {
	body := func(n int) string { return strings.Repeat("\t_ = 0\n", n-1) }
	src := fmt.Sprintf("package p\n\nfunc fits() {\n%s}\n\nfunc over() {\n%s}\n\nvar lit = func() {\n%s}\n",
		body(maxBody), body(maxBody+1), body(maxBody+1))
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range long(fset, "p.go", f) {
		got = append(got, fmt.Sprintf("%s %d", l.key, l.lines))
	}
	want := []string{fmt.Sprintf("p.go over %d", maxBody+1), fmt.Sprintf("p.go var.func %d", maxBody+1)}
	if !slices.Equal(got, want) {
		t.Errorf("long = %q, want %q", got, want)
	}
}
