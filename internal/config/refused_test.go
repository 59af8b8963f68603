package config

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// Every duration key refuses a negative value, in one line naming it
// (issue 43: capacity_max = "-5m" was taken and turned the wait off). The
// keys are read off DefaultText, so a duration key added there is covered
// without a new row.
func TestNegativeDurationsAreRefusedEverywhere(t *testing.T) {
	value := regexp.MustCompile(`^(\w+)(\s*=\s*\[?)"([^"]*)"`)
	section := ""
	seen := 0
	lines := strings.Split(DefaultText, "\n")
	for i, line := range lines {
		if strings.HasPrefix(line, "[") {
			section = strings.Trim(line, "[]") + "."
			continue
		}
		m := value.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if _, err := time.ParseDuration(m[3]); err != nil {
			continue
		}
		key := section + m[1]
		if strings.Contains(m[2], "[") {
			key += "[0]"
		}
		edited := make([]string, len(lines))
		copy(edited, lines)
		edited[i] = strings.Replace(line, `"`+m[3]+`"`, `"-`+m[3]+`"`, 1)
		seen++
		_, err := Parse("config.toml", []byte(strings.Join(edited, "\n")))
		if err == nil {
			t.Errorf("%s = -%s: accepted", key, m[3])
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "config.toml: "+key+": ") || !strings.Contains(msg, "negative") || strings.Contains(msg, "\n") {
			t.Errorf("%s = -%s: %q, want one line naming the key and saying it is negative", key, m[3], msg)
		}
	}
	// ladder, reset_after, sole_provider_max, capacity_max, transient,
	// header_timeout, poll at least.
	if seen < 7 {
		t.Fatalf("found %d duration keys in DefaultText, want at least 7", seen)
	}
}

// allow_remote lets any Host past the guard, so it needs client keys
// whatever the listen address (issue 43: a loopback listen with
// allow_remote = true and require_client_key = false served Host evil.com
// with no key).
func TestAllowRemoteNeedsClientKeysOnLoopbackToo(t *testing.T) {
	for _, listen := range []string{"127.0.0.1:8787", "[::1]:8787", "localhost:8787", "0.0.0.0:8787"} {
		_, err := Parse("config.toml", []byte("listen = \""+listen+"\"\nallow_remote = true\nrequire_client_key = false\n"))
		if err == nil {
			t.Errorf("listen %s: allow_remote without client keys accepted", listen)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "config.toml: allow_remote: ") || !strings.Contains(msg, "require_client_key = true") || strings.Contains(msg, "\n") {
			t.Errorf("listen %s: %q, want one line naming allow_remote and require_client_key", listen, msg)
		}
	}
	// Either alone is fine on loopback.
	for _, text := range []string{"allow_remote = true\n", "require_client_key = false\n"} {
		if _, err := Parse("config.toml", []byte(text)); err != nil {
			t.Errorf("%q: %v", text, err)
		}
	}
	if err := CheckListen("127.0.0.1:9000", true, false); err == nil {
		t.Error("--listen: allow_remote without client keys accepted on loopback")
	}
}

// A provider named for a path subpool routes itself could never be
// reached (issue 43: v1, v1beta and subpool were accepted).
func TestReservedProviderNamesAreRefused(t *testing.T) {
	for _, name := range []string{"v1", "v1beta", "v1alpha", "v1internal", "v1internal-x", "subpool"} {
		_, err := Parse("config.toml", []byte("[providers."+name+"]\nwire = \"openai\"\nbase_url = \"https://x.example\"\n"))
		if err == nil {
			t.Errorf("provider %q accepted", name)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "config.toml: providers."+name+": ") || !strings.Contains(msg, "another name") {
			t.Errorf("provider %q: %q", name, msg)
		}
	}
	// Names that only look alike are reached at /NAME/... as any other.
	for _, name := range []string{"v2", "v1x", "v1betas", "subpool2", "anthropic-eu", "openai2"} {
		if _, err := Parse("config.toml", []byte("[providers."+name+"]\nwire = \"openai\"\nbase_url = \"https://x.example\"\n")); err != nil {
			t.Errorf("provider %q: %v", name, err)
		}
	}
}

// A start on an empty config.toml is refused: subpool never writes one,
// so it is a file cut short, and starting on it would move to every
// default (the OS keychain, the real upstreams) without a word (issue
// 43). A file of comments alone is a person's, and starts on defaults.
func TestStartOnAnEmptyFileIsRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), FileName)
	for _, text := range []string{"", "\n \n"} {
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p)
		if err == nil || !strings.Contains(err.Error(), "empty") || !strings.Contains(err.Error(), "delete it") {
			t.Errorf("%q: %v, want a refusal saying what to do", text, err)
		}
	}
	if err := os.WriteFile(p, []byte("# all defaults\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := Load(p); err != nil || c.KeychainBackend != "os" {
		t.Errorf("comments only: %v", err)
	}
}

// CutShort's rule, one row per case.
func TestCutShort(t *testing.T) {
	prev := []string{"listen", "keychain.backend", "providers.anthropic.base_url", "cooldown.ladder"}
	for _, tc := range []struct {
		name       string
		next       []string
		skipListen bool
		want       string // "" = an edit
	}{
		{"the same keys", prev, false, ""},
		{"no key", nil, false, "sets no key"},
		{"a provider's key dropped", []string{"listen", "keychain.backend", "cooldown.ladder"}, false, "providers.anthropic.base_url"},
		{"listen dropped", prev[1:], false, "no longer sets listen"},
		{"listen dropped under --listen", prev[1:], true, ""},
		{"a live key dropped", prev[:3], false, ""},
		{"a key added", append(slices.Clone(prev), "providers.zai.base_url"), false, ""},
	} {
		if got := CutShort(prev, tc.next, tc.skipListen); tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := CutShort(nil, nil, false); got != "" {
		t.Errorf("a file that never set anything, still empty: %q", got)
	}
}

// The commented default file cut short at any line, up to the end of its
// last provider, is caught; a cut after that drops only live keys and
// start keys whose defaults stay on this machine.
func TestDefaultFileCutShortIsCaught(t *testing.T) {
	whole, err := Parse("config.toml", []byte(DefaultText))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(DefaultText, "\n")
	lastProvider := 0
	for i, l := range lines {
		if strings.HasPrefix(l, "[providers.") {
			for j := i + 1; j < len(lines) && !strings.HasPrefix(lines[j], "["); j++ {
				if l := strings.TrimSpace(lines[j]); l != "" && !strings.HasPrefix(l, "#") {
					lastProvider = j
				}
			}
		}
	}
	if !strings.Contains(lines[lastProvider], "authorize_url") {
		t.Fatalf("the last provider key is %q, want google's authorize_url", lines[lastProvider])
	}
	for n := 0; n <= lastProvider; n++ {
		cut, err := Parse("config.toml", []byte(strings.Join(lines[:n], "")))
		if err != nil {
			continue // refused as any bad file
		}
		if CutShort(whole.FileKeys(), cut.FileKeys(), false) == "" {
			t.Errorf("cut after line %d (%q): taken as an edit", n, strings.TrimSpace(lines[max(n-1, 0)]))
		}
	}
}
