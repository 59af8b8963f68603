package update

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestManaged(t *testing.T) {
	dpkg := t.TempDir()
	os.WriteFile(filepath.Join(dpkg, "subpool.list"), []byte("/.\n/opt/sp/bin\n/opt/sp/bin/subpool\n"), 0o644)
	os.WriteFile(filepath.Join(dpkg, "libc6:amd64.list"), []byte("/lib/x\n"), 0o644)
	cases := []struct{ exe, want string }{
		{"/opt/sp/bin/subpool", "Debian package subpool"},
		{"/usr/bin/subpool", "package manager owns"},
		{"/opt/homebrew/bin/subpool", "brew upgrade"},
		{"/usr/local/Cellar/subpool/1.0/bin/subpool", "brew upgrade"},
		{"/usr/local/bin/subpool", ""},
		{"/home/p/.local/bin/subpool", ""},
		{"/opt/sp/bin/subpool-other", ""},
	}
	for _, c := range cases {
		got := managedBy(c.exe, dpkg)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("managedBy(%q) = %q, want %q", c.exe, got, c.want)
		}
	}
}
