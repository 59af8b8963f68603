package daemon

import (
	"runtime/debug"
	"testing"
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
