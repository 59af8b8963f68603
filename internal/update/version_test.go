package update

import "testing"

func TestVersionCompare(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"v0.1.0", "v0.2.0", -1},
		{"0.2.0", "v0.2.0", 0},
		{"v1.10.0", "v1.9.9", 1},
		{"v1.0.0-rc.1", "v1.0.0", -1},       // a pre-release before its release
		{"v1.0.0-rc.2", "v1.0.0-rc.10", -1}, // numeric fields compare as numbers
		{"v1.0.0-alpha", "v1.0.0-1", 1},     // numbers sort before text
		{"v1.0.0-rc.1", "v1.0.0-rc.1.1", -1},
		{"v1.0.0+build.5", "v1.0.0", 0},           // build metadata does not count
		{"v0.1.0-3-gabcdef0", "v0.1.0", 1},        // git describe past the tag
		{"v0.1.0-3-gabcdef0-dirty", "v0.1.1", -1}, // ...but before the next
		{"v0.1.0-dirty", "v0.1.0", 0},
	}
	for _, c := range cases {
		got, err := Compare(c.a, c.b)
		if err != nil || got != c.want {
			t.Errorf("Compare(%q, %q) = %d, %v; want %d", c.a, c.b, got, err, c.want)
		}
	}
	for _, bad := range []string{"dev", "abcdef0", "1.2", "v1.2.3.4", ""} {
		if _, err := Compare(bad, "v1.0.0"); err == nil {
			t.Errorf("Compare(%q, v1.0.0) read %q as a version", bad, bad)
		}
	}
}
