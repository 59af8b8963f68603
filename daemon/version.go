package daemon

import (
	"runtime/debug"
	"time"
)

// Commit and Date are set by the build beside Version (-ldflags "-X
// …daemon.Commit=… -X …daemon.Date=…"; the Makefile sets all three).
var (
	Commit = ""
	Date   = ""
)

// BuildInfo is what `subpool version`, the tray's About and
// /subpool/v1/status say of this binary.
type BuildInfo struct {
	Version, Commit, Date string
}

// Build is this binary's version, commit and build date. What -ldflags
// did not set comes from the VCS stamp `go build` records in a checkout
// (vcs.revision, vcs.time, vcs.modified), so a plain `go build` or `go
// install` still names its commit.
func Build() BuildInfo {
	b := BuildInfo{Version: Version, Commit: Commit, Date: Date}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	return fillBuild(b, info)
}

func fillBuild(b BuildInfo, info *debug.BuildInfo) BuildInfo {
	vcs := map[string]string{}
	for _, s := range info.Settings {
		vcs[s.Key] = s.Value
	}
	if b.Commit == "" {
		b.Commit = vcs["vcs.revision"]
		if len(b.Commit) > 12 {
			b.Commit = b.Commit[:12]
		}
		if b.Commit != "" && vcs["vcs.modified"] == "true" {
			b.Commit += "-dirty"
		}
	}
	if b.Date == "" {
		if t, err := time.Parse(time.RFC3339, vcs["vcs.time"]); err == nil {
			b.Date = t.UTC().Format(time.RFC3339) // the commit's time: no build date was stamped
		}
	}
	if b.Version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		b.Version = info.Main.Version // go install …@v1.2.3
	}
	return b
}
