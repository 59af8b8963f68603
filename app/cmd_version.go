package app

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"

	"github.com/subpool/subpool/daemon"
	"github.com/subpool/subpool/internal/update"
)

// versionText is what `subpool version` prints, and what the tray's About
// shows: version, commit, build date, and what kind of build this is.
func versionText() string {
	b := daemon.Build()
	kind := "tray"
	if !trayBuilt {
		kind = "headless"
	}
	s := fmt.Sprintf("subpool %s\ncommit  %s\nbuilt   %s\n%s build, %s %s/%s\n",
		b.Version, orUnknown(b.Commit), orUnknown(b.Date), kind, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if update.Throwaway() {
		s += "key     a throwaway release key (a local make dist): updates only from releases it signed\n"
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func cmdVersion(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	f := newFlags("version", "[--json]", "Prints this build's version, commit and build date.\nExample: subpool version --json")
	asJSON := f.Bool("json", false, "print {version, commit, built} as JSON")
	if code, done := f.parseArgs(args, 0, "", stdout, stderr); done {
		return code
	}
	if *asJSON {
		b := daemon.Build()
		json.NewEncoder(stdout).Encode(map[string]string{"version": b.Version, "commit": b.Commit, "built": b.Date})
		return 0
	}
	fmt.Fprint(stdout, versionText())
	return 0
}
