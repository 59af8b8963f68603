package sim

import (
	"net/http"
	"strings"
	"time"
)

// Google is the provider shape of the Gemini API and of Code Assist, the
// backend Gemini CLI's "Login with Google" talks to.
const Google = "google"

// Unlike the other providers, Google refuses a secret it never issued: a
// Gemini API key must be added with AddGoogleKey, a Code Assist bearer token
// must belong to a login (AddGoogleLogin, or the OAuth server's tokens).
// Tests of the proxy need that, because the proxy must put the right
// credential (and, for a login, the right project) in.

// GoogleLogin is a Google account logged in to Code Assist. The zero value
// is an onboarded free-tier account with a fresh managed project.
type GoogleLogin struct {
	// Email is the account. Default "user@example.com".
	Email string
	// Project is the Code Assist project (cloudaicompanionProject) that
	// loadCodeAssist hands out and every later call must carry. Default a
	// fresh id such as "sim-project-a1b2c3d4".
	Project string
	// Tier is the user tier id: "free-tier" (default), "standard-tier" or
	// "legacy-tier".
	Tier string
	// Onboard makes the account new to Code Assist: loadCodeAssist offers
	// allowedTiers without a currentTier or project, and onboardUser
	// creates the project (a long-running operation done on its first
	// poll), as for a first login.
	Onboard bool
	// DailyRequests is each model's budget of requests per day, counted
	// per login from its first request and reported by retrieveUserQuota.
	// Over it, the model answers Code Assist's 429 QUOTA_EXHAUSTED until
	// the day ends. Default 1000; negative means unlimited (still counted).
	DailyRequests int
	// Models are the models retrieveUserQuota reports a bucket for, beside
	// any model the login has used. Default googleModels.
	Models []string
}

// googleModels are the models a fresh login reports quota for and GET
// /v1beta/models lists: the ones Gemini CLI 0.61.0 asks for.
var googleModels = []struct {
	id, name, version, description string
	input, output                  int
}{
	{"gemini-2.5-pro", "Gemini 2.5 Pro", "2.5", "Stable release (June 17th, 2025) of Gemini 2.5 Pro", 1048576, 65536},
	{"gemini-2.5-flash", "Gemini 2.5 Flash", "001", "Stable version of Gemini 2.5 Flash, our mid-size multimodal model that supports up to 1 million tokens, released in June of 2025.", 1048576, 65536},
	{"gemini-2.5-flash-lite", "Gemini 2.5 Flash-Lite", "001", "Stable version of Gemini 2.5 Flash-Lite, released in July of 2025", 1048576, 65536},
	{"gemini-3-pro-preview", "Gemini 3 Pro Preview", "3-pro-preview-11-2025", "Gemini 3 Pro Preview", 1048576, 65536},
	{"gemini-3-flash-preview", "Gemini 3 Flash Preview", "3-flash-preview-12-2025", "Gemini 3 Flash Preview", 1048576, 65536},
	{"gemini-3.5-flash", "Gemini 3.5 Flash", "3.5-flash", "Gemini 3.5 Flash", 1048576, 65536},
	{"gemini-3-flash", "Gemini 3 Flash", "3-flash", "Gemini 3 Flash", 1048576, 65536},
	{"gemini-3.1-flash-lite", "Gemini 3.1 Flash-Lite", "3.1-flash-lite", "Gemini 3.1 Flash-Lite", 1048576, 65536},
}

const (
	defaultDailyRequests = 1000
	googleDay            = 24 * time.Hour
)

// googleAuth is what the Server knows of Google identities. It survives
// Reset (it is identity, like the OAuth server's tokens); Reset only
// forgets each login's counts.
type googleAuth struct {
	keys   map[string]bool
	access map[string]*googleToken
}

type googleToken struct {
	login   *googleLogin
	expires time.Time // zero: never
}

// googleLogin is a login's state. Every field is guarded by Server.mu.
type googleLogin struct {
	cfg       GoogleLogin
	sub       string // the account's numeric id (userinfo, id_token)
	onboarded bool
	optIn     bool            // freeTierDataCollectionOptin
	ops       map[string]bool // onboardUser operations: name → polled once
	used      map[string]int  // model → requests in the current day
	dayStart  time.Time
	dayOpen   bool
}

func (s *Server) googleLocked() *googleAuth {
	if s.google == nil {
		s.google = &googleAuth{keys: map[string]bool{}, access: map[string]*googleToken{}}
	}
	return s.google
}

// AddGoogleKey makes key a valid Gemini API key. Any other key is refused
// as Google refuses it: 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
func (s *Server) AddGoogleKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.googleLocked().keys[key] = true
}

