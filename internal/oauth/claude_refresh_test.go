package oauth

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/subpool/subpool/internal/sim"
)

// tokenTap sits in front of the simulated token endpoint and keeps the
// client_id and scope of every refresh; refuse, when set, answers a
// refresh with that scope 400 invalid_scope instead of passing it on.
type tokenTap struct {
	mu     sync.Mutex
	sent   [][2]string
	refuse string
}

func (tp *tokenTap) start(t *testing.T, upstream string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var f map[string]string
		json.Unmarshal(b, &f)
		tp.mu.Lock()
		tp.sent = append(tp.sent, [2]string{f["client_id"], f["scope"]})
		refuse := tp.refuse != "" && f["scope"] == tp.refuse
		tp.mu.Unlock()
		if refuse {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"invalid_scope","error_description":"scope not allowed"}`)
			return
		}
		f["client_id"] = AnthropicClientID
		b, _ = json.Marshal(f)
		resp, err := http.Post(upstream+r.URL.Path, r.Header.Get("Content-Type"), bytes.NewReader(b))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Claude Code 2.1.337 refreshes with the clientId and scopes stored in
// .credentials.json and saves the granted scopes back; so does subpool
// for a login imported from it. A login of another client (clientId
// stored) refreshes as that client with its scopes alone; one of Claude
// Code's client with Claude Code's scopes plus the stored grants it keeps,
// and with its stored scopes alone when those are refused.
func TestClaudeRefreshUsesTheStoredClientAndScopes(t *testing.T) {
	wide := AnthropicScope + " user:projects:read"
	for _, c := range []struct {
		name, extra, refuse string
		want                [][2]string
	}{
		{"stored client", `,"clientId":"custom-client"`, "", [][2]string{{"custom-client", "user:inference user:profile user:projects:read"}}},
		{"claude code's client", "", "", [][2]string{{AnthropicClientID, wide}}},
		{"widened scope refused", "", wide, [][2]string{{AnthropicClientID, wide}, {AnthropicClientID, "user:inference user:profile user:projects:read"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, sim.OAuthOptions{})
			tap := &tokenTap{refuse: c.refuse}
			e.anth = Anthropic(tap.start(t, e.oa.URL()) + "/v1/oauth/token")
			dir := filepath.Join(t.TempDir(), ".claude")
			os.Mkdir(dir, 0o700)
			g := e.oa.Grant(sim.Anthropic)
			path := filepath.Join(dir, ".credentials.json")
			doc := `{"claudeAiOauth":{"accessToken":"` + g.Access + `","refreshToken":"` + g.Refresh + `","expiresAt":1,"scopes":["user:inference","user:profile","user:projects:read"],"subscriptionType":"max"` + c.extra + `}}`
			if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			src := Source{Kind: SourceClaudeCode, Path: path, Dir: dir}
			tok, err := src.Read()
			if err != nil {
				t.Fatal(err)
			}
			tok.Scopes, tok.ClientID = "", "" // imported before subpool kept them: the file says
			e.store.toks["imp"] = tok
			if _, err := e.m.Token(guard(t), "imp", e.anth, true); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tap.sent, c.want) {
				t.Fatalf("refreshes sent (client_id, scope) %q, want %q", tap.sent, c.want)
			}
			var f struct {
				OAuth map[string]any `json:"claudeAiOauth"`
			}
			b, _ := os.ReadFile(path)
			json.Unmarshal(b, &f)
			var got []string
			for _, s := range f.OAuth["scopes"].([]any) {
				got = append(got, s.(string))
			}
			if granted := e.store.toks["imp"].Scopes; strings.Join(got, " ") != granted || !slices.Contains(got, scopeInference) {
				t.Fatalf("file's scopes %q, the refresh granted %q", got, granted)
			}
			if c.extra != "" && f.OAuth["clientId"] != "custom-client" {
				t.Fatalf("the stored clientId is gone: %s", b)
			}
		})
	}
}

// claudeRefreshAs follows Claude Code 2.1.337's choice for every kind of
// stored login.
func TestClaudeRefreshAs(t *testing.T) {
	p := Anthropic("")
	for _, c := range []struct {
		name                    string
		tok                     Tokens
		client, scope, fallback string
	}{
		{"nothing stored", Tokens{}, AnthropicClientID, AnthropicScope, ""},
		{"a plan, no scopes", Tokens{Plan: "max"}, AnthropicClientID, AnthropicScope, ""},
		{"claude.ai scopes", Tokens{Scopes: "user:inference user:privacy_consents:write"}, AnthropicClientID, AnthropicScope + " user:privacy_consents:write", "user:inference user:privacy_consents:write"},
		{"console scopes", Tokens{Scopes: "org:create_api_key user:profile"}, AnthropicClientID, "org:create_api_key user:profile", ""},
		{"another client", Tokens{ClientID: "c", Scopes: "user:inference"}, "c", "user:inference", ""},
		{"another client, no scopes", Tokens{ClientID: "c"}, "c", AnthropicScope, ""},
		{"already Claude Code's scopes", Tokens{Scopes: AnthropicScope}, AnthropicClientID, AnthropicScope, ""},
	} {
		client, scope, fallback := claudeRefreshAs(p, c.tok)
		if client != c.client || scope != c.scope || fallback != c.fallback {
			t.Errorf("%s: got (%q, %q, %q), want (%q, %q, %q)", c.name, client, scope, fallback, c.client, c.scope, c.fallback)
		}
	}
}
