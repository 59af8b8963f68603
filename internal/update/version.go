package update

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// semver is a version as releases are tagged (v1.2.3, v1.2.3-rc.1), or as
// `git describe` names a build past a tag (v1.2.3-4-gabcdef0[-dirty]):
// ahead counts the commits past the tag.
type semver struct {
	major, minor, patch int
	pre                 []string
	ahead               int
}

var (
	semverRE   = regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$`)
	describeRE = regexp.MustCompile(`^(.*)-(\d+)-g[0-9a-f]+(?:-dirty)?$`)
)

func parseSemver(s string) (semver, error) {
	var v semver
	if m := describeRE.FindStringSubmatch(s); m != nil {
		s = m[1]
		v.ahead, _ = strconv.Atoi(m[2])
	}
	s = strings.TrimSuffix(s, "-dirty")
	m := semverRE.FindStringSubmatch(s)
	if m == nil {
		return semver{}, fmt.Errorf("%q is not a release version (want v1.2.3)", s)
	}
	v.major, _ = strconv.Atoi(m[1])
	v.minor, _ = strconv.Atoi(m[2])
	v.patch, _ = strconv.Atoi(m[3])
	if m[4] != "" {
		v.pre = strings.Split(m[4], ".")
	}
	return v, nil
}

// Compare orders two versions as semver does (a pre-release sorts before
// its release); a build past a tag sorts after the tag and before the
// next one. An unreadable version (a dev build) is an error.
func Compare(a, b string) (int, error) {
	va, err := parseSemver(a)
	if err != nil {
		return 0, err
	}
	vb, err := parseSemver(b)
	if err != nil {
		return 0, err
	}
	for _, d := range [...]int{va.major - vb.major, va.minor - vb.minor, va.patch - vb.patch, comparePre(va.pre, vb.pre), va.ahead - vb.ahead} {
		if d != 0 {
			return sign(d), nil
		}
	}
	return 0, nil
}

// comparePre is semver's rule 11: no pre-release beats any; fields
// compare numerically when both are numbers, else as text, and numbers
// sort first; a longer list wins a tie.
func comparePre(a, b []string) int {
	switch {
	case len(a) == 0 && len(b) == 0:
		return 0
	case len(a) == 0:
		return 1
	case len(b) == 0:
		return -1
	}
	for i := 0; i < len(a) && i < len(b); i++ {
		na, ea := strconv.Atoi(a[i])
		nb, eb := strconv.Atoi(b[i])
		switch {
		case ea == nil && eb == nil && na != nb:
			return sign(na - nb)
		case ea == nil && eb != nil:
			return -1
		case ea != nil && eb == nil:
			return 1
		case ea != nil && a[i] != b[i]:
			return strings.Compare(a[i], b[i])
		}
	}
	return sign(len(a) - len(b))
}

func sign(d int) int {
	switch {
	case d < 0:
		return -1
	case d > 0:
		return 1
	}
	return 0
}

// Plain is the version without git describe's v prefix, as the release
// files name it (subpool_1.2.3_linux_amd64.tar.gz).
func Plain(v string) string { return strings.TrimPrefix(v, "v") }
