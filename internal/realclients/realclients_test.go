package realclients

import (
	"os"
	"path/filepath"
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