// AddGoogleLogin registers a Code Assist login reachable with the bearer
// token access, which never expires, and returns its project. It is the
// login without the OAuth dance; OAuthServer.GrantGoogle issues expiring,
// refreshable tokens for one instead.
func (s *Server) AddGoogleLogin(access string, l GoogleLogin) (project string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gl := s.newGoogleLoginLocked(l)
	s.googleLocked().access[access] = &googleToken{login: gl}
	return gl.cfg.Project
}

func (s *Server) newGoogleLoginLocked(l GoogleLogin) *googleLogin {
	if l.Email == "" {
		l.Email = "user@example.com"
	}
	if l.Project == "" {
		l.Project = "sim-project-" + strings.ToLower(newID(8))
	}
	if l.Tier == "" {
		l.Tier = tierFree
	}
	if l.DailyRequests == 0 {
		l.DailyRequests = defaultDailyRequests
	}
	if len(l.Models) == 0 {
		for _, m := range googleModels {
			l.Models = append(l.Models, m.id)
		}
	}
	sub := "1" + strings.Map(func(r rune) rune { return '0' + r%10 }, newID(20))
	return &googleLogin{cfg: l, sub: sub, onboarded: !l.Onboard, optIn: true, ops: map[string]bool{}, used: map[string]int{}}
}

// addGoogleToken lets access reach gl until expires.
func (s *Server) addGoogleToken(access string, gl *googleLogin, expires time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.googleLocked().access[access] = &googleToken{login: gl, expires: expires}
}

// expireGoogleToken makes access expired from now on; it reports whether
// access was a Google token.
func (s *Server) expireGoogleToken(access string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.googleLocked().access[access]
	if t == nil {
		return false
	}
	t.expires = s.clk.Now()
	return true
}

// googleTokenState is what a bearer token is to Code Assist.
type googleTokenState int

const (
	tokenUnknown googleTokenState = iota
	tokenExpired
	tokenValid
)

func (s *Server) googleToken(access string) (*googleLogin, googleTokenState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.googleLocked().access[access]
	switch {
	case t == nil:
		return nil, tokenUnknown
	case !t.expires.IsZero() && !s.clk.Now().Before(t.expires):
		return t.login, tokenExpired
	}
	return t.login, tokenValid
}

func (s *Server) googleKey(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.googleLocked().keys[key]
}

// resetGoogleLocked forgets every login's counts (Reset).
func (s *Server) resetGoogleLocked() {
	if s.google == nil {
		return
	}
	for _, t := range s.google.access {
		t.login.used = map[string]int{}
		t.login.dayOpen = false
	}
}

// day rolls the login's day forward when it has ended and returns its
// end. The day opens with the first request after the previous one ended,
// so the reset retrieveUserQuota announces is exact. It requires s.mu.
func (gl *googleLogin) day(now time.Time) time.Time {
	if !gl.dayOpen || !now.Before(gl.dayStart.Add(googleDay)) {
		gl.used = map[string]int{}
		gl.dayStart, gl.dayOpen = now, true
	}
	return gl.dayStart.Add(googleDay)
}

// peekDay is day for a reader: a quota poll reports a whole day ahead when
// no day is open, without opening one. It requires s.mu.
func (gl *googleLogin) peekDay(now time.Time) (used map[string]int, end time.Time) {
	if !gl.dayOpen || !now.Before(gl.dayStart.Add(googleDay)) {
		return nil, now.Add(googleDay)
	}
	return gl.used, gl.dayStart.Add(googleDay)
}

// Google routes: the Gemini API under /v1beta/models (and the other
// versions a client can be set to, /v1alpha and /v1) and Code Assist under
// /v1internal. The Code Assist methods are fixed paths (see routes); the
// Gemini API carries the model in the path, so it is matched here.

const (
	geminiPrefix     = "/v1beta/models"
	codeAssistPrefix = "/v1internal"
)

// geminiVersions are the Gemini API's versions. /v1/models is also
// OpenAI's model list, so under /v1 only a model's method
// (/v1/models/M:generateContent) is the Gemini API.
var geminiVersions = []string{geminiPrefix, "/v1alpha/models", "/v1/models"}

// geminiRest splits a Gemini API path into its version's prefix and what
// follows it ("" for the list itself).
func geminiRest(path string) (prefix, rest string, ok bool) {
	for _, p := range geminiVersions {
		if path == p && p != "/v1/models" {
			return p, "", true
		}
		if r, found := strings.CutPrefix(path, p+"/"); found && (p != "/v1/models" || strings.Contains(r, ":")) {
			return p, r, true
		}
	}
	return "", "", false
}

func isGeminiPath(path string) bool {
	_, _, ok := geminiRest(path)
	return ok
}

func isCodeAssistPath(path string) bool {
	return strings.HasPrefix(path, codeAssistPrefix+":") || strings.HasPrefix(path, codeAssistPrefix+"/")
}

