package proxy

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/pool"
)

// withGoogle gives an env the google pool on the sim's Gemini API and
// Code Assist.
func withGoogle(o *Options, _ *sim.Options) {
	o.Providers = map[string]*Provider{
		"google":    {Name: "google", Wire: "gemini", Profile: classify.Lookup("google")},
		"anthropic": {Name: "anthropic", Wire: "anthropic", Profile: classify.Lookup("anthropic")},
	}
}

// geminiKey adds Gemini API keys the sim knows.
func (e *env) geminiKey(ids ...string) {
	for _, id := range ids {
		e.up.AddGoogleKey("AIza-" + id)
		e.auth.secrets[id] = "AIza-" + id
		e.pool.Add(pool.Credential{ID: id, Provider: "google", Label: id, Kind: api.KindAPIKey})
	}
}

// googleLogin adds a Google login the sim knows, with its own project.
func (e *env) googleLogin(id string) (project string) {
	access := "ya29.sim-" + id
	project = e.up.AddGoogleLogin(access, sim.GoogleLogin{Email: id + "@example.com"})
	e.auth.secrets[id] = access
	e.auth.projects[id] = project
	e.pool.Add(pool.Credential{ID: id, Provider: "google", Label: id, Kind: api.KindOAuth})
	return project
}

const geminiBody = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`

// caBody is Gemini CLI's Code Assist request, naming the project another
// login gave it.
func caBody(model string) string {
	return `{"model":"` + model + `","project":"not-this-logins-project","user_prompt_id":"p-1","request":{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"session_id":"s-1"}}`
}

// geminiHeaders are what Gemini CLI sends: its key as x-goog-api-key (API
// mode) or its access token as a bearer (login mode), never x-api-key.
func geminiHeaders(codeAssist bool) []string {
	h := []string{"x-api-key", "", "anthropic-version", "", "User-Agent", "GeminiCLI/0.61.0/gemini-2.5-pro (linux; x64; terminal)"}
	if codeAssist {
		return append(h, "Authorization", "Bearer "+testClientKey)
	}
	return append(h, "x-goog-api-key", testClientKey)
}

// text is the answer text of a Gemini body or stream, in either form.
func geminiText(t *testing.T, body string) string {
	t.Helper()
	var out strings.Builder
	read := func(b []byte) {
		var v struct {
			Candidates []struct {
				Content struct{ Parts []struct{ Text string } }
			}
			Response *struct {
				Candidates []struct {
					Content struct{ Parts []struct{ Text string } }
				}
			}
		}
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("not a Gemini answer: %v: %s", err, b)
		}
		cs := v.Candidates
		if v.Response != nil {
			cs = v.Response.Candidates
		}
		for _, c := range cs {
			for _, p := range c.Content.Parts {
				out.WriteString(p.Text)
			}
		}
	}
	if strings.HasPrefix(strings.TrimSpace(body), "data:") {
		for _, l := range strings.Split(body, "\n") {
			if d, ok := strings.CutPrefix(strings.TrimSpace(l), "data:"); ok {
				read([]byte(strings.TrimSpace(d)))
			}
		}
	} else {
		read([]byte(body))
	}
	return out.String()
}

// Every client form against every credential form: the attempt is sent
// in the credential's form (the sim refuses anything else: a key on Code
// Assist, a login with another's project), and the client reads its own.
func TestGeminiFormsMeetCredentials(t *testing.T) {
	cases := []struct {
		name, cred, path, body string
		codeAssist, stream     bool
	}{
		{"api→key", "key", "/v1beta/models/gemini-2.5-pro:generateContent", geminiBody, false, false},
		{"api stream→key", "key", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse&key=" + testClientKey, geminiBody, false, true},
		{"api→login", "login", "/v1beta/models/gemini-2.5-pro:generateContent", geminiBody, false, false},
		{"api stream→login", "login", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", geminiBody, false, true},
		{"ca→login", "login", "/v1internal:generateContent", caBody("gemini-2.5-pro"), true, false},
		{"ca stream→login", "login", "/v1internal:streamGenerateContent?alt=sse", caBody("gemini-2.5-pro"), true, true},
		{"ca→key", "key", "/v1internal:generateContent", caBody("gemini-2.5-pro"), true, false},
		{"ca stream→key", "key", "/v1internal:streamGenerateContent?alt=sse", caBody("gemini-2.5-pro"), true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, false, withGoogle)
			if c.cred == "key" {
				e.geminiKey("g1")
			} else {
				e.googleLogin("g1")
			}
			hdr := geminiHeaders(c.codeAssist)
			if strings.Contains(c.path, "key=") {
				hdr = append(hdr, "x-goog-api-key", "") // the key in the query only
			}
			resp, body := e.post(c.path, c.body, hdr...)
			if resp == nil || resp.StatusCode != 200 {
				t.Fatalf("status %v: %s", resp, body)
			}
			if got := geminiText(t, body); got == "" {
				t.Errorf("no text in %s", body)
			}
			wrapped := strings.Contains(body, `"response":`)
			if wrapped != c.codeAssist {
				t.Errorf("answer in Code Assist's envelope = %v, want %v: %s", wrapped, c.codeAssist, body)
			}
			if strings.HasPrefix(strings.TrimSpace(body), "data:") != c.stream {
				t.Errorf("stream = %v: %s", !c.stream, body)
			}
			rec := e.up.Requests()
			if len(rec) != 1 {
				t.Fatalf("upstream requests = %d", len(rec))
			}
			r := rec[0]
			if strings.Contains(r.Query, "key=") || strings.Contains(string(r.Body), testClientKey) || r.Header.Get("X-Goog-Api-Key") == testClientKey || strings.Contains(r.Header.Get("Authorization"), testClientKey) {
				t.Errorf("the client key reached the upstream: %s?%s %v", r.Path, r.Query, r.Header)
			}
			if c.stream && !strings.Contains(r.Query, "alt=sse") {
				t.Errorf("stream asked without alt=sse: %q", r.Query)
			}
		})
	}
}

// Code Assist's own calls (the CLI's start) go to a login, never a key,
// and name the answering login's project.
func TestCodeAssistCallsNeedALogin(t *testing.T) {
	e := newEnv(t, false, withGoogle)
	e.geminiKey("k1")
	resp, body := e.post("/v1internal:loadCodeAssist", `{"metadata":{"ideType":"IDE_UNSPECIFIED","platform":"PLATFORM_UNSPECIFIED","pluginType":"GEMINI"}}`, geminiHeaders(true)...)
	if resp.StatusCode == 200 || !strings.Contains(body, "subpool login google") || !strings.Contains(body, `"status":`) {
		t.Errorf("loadCodeAssist with only a key: %d %s", resp.StatusCode, body)
	}
	project := e.googleLogin("l1")
	resp, body = e.post("/v1internal:loadCodeAssist", `{"metadata":{"ideType":"IDE_UNSPECIFIED","platform":"PLATFORM_UNSPECIFIED","pluginType":"GEMINI"}}`, geminiHeaders(true)...)
	if resp.StatusCode != 200 || !strings.Contains(body, project) {
		t.Fatalf("loadCodeAssist with a login: %d %s", resp.StatusCode, body)
	}
	resp, body = e.post("/v1internal:retrieveUserQuota", `{"project":"not-this-logins-project"}`, geminiHeaders(true)...)
	if resp.StatusCode != 200 || !strings.Contains(body, "buckets") {
		t.Errorf("retrieveUserQuota: %d %s", resp.StatusCode, body)
	}
}

// A rate-limited key rotates to the other credential; an overloaded model
// is waited out on the same one.
func TestGeminiRotatesAndWaits(t *testing.T) {
	e := newEnv(t, false, withGoogle)
	e.geminiKey("k1")
	e.googleLogin("l1")
	e.up.Always("AIza-k1", sim.RateLimited("google", 30*time.Second))
	// Whichever the first request takes, within two the key is refused
	// once, rotated from, and left cooling; both are served.
	for i := range 2 {
		resp, body := e.post("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", geminiBody, geminiHeaders(false)...)
		if resp.StatusCode != 200 || geminiText(t, body) == "" || resp.Header.Get("x-subpool-credential") != "l1" {
			t.Fatalf("request %d: %d by %q: %s", i, resp.StatusCode, resp.Header.Get("x-subpool-credential"), body)
		}
	}
	if n := e.up.Calls("AIza-k1"); n != 1 {
		t.Errorf("calls on the rate-limited key = %d, want 1", n)
	}
	if got := len(e.rec.of(api.EventRotated)); got != 1 {
		t.Errorf("rotated events = %d", got)
	}
	if st := e.state("k1"); st.State != api.StateCooling && len(st.Cooldowns) == 0 {
		t.Errorf("k1 is not cooling: %+v", st)
	}
	e2 := newEnv(t, false, withGoogle)
	e2.geminiKey("k1")
	e2.up.Script("AIza-k1", sim.GoogleOverloaded(), sim.GoogleOverloaded())
	r := e2.pump(e2.async(t.Context(), "/v1beta/models/gemini-2.5-pro:generateContent", geminiBody, geminiHeaders(false)...))
	if r.resp == nil || r.resp.StatusCode != 200 {
		t.Fatalf("overload not waited out: %v %s", r.resp, r.body)
	}
	if n := e2.up.Calls("AIza-k1"); n != 3 {
		t.Errorf("calls on the one key = %d, want 3 (two overloaded, then served)", n)
	}
}

// subpool's own refusals are Google-shaped and carry the RetryInfo Gemini
// CLI reads: a wrong client key, and a pool with nothing to serve.
func TestGeminiRefusalsAreGoogleShaped(t *testing.T) {
	e := newEnv(t, false, withGoogle)
	resp, body := e.post("/v1beta/models/gemini-2.5-pro:generateContent", geminiBody, "x-api-key", "", "x-goog-api-key", "wrong")
	var v struct {
		Error struct {
			Code   int
			Status string
		}
	}
	if resp.StatusCode != http.StatusUnauthorized || json.Unmarshal([]byte(body), &v) != nil || v.Error.Status != "UNAUTHENTICATED" {
		t.Errorf("wrong key: %d %s", resp.StatusCode, body)
	}
	resp, body = e.post("/v1beta/models/gemini-2.5-pro:generateContent", geminiBody, geminiHeaders(false)...)
	if resp.StatusCode < 400 || !strings.Contains(body, `"status":"`) || !strings.Contains(body, "subpool") {
		t.Errorf("no credential: %d %s", resp.StatusCode, body)
	}
}

