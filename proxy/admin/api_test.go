package admin_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/subpool/subpool/proxy/admin"
	"github.com/subpool/subpool/proxy/api"
)

func errorBody(t *testing.T, res *http.Response) string {
	t.Helper()
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var e api.Error
	if err := json.NewDecoder(res.Body).Decode(&e); err != nil || e.Error == "" {
		t.Fatalf("error body: %v, %+v", err, e)
	}
	if strings.Contains(e.Error, "\n") {
		t.Errorf("error message spans lines: %q", e.Error)
	}
	return e.Error
}

func TestGuard(t *testing.T) {
	e := newEnv(t, 0, nil)
	tests := []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"token", nil, 200},
		{"bearer scheme in any case", map[string]string{"Authorization": "bearer " + token}, 200},
		{"no token", map[string]string{"Authorization": ""}, 401},
		{"wrong token", map[string]string{"Authorization": "Bearer " + strings.ToUpper(token)}, 401},
		{"token prefix", map[string]string{"Authorization": "Bearer " + token[:10]}, 401},
		{"basic auth", map[string]string{"Authorization": "Basic " + token}, 401},
		// The subprotocol form is for websocket handshakes only.
		{"subprotocol on plain GET", map[string]string{"Authorization": "", "Sec-WebSocket-Protocol": "subpool, " + token}, 401},
		{"browser origin", map[string]string{"Origin": "https://evil.example"}, 403},
		{"same-origin page", map[string]string{"Origin": e.srv.URL}, 403},
		{"referer", map[string]string{"Referer": "https://evil.example/x"}, 403},
		{"fetch metadata", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"rebound host", map[string]string{"Host": "evil.example"}, 403},
		{"rebound host with port", map[string]string{"Host": "evil.example:" + e.srv.URL[strings.LastIndex(e.srv.URL, ":")+1:]}, 403},
		{"localhost", map[string]string{"Host": "localhost"}, 200},
		{"ipv6 loopback", map[string]string{"Host": "[::1]:8787"}, 200},
		// Where the request comes from is checked before who sends it.
		{"page without token", map[string]string{"Origin": "https://evil.example", "Authorization": ""}, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.request(t, "GET", "status", "", tt.hdr)
			if res.StatusCode != tt.want {
				t.Fatalf("status %d, want %d", res.StatusCode, tt.want)
			}
			for _, h := range []string{"X-Content-Type-Options", "X-Frame-Options", "Content-Security-Policy"} {
				if res.Header.Get(h) == "" {
					t.Errorf("no %s", h)
				}
			}
			if tt.want == 401 && res.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if tt.want != 200 {
				msg := errorBody(t, res)
				if strings.Contains(msg, token) {
					t.Errorf("message leaks the token: %q", msg)
				}
			}
		})
	}
	n := e.h.Refusals()
	if h, o, a := n.Host.Load(), n.Origin.Load(), n.Auth.Load(); h != 2 || o != 5 || a != 5 {
		t.Errorf("refusals host=%d origin=%d auth=%d, want 2, 5, 5", h, o, a)
	}
}

func TestGuardAllowRemote(t *testing.T) {
	e := newEnv(t, 0, func(o *admin.Options) { o.AllowRemote = true })
	if res := e.request(t, "GET", "status", "", map[string]string{"Host": "box.lan:8787"}); res.StatusCode != 200 {
		t.Errorf("remote host with token: %d", res.StatusCode)
	}
	if res := e.request(t, "GET", "status", "", map[string]string{"Host": "box.lan:8787", "Authorization": ""}); res.StatusCode != 401 {
		t.Errorf("remote host without token: %d", res.StatusCode)
	}
	if res := e.request(t, "GET", "status", "", map[string]string{"Host": "box.lan:8787", "Origin": "http://box.lan:8787"}); res.StatusCode != 403 {
		t.Errorf("remote page: %d", res.StatusCode)
	}
}

func TestGuardEmptyTokenLocksAll(t *testing.T) {
	e := newEnv(t, 0, func(o *admin.Options) { o.Token = "" })
	for _, auth := range []string{"", "Bearer ", "Bearer x"} {
		if res := e.request(t, "GET", "status", "", map[string]string{"Authorization": auth}); res.StatusCode != 401 {
			t.Errorf("Authorization %q: %d, want 401", auth, res.StatusCode)
		}
	}
}