// geminiRoute finds the handler of a Gemini API path and the model it
// names ("" for the list).
func geminiRoute(method, path string) (func(*exchange), string) {
	_, rest, ok := geminiRest(path)
	if !ok {
		return nil, ""
	}
	if rest == "" {
		if method == http.MethodGet {
			return (*exchange).geminiModels, ""
		}
		return nil, ""
	}
	model, verb, hasVerb := strings.Cut(rest, ":")
	if model == "" || strings.Contains(model, "/") {
		return nil, ""
	}
	switch {
	case !hasVerb && method == http.MethodGet:
		return (*exchange).geminiModel, model
	case method != http.MethodPost:
		return nil, ""
	case verb == "generateContent":
		return (*exchange).geminiGenerate, model
	case verb == "streamGenerateContent":
		return (*exchange).geminiGenerate, model
	case verb == "countTokens":
		return (*exchange).geminiCountTokens, model
	}
	return nil, ""
}

// codeAssistOperation matches GET /v1internal/{operation name}.
func codeAssistOperation(method, path string) func(*exchange) {
	if method == http.MethodGet && strings.HasPrefix(path, codeAssistPrefix+"/") && len(path) > len(codeAssistPrefix)+1 {
		return (*exchange).codeAssistGetOperation
	}
	return nil
}

// googleMethod is the Code Assist method of x ("generateContent"), "" on
// the Gemini API.
func (x *exchange) googleMethod() string {
	if m, ok := strings.CutPrefix(x.r.URL.Path, codeAssistPrefix+":"); ok {
		return m
	}
	return ""
}

func (x *exchange) codeAssist() bool { return isCodeAssistPath(x.r.URL.Path) }

// googleStreaming reports a streamGenerateContent call; sse whether it asked
// for SSE (alt=sse) rather than Google's JSON array.
func (x *exchange) googleStreaming() (stream, sse bool) {
	stream = strings.HasSuffix(x.r.URL.Path, ":streamGenerateContent")
	return stream, stream && x.r.URL.Query().Get("alt") == "sse"
}

// googleModelRoute reports the routes scripts and quotas apply to: the
// model calls. Code Assist's setup and telemetry methods (loadCodeAssist,
// recordCodeAssistMetrics …) are answered whatever the script says, so a
// step meant for a request is never spent on Gemini CLI's bookkeeping.
func (x *exchange) googleModelRoute() bool {
	if isGeminiPath(x.r.URL.Path) {
		return x.r.Method == http.MethodPost
	}
	switch x.googleMethod() {
	case "generateContent", "streamGenerateContent", "countTokens":
		return true
	}
	return false
}

// googleCharged reports the calls that spend a login's daily requests.
func (x *exchange) googleCharged() bool {
	switch x.googleMethod() {
	case "generateContent", "streamGenerateContent":
		return true
	}
	return false
}

// googleAdmit checks a Google request's credential before any script: a
// key Google never issued, a token it never issued or that has expired,
// and, on Code Assist, a project that is not the login's. It returns the
// refusal's status and body, or 0.
func (x *exchange) googleAdmit() (int, []byte) {
	if !x.codeAssist() {
		switch {
		case !x.s.googleKey(x.cred):
			return http.StatusBadRequest, x.googleKeyInvalid()
		case x.r.Method == http.MethodGet && x.req.Model != "" && !knownGeminiModel(x.req.Model):
			return http.StatusNotFound, x.googleModelNotFound()
		}
		return 0, nil
	}
	gl, state := x.s.googleToken(x.cred)
	switch state {
	case tokenUnknown:
		return http.StatusUnauthorized, x.googleUnauthenticated("ACCESS_TOKEN_TYPE_UNSUPPORTED")
	case tokenExpired:
		return http.StatusUnauthorized, x.googleUnauthenticated("ACCESS_TOKEN_EXPIRED")
	}
	x.login = gl
	if !x.projectChecked() {
		return 0, nil
	}
	x.s.mu.Lock()
	want, ok := gl.cfg.Project, gl.onboarded
	x.s.mu.Unlock()
	if got := x.envelope().Project; !ok || got != want {
		return http.StatusForbidden, x.googlePermissionDenied(got)
	}
	return 0, nil
}

// projectChecked reports the Code Assist methods whose "project" must be
// the login's: everything but the setup calls that discover it, and
// countTokens, whose envelope has none.
func (x *exchange) projectChecked() bool {
	switch x.googleMethod() {
	case "generateContent", "streamGenerateContent", "retrieveUserQuota", "listExperiments",
		"recordCodeAssistMetrics", "fetchAdminControls":
		return true
	}
	return false
}

// googleHeaders are what every Google answer carries, errors included.
func (x *exchange) googleHeaders() {
	h := x.w.Header()
	h.Set("Server", "scaffolding on HTTPServer2")
	h.Set("Server-Timing", "gfet4t7; dur="+itoa(int(x.s.opts.Latency/time.Millisecond)))
	h.Set("Vary", "Origin, X-Origin, Referer")
	h.Set("X-Content-Type-Options", "nosniff")
}
