package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A comment or a layout change leaves the fingerprint as it was; a change
// to the code, however small, moves it.
func TestGoTokensIgnoreCommentsOnly(t *testing.T) {
	base := goTokens([]byte("package p\n\n// why\nfunc f() int { return 1 }\n"))
	same := goTokens([]byte("package p\n/* other words */\nfunc f() int {\n\treturn 1 // still one\n}\n"))
	if string(base) != string(same) {
		t.Errorf("a comment and a line break changed the tokens:\n%s\n%s", base, same)
	}
	other := goTokens([]byte("package p\n\n// why\nfunc f() int { return 2 }\n"))
	if string(base) == string(other) {
		t.Error("1 and 2 gave the same tokens")
	}
}

// The fingerprint of a small module: steady, blind to comments, moved by
// code in a package the main package imports, and not by a package it
// does not.
func TestCodeIDFollowsTheServedCode(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.22\n")
	write("go.sum", "")
	write("main.go", "package main\n\nimport \"example.com/m/lib\"\n\nfunc main() { lib.F() }\n")
	write("lib/lib.go", "package lib\n\nfunc F() int { return 1 }\n")
	write("tool/tool.go", "package tool\n\nfunc G() int { return 1 }\n")
	ctx := context.Background()
	id := func() string {
		t.Helper()
		s, err := codeID(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := id()
	if len(first) != 12 || first != id() {
		t.Fatalf("fingerprint %q, then %q", first, id())
	}
	write("lib/lib.go", "package lib\n\n// F says one.\nfunc F() int {\n\treturn 1\n}\n")
	if got := id(); got != first {
		t.Errorf("a comment moved the fingerprint: %s → %s", first, got)
	}
	write("tool/tool.go", "package tool\n\nfunc G() int { return 2 }\n")
	if got := id(); got != first {
		t.Errorf("a package the binary does not build moved it: %s → %s", first, got)
	}
	write("lib/lib.go", "package lib\n\nfunc F() int { return 2 }\n")
	if got := id(); got == first {
		t.Error("a change in an imported package left the fingerprint as it was")
	}
}
