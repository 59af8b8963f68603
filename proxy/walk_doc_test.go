package proxy_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strings"
	"testing"
)

// docs/architecture.md walks a plain stream file by file, each step's
// heading naming the file and the functions to read in it. The walk must
// match the code, so that it cannot drift as a figure in prose does: every
// file it names declares the functions named with it. And it stays short:
// a newcomer follows a stream in about eight files.
func TestArchitectureWalkMatchesTheCode(t *testing.T) {
	doc, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	start := strings.Index(s, "## The way a request travels")
	end := strings.Index(s, "The rest of the engine root")
	if start < 0 || end < start {
		t.Fatal(`docs/architecture.md has no "The way a request travels" walk`)
	}
	steps := regexp.MustCompile(`(?m)^\d+\. \*\*(.+?)\*\*`).FindAllStringSubmatch(s[start:end], -1)
	if len(steps) == 0 {
		t.Fatal("the walk has no numbered steps")
	}
	names := regexp.MustCompile("`([^`]+)`")
	files := map[string]map[string]bool{}
	for _, st := range steps {
		file := ""
		for _, m := range names.FindAllStringSubmatch(st[1], -1) {
			if strings.HasSuffix(m[1], ".go") {
				file = m[1]
				if files[file] == nil {
					files[file] = declared(t, file)
				}
				continue
			}
			if file == "" {
				t.Errorf("step %q names %s before any file", st[1], m[1])
			} else if !files[file][m[1]] {
				t.Errorf("the walk reads %s in proxy/%s, which declares no such function", m[1], file)
			}
		}
	}
	if len(files) > 9 {
		t.Errorf("the walk reads %d files; the goal is about eight", len(files))
	}
}

// declared is the functions and methods declared in proxy/file.
func declared(t *testing.T, file string) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("the walk names proxy/%s: %v", file, err)
	}
	out := map[string]bool{}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok {
			out[fd.Name.Name] = true
		}
	}
	return out
}
