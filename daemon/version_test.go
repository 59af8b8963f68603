package daemon

import (
	"encoding/json"
	"net/http"
	"runtime/debug"
	"testing"

	"github.com/subpool/subpool/internal/sim"
)

func TestVersionBuildFallsBackToVCS(t *testing.T) {
	info := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "7c60725d1f0e2b3c4d5e6f708192a3b4c5d6e7f8"},
		{Key: "vcs.time", Value: "2026-12-07T21:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	got := fillBuild(BuildInfo{Version: "dev"}, info)
	want := BuildInfo{Version: "dev", Commit: "7c60725d1f0e-dirty", Date: "2026-12-07T21:00:00Z"}
	if got != want {
		t.Errorf("from the VCS stamp: %+v, want %+v", got, want)
	}
	stamped := BuildInfo{Version: "0.2.0", Commit: "abc", Date: "2026-12-08T00:00:00Z"}
	if got := fillBuild(stamped, info); got != stamped {
		t.Errorf("-ldflags' values were replaced: %+v", got)
	}
	info.Main.Version = "v0.3.0"
	if got := fillBuild(BuildInfo{Version: "dev"}, info); got.Version != "v0.3.0" {
		t.Errorf("go install's module version not used: %+v", got)
	}
}

// TestVersionInStatus: GET /subpool/v1/status, over HTTP with the admin
// token, names the build as `subpool version` does.
func TestVersionInStatus(t *testing.T) {
	saved := [3]string{Version, Commit, Date}
	t.Cleanup(func() { Version, Commit, Date = saved[0], saved[1], saved[2] })
	Version, Commit, Date = "0.2.0", "7c60725d1f0e", "2026-12-08T00:00:00Z"
	home, _ := newHome(t, startSim(t, sim.Options{}), "")
	s := startHome(t, home, &logBuf{})
	tok, err := ReadAdminToken(home)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+s.Addr()+"/subpool/v1/status", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct{ Version, Commit, Built string }
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d: %v", resp.StatusCode, err)
	}
	if st.Version != "0.2.0" || st.Commit != "7c60725d1f0e" || st.Built != "2026-12-08T00:00:00Z" {
		t.Errorf("status names %+v", st)
	}
}
