package app

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/daemon"
	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/events"
)

// writeCreds puts credential records straight into a home, as a past
// `subpool login` would have left them: `tools` and `list` need no secret.
func writeCreds(t *testing.T, home string, recs ...daemon.CredentialRecord) {
	t.Helper()
	if err := daemon.WriteCredentials(home, recs); err != nil {
		t.Fatal(err)
	}
}

func readCreds(t *testing.T, home string) []daemon.CredentialRecord {
	t.Helper()
	recs, err := daemon.ReadCredentials(home)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// With no proxy running, `subpool tools` writes the choice into
// credentials.json, and `subpool list` shows what each credential serves;
// a Claude login opened says what Anthropic bills; bad input is one line.
func TestToolsWithoutProxy(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	now := time.Now().UTC()
	writeCreds(t, home,
		daemon.CredentialRecord{ID: "anthropic-aaaaaa", Provider: "anthropic", Label: "Claude Max", Kind: api.KindOAuth, Added: now},
		daemon.CredentialRecord{ID: "openai-bbbbbb", Provider: "openai", Label: "ChatGPT Pro", Kind: api.KindOAuth, Added: now},
		daemon.CredentialRecord{ID: "anthropic-cccccc", Provider: "anthropic", Label: "work key", Kind: api.KindAPIKey, Added: now})

	serves := func() map[string]string {
		t.Helper()
		code, out, errs := cli(t, "", "list", "--home", home)
		if code != 0 || !strings.Contains(out, "SERVES") {
			t.Fatalf("list: %d %q %q", code, out, errs)
		}
		got := map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			for _, w := range []string{"all tools (opted in)", "all tools", "Claude Code"} {
				if f := strings.Fields(line); len(f) > 0 && strings.Contains(line, "  "+w+"  ") && got[f[0]] == "" {
					got[f[0]] = w
				}
			}
		}
		return got
	}
	if got := serves(); got["anthropic-aaaaaa"] != "Claude Code" || got["openai-bbbbbb"] != "all tools" || got["anthropic-cccccc"] != "all tools" {
		t.Fatalf("list before: %v", got)
	}

	code, out, errs := cli(t, "", "tools", "anthropic-aaaaaa", "all", "--home", home)
	if code != 0 || !strings.Contains(out, "now serves every tool, not only Claude Code") ||
		!strings.Contains(out, "Anthropic bills other tools' use of a Claude subscription as extra usage") {
		t.Fatalf("tools all: %d %q %q", code, out, errs)
	}
	if recs := readCreds(t, home); !recs[0].OtherTools || recs[1].OtherTools || recs[2].OtherTools {
		t.Fatalf("credentials.json after tools all: %+v", recs)
	}
	if got := serves(); got["anthropic-aaaaaa"] != "all tools (opted in)" {
		t.Fatalf("list after: %v", got)
	}
	_, out, _ = cli(t, "", "list", "--json", "--home", home)
	var st api.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if c := st.Providers[0].Credentials[0]; c.OwnTool != api.ToolClaudeCode || !c.OtherTools {
		t.Fatalf("list --json: %+v", c)
	}

	if code, out, _ := cli(t, "", "tools", "anthropic-aaaaaa", "own", "--home", home); code != 0 || !strings.Contains(out, "serves Claude Code only again") {
		t.Fatalf("tools own: %d %q", code, out)
	}
	if recs := readCreds(t, home); recs[0].OtherTools {
		t.Fatalf("credentials.json after tools own: %+v", recs)
	}
	if code, out, _ := cli(t, "", "tools", "openai-bbbbbb", "all", "--home", home); code != 0 || !strings.Contains(out, "serves every tool already") {
		t.Fatalf("tools all on a ChatGPT login: %d %q", code, out)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"tools", "anthropic-aaaaaa"}, 2, "all` or `own"},
		{[]string{"tools", "anthropic-aaaaaa", "some"}, 2, "neither"},
		{[]string{"tools", "nope", "all"}, 1, "subpool list"},
		{[]string{"tools", "anthropic-cccccc", "own"}, 1, "no own tool"},
	} {
		code, _, errs := cli(t, "", append(tc.args, "--home", home)...)
		if code != tc.code || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: %d %q", tc.args, code, errs)
		}
	}
	if code, out, _ := cli(t, "", "tools", "--help"); code != 0 || !strings.Contains(out, "ID|LABEL all|own") || !strings.Contains(out, "extra usage") {
		t.Errorf("tools --help: %d %q", code, out)
	}
}

// addLogin adds a Claude login to a running server, tokens valid an hour.
func addLogin(t *testing.T, s *daemon.Daemon, label string) string {
	t.Helper()
	id, err := s.AddCredential(context.Background(), api.AddCredential{Provider: "anthropic", Label: label, Kind: api.KindOAuth,
		Secret: map[string]string{"access_token": "at-" + label + "-0123456789", "refresh_token": "rt-" + label + "-0123456789",
			"expires_at": time.Now().Add(time.Hour).Format(time.RFC3339)}})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func nextUpdate(t *testing.T, sub *events.Subscription, id string) api.Event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e := <-sub.C():
			if e.Type == api.EventCredentialUpdated && (id == "" || e.CredentialID == id) {
				return e
			}
		case <-timeout:
			t.Fatalf("no credential_updated for %s", id)
		}
	}
}

