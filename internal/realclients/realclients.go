// Package realclients installs the real coding clients and SDKs from the npm
// registry, at pinned versions, into a cache shared by every test that runs
// them. The tests that drive Claude Code, Codex, the SDKs and opencode against
// subpool, and the fidelity test that reads the clients' bundled code, find
// them here. A failed install is an error that says what to do: a test that
// needs a client fails with it, never skips.
package realclients

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// Pin is one npm package at the version the suite was written against.
type Pin struct {
	Name    string
	Version string
	// Postinstall is the script, relative to the package, that fetches the
	// platform binary: the install runs with --ignore-scripts, so the
	// packages that need one have it run by name.
	Postinstall string
}

// Pins are the versions the real-client suite and the fidelity test run.
// Raise one here, run make test, and the fidelity test says what moved.
var Pins = []Pin{
	{Name: "@anthropic-ai/claude-code", Version: "2.1.337", Postinstall: "install.cjs"},
	{Name: "@openai/codex", Version: "0.171.0"},
	{Name: "@google/gemini-cli", Version: "0.61.0"},
	{Name: "@anthropic-ai/sdk", Version: "1.17.0"},
	{Name: "openai", Version: "7.60.0"},
	{Name: "opencode-ai", Version: "1.18.33", Postinstall: "postinstall.mjs"},
	// Editor agents that speak Chat Completions (issue 44).
	{Name: "@continuedev/cli", Version: "1.5.47"},
	{Name: "cline", Version: "3.0.65", Postinstall: "postinstall.mjs"},
}

// EnvDir names a directory that already holds the installed clients; when it
// is set nothing is installed.
const EnvDir = "SUBPOOL_REALCLIENTS"

var (
	once    sync.Once
	dir     string
	errOnce error
)

// Dir returns the directory whose node_modules holds every pinned package,
// installing them on first use. Safe for concurrent use, and across test
// processes (go test runs packages in parallel): the install holds a lock.
func Dir() (string, error) {
	once.Do(func() { dir, errOnce = resolve() })
	return dir, errOnce
}

// Package returns the installed directory of the npm package name.
func Package(name string) (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "node_modules", filepath.FromSlash(name)), nil
}

// BundleFiles returns the text of every bundle/*.js file of the installed
// npm package pkg that holds marker. esbuild names a source file in a
// comment where its code begins, and the same code may sit in more than
// one chunk; fidelity tests read protocol facts there.
func BundleFiles(pkg, marker string) ([]string, error) {
	dir, err := Package(pkg)
	if err != nil {
		return nil, err
	}
	files, _ := filepath.Glob(filepath.Join(dir, "bundle", "*.js"))
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if strings.Contains(string(b), marker) {
			out = append(out, string(b))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no file of %s/bundle holds %q; reinstall the real clients, or find where the new release put it", dir, marker)
	}
	return out, nil
}

// Bin returns the path of an installed command (claude, codex, gemini, opencode, cn, cline).
func Bin(name string) (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "node_modules", ".bin", name), nil
}

// Node returns the node binary the clients run on.
func Node() (string, error) {
	p, err := exec.LookPath("node")
	if err != nil {
		return "", errors.New("real clients: node is not installed: apt-get install nodejs npm (make test does)")
	}
	return p, nil
}

func resolve() (string, error) {
	pins, prefix, err := wanted()
	if err != nil {
		return "", err
	}
	if d := os.Getenv(EnvDir); d != "" && prefix == "" {
		if err := check(d, pins); err != nil {
			return "", fmt.Errorf("real clients: %s=%s: %v", EnvDir, d, err)
		}
		return d, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("real clients: no cache directory (%v): set %s to a directory holding them", err, EnvDir)
	}
	d := filepath.Join(cache, "subpool", "realclients", prefix+key(pins))
	if check(d, pins) == nil {
		return d, nil
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", fmt.Errorf("real clients: %v", err)
	}
	unlock, err := lock(filepath.Join(d, ".install.lock"))
	if err != nil {
		return "", fmt.Errorf("real clients: %v", err)
	}
	defer unlock()
	if check(d, pins) == nil { // another test process installed them while we waited
		return d, nil
	}
	if err := install(d, pins); err != nil {
		return "", err
	}
	return d, check(d, pins)
}

// key names the cache directory after the pins, so a changed pin installs
// afresh beside the old set instead of mixing versions.
func key(pins []Pin) string {
	h := sha256.New()
	for _, p := range pins {
		fmt.Fprintf(h, "%s@%s\n", p.Name, p.Version)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// check reports whether d holds every pin at its version, with its
// postinstall done.
func check(d string, pins []Pin) error {
	if _, err := os.Stat(filepath.Join(d, ".installed")); err != nil {
		return errors.New("not installed")
	}
	for _, p := range pins {
		b, err := os.ReadFile(filepath.Join(d, "node_modules", filepath.FromSlash(p.Name), "package.json"))
		if err != nil {
			return fmt.Errorf("%s is missing", p.Name)
		}
		if !strings.Contains(string(b), `"version": "`+p.Version+`"`) && !strings.Contains(string(b), `"version":"`+p.Version+`"`) {
			return fmt.Errorf("%s is not at %s", p.Name, p.Version)
		}
	}
	return nil
}

func install(d string, pins []Pin) error {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return errors.New("real clients: npm is not installed: apt-get install nodejs npm (make test does)")
	}
	if err := os.WriteFile(filepath.Join(d, "package.json"), []byte(`{"name":"subpool-realclients","private":true,"version":"0.0.0"}`+"\n"), 0o644); err != nil {
		return fmt.Errorf("real clients: %v", err)
	}
	args := []string{"install", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"}
	for _, p := range pins {
		args = append(args, p.Name+"@"+p.Version)
	}
	if err := run(d, npm, args...); err != nil {
		return fmt.Errorf("real clients: npm install failed (%v): check that the npm registry is reachable, or set %s to a directory where `npm install %s` was run", err, EnvDir, strings.Join(args[5:], " "))
	}
	node, err := Node()
	if err != nil {
		return err
	}
	for _, p := range pins {
		if p.Postinstall == "" {
			continue
		}
		pd := filepath.Join(d, "node_modules", filepath.FromSlash(p.Name))
		if err := run(pd, node, p.Postinstall); err != nil {
			return fmt.Errorf("real clients: %s's %s failed (%v): run it by hand in %s", p.Name, p.Postinstall, err, pd)
		}
	}
	return os.WriteFile(filepath.Join(d, ".installed"), nil, 0o644)
}

func run(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		last := strings.TrimSpace(string(out))
		if i := strings.LastIndexByte(last, '\n'); i >= 0 {
			last = last[i+1:]
		}
		return fmt.Errorf("%v: %s", err, last)
	}
	return nil
}
