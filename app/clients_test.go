package app

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/subpool/subpool/daemon"
	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/keychain"
	"github.com/subpool/subpool/proxy/api"
)

// Client keys through the CLI and a real server: one per tool, limited,
// revoked; and a home made by the previous version, with its single key.

func requestWith(t *testing.T, s *daemon.Daemon, key, path, body string) (*http.Response, string) {
	t.Helper()
	return postWith(t, s.Addr(), key, path, body)
}

var keyRE = regexp.MustCompile(`sp-[0-9a-f]{48}`)

func clientList(t *testing.T, home string) []api.ClientStatus {
	t.Helper()
	code, out, errs := cli(t, "", "client", "list", "--json", "--home", home)
	if code != 0 {
		t.Fatalf("client list: %d %s", code, errs)
	}
	var list []api.ClientStatus
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	return list
}

func names(list []api.ClientStatus) string {
	var n []string
	for _, c := range list {
		n = append(n, c.Name)
	}
	return strings.Join(n, ",")
}

func TestHomeOfThePreviousVersionKeepsItsKeyAsDefault(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	// What the previous version left: a client key in the keychain, no
	// clients.json.
	keys, _, err := keychain.Open("file", home)
	if err != nil {
		t.Fatal(err)
	}
	const oldKey = "sp-0123456789abcdef0123456789abcdef0123456789abcdef"
	if err := keys.Set(daemon.ClientKeyName("default"), oldKey); err != nil {
		t.Fatal(err)
	}
	cli(t, keyA, "add-key", "anthropic", "--label", "alpha", "--home", home)
	// Listed as default even before a proxy ran.
	if got := names(clientList(t, home)); got != "default" {
		t.Fatalf("clients %q", got)
	}
	s := startHome(t, home, &logBuf{})
	if resp, body := requestWith(t, s, oldKey, "/v1/messages", `{"model":"claude-sonnet-4-5","messages":[]}`); resp.StatusCode != 200 {
		t.Fatalf("the old key: %d %s", resp.StatusCode, body)
	}
	if got := names(clientList(t, home)); got != "default" {
		t.Fatalf("clients %q", got)
	}
	fin := eventsOf(s, api.EventRequestFinished)
	if len(fin) != 1 || fin[0].Client != "default" {
		t.Errorf("request_finished %+v", fin)
	}
}

func TestClientKeysPerTool(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	cli(t, keyA, "add-key", "anthropic", "--label", "alpha", "--home", home)
	cli(t, keyB, "add-key", "openai", "--label", "bravo", "--home", home)
	// Made with no proxy running…
	code, out, errs := cli(t, "", "client", "add", "claude-code", "--providers", "anthropic", "--home", home)
	ccKey := keyRE.FindString(out)
	if code != 0 || ccKey == "" {
		t.Fatalf("client add: %d %q %q", code, out, errs)
	}
	s := startHome(t, home, &logBuf{})
	// …and with one.
	code, out, errs = cli(t, "", "client", "add", "codex", "--home", home)
	cxKey := keyRE.FindString(out)
	if code != 0 || cxKey == "" {
		t.Fatalf("client add: %d %q %q", code, out, errs)
	}
	if code, _, errs := cli(t, "", "client", "add", "codex", "--home", home); code == 0 || !strings.Contains(errs, "exists") {
		t.Errorf("a second codex: %d %q", code, errs)
	}

	// Limited to anthropic: its OpenAI request is refused, nothing goes up.
	resp, body := requestWith(t, s, ccKey, "/v1/chat/completions", `{"model":"gpt-5","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "claude-code") {
		t.Fatalf("limited key on openai: %d %s", resp.StatusCode, body)
	}
	if n := len(up.Requests()); n != 0 {
		t.Fatalf("%d upstream calls", n)
	}
	if resp, body := requestWith(t, s, cxKey, "/v1/chat/completions", `{"model":"gpt-5","messages":[{"role":"user","content":"hi"}]}`); resp.StatusCode != 200 {
		t.Fatalf("codex: %d %s", resp.StatusCode, body)
	}

	// Status names the clients; events name who asked.
	st, err := adminOf(s).Status(context.Background())
	if err != nil || names(st.Clients) != "default,claude-code,codex" {
		t.Fatalf("status clients %+v %v", st.Clients, err)
	}
	fin := eventsOf(s, api.EventRequestFinished)
	if len(fin) != 2 || fin[0].Client != "claude-code" || fin[1].Client != "codex" {
		t.Errorf("request_finished %+v", fin)
	}

	// Revoked: refused from the next request on.
	if code, _, errs := cli(t, "", "client", "revoke", "codex", "--home", home); code != 0 {
		t.Fatalf("revoke: %s", errs)
	}
	if resp, _ := requestWith(t, s, cxKey, "/v1/chat/completions", `{"model":"gpt-5","messages":[]}`); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("revoked key: %d", resp.StatusCode)
	}
	if ev := eventsOf(s, api.EventClientRevoked); len(ev) != 1 || ev[0].Client != "codex" {
		t.Errorf("client_revoked %+v", ev)
	}
	if ev := eventsOf(s, api.EventClientAdded); len(ev) != 1 || ev[0].Client != "codex" {
		t.Errorf("client_added %+v", ev)
	}
	if code, _, errs := cli(t, "", "client", "revoke", "codex", "--home", home); code == 0 || !strings.Contains(errs, `no client key named "codex"`) {
		t.Errorf("revoke twice: %d %q", code, errs)
	}

	// No key anywhere but the keychain.
	b, _ := os.ReadFile(filepath.Join(home, "clients.json"))
	_, list, _ := cli(t, "", "client", "list", "--home", home)
	stb, _ := json.Marshal(st)
	for _, where := range []string{string(b), list, string(stb)} {
		if keyRE.MatchString(where) {
			t.Errorf("a client key shows: %s", where)
		}
	}
}
