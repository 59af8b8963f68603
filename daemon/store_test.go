package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A state file that is valid JSON but not understood is reported in one
// line naming it and moved aside, like a corrupt one, instead of being
// dropped without a word and overwritten on stop.
func TestStateNotUnderstoodIsMovedAside(t *testing.T) {
	for _, content := range []string{"null", `{"version":999}`, `{"version":1,"pool":{"version":7}}`, `[1,2]`, `{"version":`} {
		home := t.TempDir()
		path := filepath.Join(home, stateFile)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		var logged []string
		s := newStateStore(home, func(f string, a ...any) { logged = append(logged, f) })
		d := s.load()
		if d.Version != stateVersion {
			t.Errorf("%s: version %d", content, d.Version)
		}
		if len(logged) != 1 || !strings.Contains(logged[0], "moved it to") {
			t.Errorf("%s: logged %q", content, logged)
		}
		if _, err := os.Stat(path); err == nil {
			t.Errorf("%s: the file was left in place, to be overwritten on stop", content)
		}
		aside, _ := filepath.Glob(path + ".corrupt-*")
		if len(aside) != 1 {
			t.Errorf("%s: %d files moved aside", content, len(aside))
		} else if b, _ := os.ReadFile(aside[0]); string(b) != content {
			t.Errorf("%s: moved file holds %q", content, b)
		}
	}
}
