package daemon

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
)

// Config edits the running proxy must not take (issue 43).

// topKeys puts lines above the first table of the home's config.toml.
func topKeys(t *testing.T, home, lines string) {
	t.Helper()
	p := filepath.Join(home, "config.toml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, append([]byte(lines), b...), 0o600); err != nil {
		t.Fatal(err)
	}
}

func writeConfig(t *testing.T, home, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// fromElsewhere posts with a Host that does not name this machine and no
// client key, as a page rebinding evil.com to the loopback would.
func fromElsewhere(t *testing.T, s *Daemon) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+s.addr+"/v1/messages", strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[]}`))
	req.Host = "evil.com"
	req.Header.Set("Content-Type", "application/json")
	req.Close = true
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func rejected(s *Daemon) []api.Event {
	all, _ := s.hub.Since(0)
	var out []api.Event
	for _, e := range all {
		if e.Type == api.EventConfigRejected {
			out = append(out, e)
		}
	}
	return out
}

// allow_remote lets every Host past the guard, so client keys stay
// required whatever the listen address: at start, on a reload of the
// file, and on a reload that turns allow_remote off (which waits for a
// restart) together with the keys (which would not).
func TestAllowRemoteAlwaysNeedsClientKeys(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	topKeys(t, home, "allow_remote = true\nrequire_client_key = false\n")
	if _, err := Start(Options{Home: home, Logf: (&logBuf{}).logf}); err == nil ||
		!strings.Contains(err.Error(), "allow_remote") || !strings.Contains(err.Error(), "require_client_key = true") {
		t.Fatalf("start with allow_remote and no client keys on loopback: %v", err)
	}

	home, _ = newHome(t, up, "")
	topKeys(t, home, "allow_remote = true\n")
	s := startHome(t, home, &logBuf{})
	s.StopWatchingConfig()
	if _, err := s.AddCredential(context.Background(), api.AddCredential{Provider: "anthropic", Label: "a", Kind: api.KindAPIKey,
		Secret: map[string]string{"key": "sk-ant-a"}}); err != nil {
		t.Fatal(err)
	}
	if code := fromElsewhere(t, s); code != http.StatusUnauthorized {
		t.Fatalf("Host evil.com without a key: %d, want 401", code)
	}
	base, err := os.ReadFile(filepath.Join(home, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	rest := strings.TrimPrefix(string(base), "allow_remote = true\n")
	for i, edit := range []string{
		"allow_remote = true\nrequire_client_key = false\n",  // the file refuses itself
		"allow_remote = false\nrequire_client_key = false\n", // allow_remote runs on until a restart
	} {
		writeConfig(t, home, edit+rest)
		res, err := s.Reload(context.Background())
		if err != nil || !strings.Contains(res.Error, "require_client_key") || !strings.Contains(res.Error, "allow_remote") {
			t.Errorf("edit %d (%q): reload %+v %v, want it refused naming both keys", i, edit, res, err)
		}
		if ev := rejected(s); len(ev) != i+1 {
			t.Errorf("edit %d: config_rejected events %+v", i, ev)
		}
		if code := fromElsewhere(t, s); code != http.StatusUnauthorized {
			t.Fatalf("edit %d: Host evil.com without a key: %d, want 401", i, code)
		}
		if !s.LiveConfig().RequireClientKey {
			t.Fatalf("edit %d: the running config stopped requiring client keys", i)
		}
	}
}

// An edit that leaves config.toml empty, or cut short so that it no
// longer sets listen, [keychain] or a provider's keys it set, is refused:
// the running config stays, and the log, a config_rejected event and
// status say why until a reload takes a file (issue 43: an empty file
// was announced as "keychain.backend, listen, providers.* changed but
// take effect at the next start"). Edits of other kinds still apply.
func TestEmptyOrCutShortEditIsRefused(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, addr := newHome(t, up, "[cooldown]\nladder = [\"30s\"]\n")
	logs := &logBuf{}
	s := startHome(t, home, logs)
	s.StopWatchingConfig()
	whole, err := os.ReadFile(filepath.Join(home, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	cut := string(whole[:strings.Index(string(whole), "[providers.openai]")])
	for i, tc := range []struct{ text, want string }{
		{"", "sets no key"},
		{"\n# only a comment\n", "sets no key"},
		{cut, "providers.openai.base_url"},
		{strings.Replace(cut, "[keychain]\nbackend = \"file\"\n", "", 1), "keychain.backend"},
	} {
		writeConfig(t, home, tc.text)
		res, err := s.Reload(context.Background())
		if err != nil || !strings.Contains(res.Error, tc.want) || len(res.Live)+len(res.Restart) != 0 {
			t.Fatalf("edit %d: reload %+v %v, want it refused naming %q", i, res, err, tc.want)
		}
		st, _ := s.Status(context.Background())
		if !strings.Contains(st.ConfigProblem, tc.want) {
			t.Errorf("edit %d: status config_problem %q", i, st.ConfigProblem)
		}
		if ev := rejected(s); len(ev) != i+1 || !strings.Contains(ev[i].Reason, tc.want) {
			t.Errorf("edit %d: config_rejected %+v", i, ev)
		}
		if c := s.LiveConfig(); c.Listen != addr || c.KeychainBackend != "file" || c.Providers["openai"].BaseURL != up.URL() {
			t.Fatalf("edit %d: the running config changed: %+v", i, c)
		}
	}
	if n := strings.Count(logs.String(), "config.toml edit refused"); n != 4 {
		t.Errorf("%d refusals logged, want 4:\n%s", n, logs)
	}

	// The file restored: taken, and status clears.
	writeConfig(t, home, string(whole))
	if res, _ := s.Reload(context.Background()); res.Error != "" {
		t.Fatalf("restored file: %+v", res)
	}
	if st, _ := s.Status(context.Background()); st.ConfigProblem != "" {
		t.Errorf("status still says %q", st.ConfigProblem)
	}
	// A dropped live key and a changed provider are edits, not damage.
	edited := strings.Replace(strings.Replace(string(whole), "ladder = [\"30s\"]\n", "", 1), up.URL()+"\"\n[wait]", "http://127.0.0.1:1\"\n[wait]", 1)
	writeConfig(t, home, edited)
	res, _ := s.Reload(context.Background())
	if res.Error != "" || strings.Join(res.Live, ",") != "cooldown.ladder" || strings.Join(res.Restart, ",") != "providers.openai" {
		t.Fatalf("edit of a live key and a provider: %+v", res)
	}
}