// Gemini CLI gives up on headers after 60 s in its Gemini API mode: a
// cooldown longer than subpool waits for it there is told at once, with
// a RetryInfo the CLI waits out; its login mode, without that limit, is
// waited for as any request.
func TestGeminiAPIWaitsStayUnderTheCLIsHeaderTimeout(t *testing.T) {
	e := newEnv(t, false, withGoogle)
	e.googleLogin("l1")
	e.pool.CoolDown("l1", "", pool.ScopeCredential, 75*time.Second, "429 rate limit")
	resp, body := e.post("/v1beta/models/gemini-2.5-pro:generateContent", geminiBody, geminiHeaders(false)...)
	if resp.StatusCode < 400 || !strings.Contains(body, `"retryDelay":"75s"`) {
		t.Fatalf("Gemini API mode: %d %s", resp.StatusCode, body)
	}
	if !e.fake.Now().Equal(epoch) {
		t.Errorf("the request waited %s", e.fake.Now().Sub(epoch))
	}
	r := e.pump(e.async(t.Context(), "/v1internal:generateContent", caBody("gemini-2.5-pro"), geminiHeaders(true)...))
	if r.resp == nil || r.resp.StatusCode != 200 {
		t.Fatalf("login mode was not waited for: %v %s", r.resp, r.body)
	}
}
