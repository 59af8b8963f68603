package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"go/scanner"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// A 256-stream series of 8 runs cannot tell issue 27's 50 µs from noise
// (two identical bare proxies land up to 700 µs apart in one run), so the
// judge pools the runs of every series measured on the same code. "The
// same code" must survive what does not change the binary's behaviour —
// a comment, a bench-only commit, formatting — and nothing else: the
// fingerprint is the token stream, comments left out, of every Go file the
// headless `subpool serve` build compiles from this module, with go.mod
// and go.sum (the dependencies' versions).

// codeID is the fingerprint of the served binary's code in dir (the
// module root): 12 hex digits.
func codeID(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-deps", "-f",
		`{{if .Module}}{{if .Module.Main}}{{.Dir}}{{"\t"}}{{join .GoFiles " "}}{{end}}{{end}}`, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // the build the bench serves
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list: %v", err)
	}
	h := sha256.New()
	for _, name := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", name, len(b))
		h.Write(b)
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkgDir, files, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		rel, err := filepath.Rel(root, pkgDir)
		if err != nil {
			return "", err
		}
		for _, f := range strings.Fields(files) {
			src, err := os.ReadFile(filepath.Join(pkgDir, f))
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "file %s\n", filepath.ToSlash(filepath.Join(rel, f)))
			h.Write(goTokens(src))
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// goTokens is src as its tokens, one a line, without comments: what the
// compiler reads, whatever the layout. A semicolon before a closing brace
// or parenthesis is left out, written or inserted at a line's end, since
// "{ return 1 }" and the same on three lines are one program.
func goTokens(src []byte) []byte {
	var out bytes.Buffer
	fset := token.NewFileSet()
	var s scanner.Scanner
	s.Init(fset.AddFile("", fset.Base(), len(src)), src, nil, 0) // mode 0: comments skipped
	semicolon := false
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.SEMICOLON {
			semicolon = true
			continue
		}
		if semicolon && tok != token.RBRACE && tok != token.RPAREN {
			out.WriteString(";\n")
		}
		semicolon = false
		out.WriteString(tok.String())
		out.WriteByte(' ')
		out.WriteString(lit)
		out.WriteByte('\n')
	}
	return out.Bytes()
}