func TestWebsocketAuth(t *testing.T) {
	e := newEnv(t, 0, nil)

	// A client that cannot set headers offers the token as a subprotocol;
	// the server picks "subpool" and never echoes the token.
	d := websocket.Dialer{Subprotocols: []string{admin.Subprotocol, token}}
	c, res, err := d.Dial(e.wsURL(""), nil)
	if err != nil {
		t.Fatalf("subprotocol token: %v", err)
	}
	defer c.Close()
	if c.Subprotocol() != admin.Subprotocol || strings.Contains(fmt.Sprint(res.Header), token) {
		t.Errorf("chosen subprotocol %q, response header %v", c.Subprotocol(), res.Header)
	}
	if ev := readEvent(t, c); ev.Type != api.EventSnapshot {
		t.Errorf("first message %q", ev.Type)
	}

	tests := []struct {
		name   string
		protos []string
		hdr    http.Header
		want   int
	}{
		{"wrong subprotocol token", []string{admin.Subprotocol, "nope"}, nil, 401},
		{"token without the subpool marker", []string{token}, nil, 401},
		{"no token at all", nil, nil, 401},
		{"origin with a good token", nil, http.Header{"Authorization": {"Bearer " + token}, "Origin": {e.srv.URL}}, 403},
		{"origin with a subprotocol token", []string{admin.Subprotocol, token}, http.Header{"Origin": {"https://evil.example"}}, 403},
	}
	for _, tt := range tests {
		d := websocket.Dialer{Subprotocols: tt.protos}
		c, res, err := d.Dial(e.wsURL(""), tt.hdr)
		if err == nil {
			c.Close()
			t.Errorf("%s: connected", tt.name)
			continue
		}
		if res == nil || res.StatusCode != tt.want {
			t.Errorf("%s: %v, want %d", tt.name, err, tt.want)
		}
	}

	if res := e.request(t, "GET", "events", "", nil); res.StatusCode != 400 {
		t.Errorf("events without upgrade: %d, want 400", res.StatusCode)
	}
	if res := e.request(t, "GET", "events?since=abc", "", nil); res.StatusCode != 400 {
		t.Errorf("events?since=abc: %d, want 400", res.StatusCode)
	}
}

// restTests are the admin API's routes as TestREST calls them.
var restTests = []struct {
	name, method, path, body string
	err                      error  // the backend's answer
	want                     int    // status
	call                     string // the backend call, "" for none
	answer                   string // JSON body, "" not checked
}{
	{"status", "GET", "status", "", nil, 200, "", ""},
	{"add", "POST", "credentials", `{"provider":"zai","label":"main","kind":"api_key","secret":{"key":"sk-very-secret"}}`,
		nil, 200, "AddCredential zai main api_key", `{"id":"zai-1"}`},
	{"add refused", "POST", "credentials", `{"provider":"nope","kind":"api_key","secret":{"key":"sk-very-secret"}}`,
		fmt.Errorf("%w: unknown provider nope: add it to config.toml", api.ErrBadRequest), 400, "AddCredential nope  api_key", ""},
	{"add bad json", "POST", "credentials", `{"secret":{"key":"sk-very-secret"`, nil, 400, "", ""},
	{"add two objects", "POST", "credentials", `[1]`, nil, 400, "", ""},
	{"add too big", "POST", "credentials", `{"label":"` + strings.Repeat("x", 2<<20) + `"}`, nil, 413, "", ""},
	{"remove", "DELETE", "credentials/a1", "", nil, 204, "RemoveCredential a1", ""},
	{"remove missing", "DELETE", "credentials/zz", "", nil, 404, "RemoveCredential zz", ""},
	{"pause", "POST", "credentials/a1/pause", "", nil, 204, "Pause a1", ""},
	{"resume", "POST", "credentials/a1/resume", "", nil, 204, "Resume a1", ""},
	{"reset", "POST", "credentials/a1/reset", "", nil, 204, "Reset a1", ""},
	{"reset fails", "POST", "credentials/a1/reset", "", fmt.Errorf("state file: disk full"), 500, "Reset a1", ""},
	{"tools all", "POST", "credentials/a1/tools", `{"other_tools":true}`, nil, 204, "SetOtherTools a1 true", ""},
	{"tools own", "POST", "credentials/a1/tools", `{"other_tools":false}`, nil, 204, "SetOtherTools a1 false", ""},
	{"tools missing", "POST", "credentials/zz/tools", `{"other_tools":true}`, nil, 404, "SetOtherTools zz true", ""},
	{"tools unsaid", "POST", "credentials/a1/tools", `{}`, nil, 400, "", ""},
	{"tools not a bool", "POST", "credentials/a1/tools", `{"other_tools":"yes"}`, nil, 400, "", ""},
	{"tools on a key", "POST", "credentials/a1/tools", `{"other_tools":true}`,
		fmt.Errorf("%w: a1 is an API key, which serves every tool already", api.ErrBadRequest), 400, "SetOtherTools a1 true", ""},
	{"tools wrong method", "GET", "credentials/a1/tools", "", nil, 405, "", ""},
	{"escaped id", "POST", "credentials/a%2F1/pause", "", nil, 404, "Pause a/1", ""},
	{"login", "POST", "login", `{"provider":"anthropic","label":"home"}`, nil, 200, "StartLogin anthropic home",
		`{"provider":"anthropic","url":"https://claude.ai/oauth/authorize?x=1"}`},
	{"login unsupported", "POST", "login", `{"provider":"zai"}`,
		fmt.Errorf("%w: zai has no login; use subpool add-key", api.ErrUnsupported), 501, "StartLogin zai ", ""},
	{"unknown path", "GET", "nope", "", nil, 404, "", ""},
	{"wrong method", "GET", "credentials/a1/pause", "", nil, 405, "", ""},
}