// With the proxy running, `subpool tools` goes through the admin API and
// holds at once: another tool's request, refused by the Claude login
// before, is served by it; the change is one credential_updated event
// saying so, and survives a restart.
func TestToolsThroughTheProxy(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "[usage]\npoll = \"0\"\n")
	s := startHome(t, home, &logBuf{})
	id := addLogin(t, s, "Claude Max")
	body := `{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`

	// proxyPost sends Go's own User-Agent: a tool other than Claude Code.
	resp, text := proxyPost(t, s, "/v1/messages", body)
	if resp.StatusCode == 200 || !strings.Contains(text, "subpool tools "+id+" all") {
		t.Fatalf("another tool on a closed Claude login: %d %s", resp.StatusCode, text)
	}

	sub, _ := s.Hub().Subscribe(s.Hub().LastID(), 64)
	defer sub.Close()
	if code, out, errs := cli(t, "", "tools", id, "all", "--home", home); code != 0 || !strings.Contains(out, "extra usage") {
		t.Fatalf("tools all: %d %q %q", code, out, errs)
	}
	if e := nextUpdate(t, sub, id); e.Reason != api.ReasonOtherToolsOn {
		t.Fatalf("event %+v", e)
	}
	resp, text = proxyPost(t, s, "/v1/messages", body)
	if resp.StatusCode != 200 || resp.Header.Get("x-subpool-credential") != id {
		t.Fatalf("another tool on the opened login: %d %s", resp.StatusCode, text)
	}
	if !readCreds(t, home)[0].OtherTools {
		t.Fatal("the choice is not in credentials.json")
	}

	// A restart keeps it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	s.Shutdown(ctx)
	cancel()
	s = startHome(t, home, &logBuf{})
	_, out, _ := cli(t, "", "list", "--json", "--home", home)
	var st api.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if c := st.Providers[0].Credentials[0]; !c.OtherTools {
		t.Fatalf("after a restart: %+v", c)
	}

	sub2, _ := s.Hub().Subscribe(s.Hub().LastID(), 64)
	defer sub2.Close()
	if code, out, _ := cli(t, "", "tools", id, "own", "--home", home); code != 0 || strings.Contains(out, "config.toml") {
		t.Fatalf("tools own: %d %q", code, out)
	}
	if e := nextUpdate(t, sub2, id); e.Reason != api.ReasonOtherToolsOff {
		t.Fatalf("event %+v", e)
	}
	if resp, _ := proxyPost(t, s, "/v1/messages", body); resp.StatusCode == 200 {
		t.Fatal("another tool still served by the closed login")
	}
}

// [subscriptions] other_tools opens a login named by label or ID as
// `subpool tools` does, and an edit of it applies live; `tools own` on a
// login the config opens says where it is opened.
func TestSubscriptionsConfigOpensLogins(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "[usage]\npoll = \"0\"\n[subscriptions]\nother_tools = [\"Claude Max\", \"typo\"]\n")
	logs := &logBuf{}
	s := startHome(t, home, logs)
	max := addLogin(t, s, "Claude Max")
	pro := addLogin(t, s, "Claude Pro")
	opened := func() map[string]bool {
		out := map[string]bool{}
		for _, c := range daemonStatus(s).Providers[0].Credentials {
			out[c.ID] = c.OtherTools
		}
		return out
	}
	if o := opened(); !o[max] || o[pro] {
		t.Fatalf("opened %v (max %s, pro %s)", o, max, pro)
	}
	if code, out, _ := cli(t, "", "tools", max, "own", "--home", home); code != 0 || !strings.Contains(out, "[subscriptions] other_tools names it") {
		t.Fatalf("tools own on a login the config opens: %d %q", code, out)
	}
	if o := opened(); !o[max] {
		t.Fatal("the config's opening was undone by tools own")
	}

	sub, _ := s.Hub().Subscribe(s.Hub().LastID(), 64)
	defer sub.Close()
	cfg, _ := os.ReadFile(filepath.Join(home, "config.toml"))
	edited := strings.Replace(string(cfg), `other_tools = ["Claude Max", "typo"]`, `other_tools = ["`+pro+`"]`, 1)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if res, _ := s.Reload(context.Background()); res.Error != "" || len(res.Live) != 1 || res.Live[0] != "subscriptions" {
		t.Fatalf("reload: %+v", res)
	}
	got := map[string]string{}
	for len(got) < 2 {
		e := nextUpdate(t, sub, "")
		got[e.CredentialID] = e.Reason
	}
	if got[max] != api.ReasonOtherToolsOff || got[pro] != api.ReasonOtherToolsOn {
		t.Fatalf("events %v", got)
	}
	if o := opened(); o[max] || !o[pro] {
		t.Fatalf("after the edit: %v", o)
	}
	if !strings.Contains(logs.String(), `other_tools names "typo"`) {
		t.Errorf("no warning about the name that matches nothing:\n%s", logs.String())
	}
}

// A Google login serves Gemini CLI only; opening it says what Google's
// terms say.
func TestToolsGoogleLogin(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	writeCreds(t, home, daemon.CredentialRecord{ID: "google-dddddd", Provider: "google", Label: "Gemini", Kind: api.KindOAuth, Added: time.Now().UTC()})
	code, out, errs := cli(t, "", "list", "--home", home)
	if code != 0 || !strings.Contains(out, "Gemini CLI") {
		t.Fatalf("list: %d %q %q", code, out, errs)
	}
	code, out, errs = cli(t, "", "tools", "google-dddddd", "all", "--home", home)
	if code != 0 || !strings.Contains(out, "now serves every tool, not only Gemini CLI") || !strings.Contains(out, "Gemini Code Assist terms") {
		t.Fatalf("tools all: %d %q %q", code, out, errs)
	}
}
