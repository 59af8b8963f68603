package daemon

import (
	"os/exec"
	"strings"
	"testing"
)

// Only app, the composition root, imports the daemon: the tray speaks
// the admin API, and the engine knows nothing of who owns it
// (ARCHITECTURE.md).
func TestOnlyAppImportsDaemon(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool")
	}
	out, err := exec.Command("go", "list", "-e", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "github.com/subpool/subpool/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const self = "github.com/subpool/subpool/daemon"
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		if pkg == self || pkg == "github.com/subpool/subpool/app" {
			continue
		}
		for _, imp := range strings.Fields(imports) {
			if imp == self {
				t.Errorf("%s imports the daemon; only app may", pkg)
			}
		}
	}
}
