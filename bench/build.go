package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Built is the subpool binary the overhead phase measures and how it was
// made: the report says which code the numbers are for.
type Built struct {
	Path string `json:"-"`
	How  string `json:"how"`
	Rev  string `json:"revision,omitempty"`
}

// buildSubpool makes the binary a user runs. The working tree is shared
// with people mid-edit, so when it does not compile the last commit is
// exported (git archive, which changes no git state) and built instead;
// the report names which. The headless (CGO_ENABLED=0) build is tried
// first: it takes seconds where the tray build takes minutes cold.
func buildSubpool(ctx context.Context, dir, given string, logf func(string, ...any)) (Built, error) {
	if given != "" {
		p, err := filepath.Abs(given)
		if err != nil {
			return Built{}, err
		}
		if _, err := os.Stat(p); err != nil {
			return Built{}, fmt.Errorf("-bin: %v", err)
		}
		return Built{Path: p, How: "given with -bin " + given}, nil
	}
	bin := filepath.Join(dir, "subpool")
	rev := gitRev(ctx, "HEAD")
	if dirty := gitOut(ctx, "status", "--porcelain", "--untracked-files=no"); dirty != "" {
		rev += "+dirty"
	}
	var why []string
	try := func(src string, cgo bool) bool {
		env := "CGO_ENABLED=1"
		if !cgo {
			env = "CGO_ENABLED=0"
		}
		start := time.Now()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), env)
		out, err := cmd.CombinedOutput()
		if err != nil {
			why = append(why, fmt.Sprintf("%s: %s", env, firstLine(string(out), err)))
			return false
		}
		logf("  built %s (%s, %s)", bin, env, time.Since(start).Round(time.Second))
		return true
	}
	if try(".", false) {
		return Built{Path: bin, How: "working tree, CGO_ENABLED=0 (headless)", Rev: rev}, nil
	}
	logf("  headless build failed (%s); building the tray binary with cgo", why[len(why)-1])
	if try(".", true) {
		return Built{Path: bin, How: "working tree, cgo (tray build)", Rev: rev}, nil
	}
	logf("  the working tree does not compile (%s); building HEAD from git archive", why[len(why)-1])
	src, err := os.MkdirTemp("", "subpool-bench-head-")
	if err != nil {
		return Built{}, err
	}
	defer os.RemoveAll(src)
	arch := exec.CommandContext(ctx, "sh", "-c", "git archive HEAD | tar -x -C "+shellQuote(src))
	if out, err := arch.CombinedOutput(); err != nil {
		return Built{}, fmt.Errorf("git archive HEAD: %s", firstLine(string(out), err))
	}
	head := gitRev(ctx, "HEAD")
	if try(src, false) {
		return Built{Path: bin, How: "HEAD, CGO_ENABLED=0 (the working tree did not compile: " + why[1] + ")", Rev: head}, nil
	}
	if try(src, true) {
		return Built{Path: bin, How: "HEAD, cgo (the working tree did not compile: " + why[1] + ")", Rev: head}, nil
	}
	return Built{}, fmt.Errorf("cannot build subpool: %s", strings.Join(why, "; "))
}

func gitOut(ctx context.Context, args ...string) string {
	out, err := exec.CommandContext(ctx, "git", args...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func gitRev(ctx context.Context, ref string) string {
	return gitOut(ctx, "rev-parse", "--short", ref)
}

// firstLine keeps an error to the compiler's first complaint.
func firstLine(out string, err error) string {
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			return l
		}
	}
	return err.Error()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