func TestREST(t *testing.T) {
	e := newEnv(t, 0, nil)
	e.backend.Login = api.LoginStart{Provider: "anthropic", URL: "https://claude.ai/oauth/authorize?x=1"}
	e.backend.Err = map[string]error{}
	tests := restTests
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(e.backend.Calls())
			for k := range e.backend.Err {
				delete(e.backend.Err, k)
			}
			if tt.call != "" && tt.err != nil {
				e.backend.Err[strings.Fields(tt.call)[0]] = tt.err
			}
			res := e.request(t, tt.method, tt.path, tt.body, nil)
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.want {
				t.Fatalf("status %d, want %d (%s)", res.StatusCode, tt.want, body)
			}
			calls := e.backend.Calls()[before:]
			if tt.call == "" && len(calls) != 0 || tt.call != "" && (len(calls) != 1 || calls[0] != tt.call) {
				t.Errorf("backend calls %q, want %q", calls, tt.call)
			}
			if strings.Contains(string(body), "sk-very-secret") {
				t.Errorf("response echoes the secret: %s", body)
			}
			if tt.answer != "" && strings.TrimSpace(string(body)) != tt.answer {
				t.Errorf("answer %s, want %s", body, tt.answer)
			}
			if tt.want >= 400 {
				var eb api.Error
				if json.Unmarshal(body, &eb) != nil || eb.Error == "" {
					t.Errorf("error body %s", body)
				}
				if tt.err != nil && tt.want < 500 && !strings.Contains(eb.Error, strings.SplitN(tt.err.Error(), ": ", 2)[1]) {
					t.Errorf("message %q does not carry the backend's %q", eb.Error, tt.err)
				}
			}
			if tt.want == 405 && res.Header.Get("Allow") != "POST" {
				t.Errorf("Allow %q", res.Header.Get("Allow"))
			}
		})
	}
	if got := e.backend.Added(); len(got) != 1 || got[0].Secret["key"] != "sk-very-secret" {
		t.Errorf("backend received %+v", got)
	}
}

// An empty {id} segment matches no route. Served directly: through a
// ServeMux the path would first be cleaned and redirected.
func TestEmptyIDSegment(t *testing.T) {
	e := newEnv(t, 0, nil)
	req := httptest.NewRequest("POST", "http://127.0.0.1:8787"+admin.Prefix+"credentials//pause", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	if rec.Code != 404 || len(e.backend.Calls()) != 0 {
		t.Errorf("status %d, calls %q; want 404 and none", rec.Code, e.backend.Calls())
	}
}
