package update

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// dpkgInfo is where dpkg lists each package's files (PKG.list).
const dpkgInfo = "/var/lib/dpkg/info"

// Managed says how to update exe when a package manager installed it, or
// "" for a tarball or zip install, which `subpool update` may replace: a
// file a package manager owns must change only through it, or its next
// upgrade or removal would trip over a binary it did not put there.
func Managed(exe string) string { return managedBy(exe, dpkgInfo) }

func managedBy(exe, dpkgDir string) string {
	if pkg := dpkgOwner(exe, dpkgDir); pkg != "" {
		return "it belongs to the Debian package " + pkg + "; install the new .deb with `sudo apt install ./subpool_VERSION_amd64.deb`"
	}
	slash := filepath.ToSlash(exe)
	switch {
	case strings.Contains(slash, "/Cellar/") || strings.Contains(slash, "/Caskroom/") || strings.HasPrefix(slash, "/opt/homebrew/"):
		return "Homebrew installed it; run `brew upgrade subpool`"
	case strings.HasPrefix(slash, "/usr/") && !strings.HasPrefix(slash, "/usr/local/"):
		// /usr outside /usr/local is the system's, which rpm and the
		// other package managers own (the FHS).
		return "it is in the system's " + filepath.Dir(exe) + ", which your package manager owns; update the package (e.g. `sudo dnf upgrade subpool`)"
	}
	return ""
}

// dpkgOwner is the package whose file list names exe, or "".
func dpkgOwner(exe, dir string) string {
	lists, _ := filepath.Glob(filepath.Join(dir, "*.list"))
	for _, l := range lists {
		if listed(l, exe) {
			name := strings.TrimSuffix(filepath.Base(l), ".list")
			name, _, _ = strings.Cut(name, ":") // pkg:amd64.list
			return name
		}
	}
	return ""
}

func listed(list, path string) bool {
	f, err := os.Open(list)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if sc.Text() == path {
			return true
		}
	}
	return false
}
