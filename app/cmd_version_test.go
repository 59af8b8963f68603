package app

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/subpool/subpool/daemon"
)

func TestVersionVerb(t *testing.T) {
	saved := [3]string{daemon.Version, daemon.Commit, daemon.Date}
	t.Cleanup(func() { daemon.Version, daemon.Commit, daemon.Date = saved[0], saved[1], saved[2] })
	daemon.Version, daemon.Commit, daemon.Date = "0.2.0", "7c60725d1f0e", "2026-12-08T00:00:00Z"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errs := cli(t, "", args...)
		if code != 0 || errs != "" {
			t.Fatalf("%v: exit %d, %q", args, code, errs)
		}
		for _, want := range []string{"subpool 0.2.0\n", "commit  7c60725d1f0e\n", "built   2026-12-08T00:00:00Z\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v printed %q, want a line %q", args, out, want)
			}
		}
	}
	code, out, _ := cli(t, "", "version", "--json")
	var got map[string]string
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got["version"] != "0.2.0" || got["commit"] != "7c60725d1f0e" || got["built"] != "2026-12-08T00:00:00Z" {
		t.Errorf("version --json: %d %q", code, out)
	}
	if code, _, errs := cli(t, "", "version", "extra"); code != 2 || !strings.Contains(errs, `unexpected argument "extra"`) {
		t.Errorf("version extra: %d %q", code, errs)
	}
}
