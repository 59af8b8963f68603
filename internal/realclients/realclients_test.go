package realclients

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstalled installs the pins (or finds them) and checks every command
// the suite runs is there and executable.
func TestInstalled(t *testing.T) {
	for _, name := range []string{"claude", "codex", "gemini", "opencode"} {
		p, err := Bin(name)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil || fi.Mode()&0o111 == 0 {
			t.Fatalf("%s is not an installed command at %s", name, p)
		}
	}
	for _, p := range Pins {
		d, err := Package(p.Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(d, "package.json")); err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
	}
}

// TestLatestVersions prints each pin beside the registry's newest release
// (make test-latest runs it first, with -v, as its report); without
// SUBPOOL_REALCLIENTS_LATEST it checks that the pins are what is
// installed.
func TestLatestVersions(t *testing.T) {
	if os.Getenv(EnvLatest) != "1" {
		pins, prefix, err := wanted()
		if err != nil || prefix != "" || len(pins) != len(Pins) {
			t.Fatalf("without %s the pins are installed: %v %q", EnvLatest, err, prefix)
		}
		return
	}
	all, err := Newest()
	if err != nil {
		t.Fatal(err)
	}
	moved := 0
	for _, l := range all {
		t.Log(l)
		if l.Pinned != l.Newest {
			moved++
		}
	}
	t.Logf("%d of %d packages moved past their pin", moved, len(all))
	d, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range all {
		b, err := os.ReadFile(filepath.Join(d, "node_modules", filepath.FromSlash(l.Name), "package.json"))
		if err != nil || !strings.Contains(string(b), `"`+l.Newest+`"`) {
			t.Fatalf("%s is not installed at %s in %s", l.Name, l.Newest, d)
		}
	}
}
