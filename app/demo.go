package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/subpool/subpool/daemon"
	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/keychain"
	"github.com/subpool/subpool/proxy/api"
)

// demoCred is one made-up credential; its secret only ever reaches the
// simulated upstream. Logins (oauth) get their tokens from the simulated
// OAuth server, and are refreshed by the same code as real ones.
type demoCred struct {
	provider, label, key string // key: "" for a login
}

var demoCreds = []demoCred{
	{"anthropic", "claude-max", ""},
	{"anthropic", "claude-pro", ""},
	{"anthropic", "anthropic-key", "demo-anthropic-key"},
	{"openai", "chatgpt-pro", ""},
	{"openai", "openai-key", "demo-openai-key"},
	{"google", "google-ai-pro", ""},
	{"google", "gemini-key", "demo-gemini-key"},
}

// demoConfig shortens every wait so a person sees cooldowns start and end
// within a minute.
//
// Model requests go through the OAuth server too, which hands them to the
// sim after checking the access token: that is how a login's death (its
// token expired, its refresh token revoked) reaches the proxy as a 401.
func demoConfig(oauthURL, listen string) config.Config {
	cfg := config.Default()
	cfg.Listen = listen
	for _, name := range []string{config.Anthropic, config.OpenAI, config.Google} {
		p := cfg.Providers[name]
		p.BaseURL = oauthURL
		switch name {
		case config.Anthropic:
			// The sim's login pages, so a demo login never opens the
			// real provider's (issue 42).
			p.AuthorizeURL = oauthURL + "/cai/oauth/authorize"
			p.TokenURL = oauthURL + "/v1/oauth/token"
			p.UsageURL = oauthURL + "/api/oauth/usage"
		case config.OpenAI:
			p.AuthorizeURL = oauthURL + "/oauth/authorize"
			p.ChatGPTBaseURL = oauthURL + "/backend-api/codex"
			p.TokenURL = oauthURL + "/oauth/token"
			p.UsageURL = oauthURL + "/backend-api/wham/usage"
		case config.Google:
			// One server answers the Gemini API (keys), Code Assist (the
			// login) and Google's token endpoint.
			p.CodeAssistURL = oauthURL
			p.AuthorizeURL = oauthURL + "/o/oauth2/v2/auth"
			p.TokenURL = oauthURL + "/token"
			p.UsageURL = oauthURL + "/v1internal:retrieveUserQuota"
		}
		cfg.Providers[name] = p
	}
	cfg.Ladder = []time.Duration{5 * time.Second, 10 * time.Second, 30 * time.Second}
	cfg.ResetAfter = time.Minute
	cfg.SoleProviderMax = 10 * time.Second
	cfg.CapacityMax = 20 * time.Second
	cfg.TransientBackoff = []time.Duration{250 * time.Millisecond, 750 * time.Millisecond}
	// claude-max fills its 5h window to this reserve within a minute and
	// is held back until the window resets (demoWindows).
	cfg.Usage.Reserve = 10
	// Google's answers carry no usage: a Google login's day is only
	// known by asking, so the demo asks often enough for its bars to move.
	cfg.Usage.Poll = 10 * time.Second
	return cfg
}

// demo is a running demo: simulated upstreams, the proxy, and traffic.
type demo struct {
	sim    *sim.Server
	oauth  *sim.OAuthServer
	srv    *daemon.Daemon
	keys   keychain.Store
	ids    map[string]string // label → credential id
	client *http.Client
	// home holds what verbs need to reach the demo, its keychain file and
	// its history.db; cleared on Close.
	home *demoHome
	// armed is the access token each login's windows were set on: the sim
	// knows a login by its token, which a refresh replaces.
	armed map[string]string
}

// startDemo starts a demo in a new temp home.
func startDemo(listen string, logf func(string, ...any)) (*demo, error) {
	return startDemoAt(listen, "", logf)
}

// startDemoAt starts a demo on listen in home (see openDemoHome; "" is a
// new temp folder).
func startDemoAt(listen, home string, logf func(string, ...any)) (*demo, error) {
	h, err := openDemoHome(home)
	if err != nil {
		return nil, err
	}
	d, err := startDemoIn(listen, h, logf)
	if err != nil {
		h.Close()
	}
	return d, err
}

func startDemoIn(listen string, h *demoHome, logf func(string, ...any)) (*demo, error) {
	// NoRecords: the demo runs for hours and never reads the sim's records,
	// which held every request's headers and body (issue 42: the headless
	// demo grew 6.5 MiB in ten minutes).
	up := sim.New(sim.Options{Latency: 150 * time.Millisecond, Chunks: 8, ChunkInterval: 60 * time.Millisecond,
		ChunkText: "pooled ", NoRecords: true})
	if err := up.Start(); err != nil {
		return nil, fmt.Errorf("cannot start the simulated upstreams: %v", err)
	}
	oa := up.OAuth(sim.OAuthOptions{Email: "demo@example.com", Plan: "max"})
	if err := oa.Start(); err != nil {
		up.Close()
		return nil, fmt.Errorf("cannot start the simulated OAuth server: %v", err)
	}
	cfg := demoConfig(oa.URL(), listen)
	keys, err := h.keys()
	if err != nil {
		oa.Close()
		up.Close()
		return nil, fmt.Errorf("cannot open the demo's keychain: %v", err)
	}
	s, err := daemon.Start(daemon.Options{Config: &cfg, Keys: keys, Logf: logf, HistoryHome: h.dir})
	if err != nil {
		oa.Close()
		up.Close()
		return nil, err
	}
	d := &demo{sim: up, oauth: oa, srv: s, keys: keys, ids: map[string]string{}, client: &http.Client{Timeout: time.Minute},
		armed: map[string]string{}, home: h}
	if err := h.publish(cfg, s.Addr(), s.AdminToken()); err != nil {
		d.Close()
		return nil, err
	}
	for _, c := range demoCreds {
		if err := d.add(c, logf); err != nil {
			d.Close()
			return nil, err
		}
	}
	if s.History() != nil {
		if err := fillDemoHistory(context.Background(), s.History(), demoCreds, d.ids, time.Now()); err != nil {
			logf("warning: the demo's past month of history: %v", err)
		}
	}
	d.armWindows()
	return d, nil
}

// add gives the demo credential c: a key, or a login granted by the
// simulated OAuth server.
func (d *demo) add(c demoCred, logf func(string, ...any)) error {
	req := api.AddCredential{Provider: c.provider, Label: c.label, Kind: api.KindAPIKey, Secret: map[string]string{"key": c.key}}
	switch {
	case c.key == "" && c.provider == config.Google:
		// Google knows a login by its tokens and its Code Assist
		// project, which a real login asks for once and stores.
		t := d.oauth.GrantGoogle(demoGoogleLogin)
		req.Kind = api.KindOAuth
		req.Secret = map[string]string{"access_token": t.Access, "refresh_token": t.Refresh,
			"expires_at": t.ExpiresAt.UTC().Format(time.RFC3339), "id_token": t.IDToken, "email": t.Email, "project": t.Project}
		if err := startGoogleDay(d.sim, t.Access, t.Project); err != nil {
			logf("warning: the demo's Google login starts its day empty: %v", err)
		}
	case c.key == "":
		t := d.oauth.Grant(c.provider)
		req.Kind = api.KindOAuth
		req.Secret = map[string]string{"access_token": t.Access, "refresh_token": t.Refresh,
			"expires_at": t.ExpiresAt.UTC().Format(time.RFC3339), "id_token": t.IDToken, "account_id": t.AccountID}
	case c.provider == config.Google:
		d.sim.AddGoogleKey(c.key) // Google refuses keys it never issued
	}
	id, err := d.srv.AddCredential(context.Background(), req)
	if err != nil {
		return err
	}
	d.ids[c.label] = id
	// A Claude login serves Claude Code only, and the demo's own
	// traffic is no Claude Code: it says what it is (Go's
	// User-Agent), since subpool never passes one client off as
	// another. The demo's logins are simulated, so no one is billed
	// extra usage: they are opened to every tool, as `subpool tools ID
	// all` would, and the traffic shows rotation, cooldowns and waits
	// on them. The tray's "Let other tools use this login" closes one
	// again, and the demo's requests then go round it.
	if api.SubscriptionTool(c.provider, req.Kind) != "" {
		return d.srv.SetOtherTools(context.Background(), id, true)
	}
	return nil
}

// secret is what the simulated upstream sees from label now: its key, or
// its login's current access token (which rotates on every refresh).
func (d *demo) secret(label string) (access, refresh string) {
	raw, err := d.keys.Get(daemon.SecretKey(d.ids[label]))
	if err != nil {
		return "", ""
	}
	var v map[string]string
	json.Unmarshal([]byte(raw), &v)
	if v["key"] != "" {
		return v["key"], ""
	}
	return v["access_token"], v["refresh_token"]
}

func (d *demo) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	d.srv.Shutdown(ctx)
	d.oauth.Close()
	d.sim.Close()
	d.home.Close()
}

// script is the demo's story, one beat per request: each beat arms the
// next failure on one credential, so every class shows up in a minute.
func (d *demo) script(tick int) {
	s := d.sim
	key := func(label string) string { k, _ := d.secret(label); return k }
	d.armWindows()
	switch tick % 14 {
	case 1:
		s.Script(key("claude-max"), sim.RateLimited("anthropic", 8*time.Second)) // announced reset
	case 2:
		s.Script(key("google-ai-pro"), sim.RateLimited("google", 6*time.Second)) // Code Assist's own reset
	case 3:
		s.Script(key("claude-pro"), sim.RateLimited("anthropic", 0)) // no hint: the ladder
	case 5:
		s.Script(key("chatgpt-pro"), sim.UsageLimitReached(15*time.Second))
	case 7:
		for _, c := range demoCreds[:3] {
			s.Script(key(c.label), sim.Overloaded(), sim.Overloaded()) // the model is busy for everyone
		}
	case 8:
		for _, label := range []string{"google-ai-pro", "gemini-key"} {
			s.Script(key(label), sim.GoogleOverloaded(), sim.GoogleOverloaded()) // Gemini's turn
		}
	case 9:
		s.Script(key("openai-key"), sim.ServerError(503)) // a blip: retried in place
	case 11:
		if tick < 14 {
			// The login dies: its access token expires and the refresh
			// token was revoked, so the refresh fails for good.
			access, refresh := d.secret("claude-pro")
			d.oauth.Revoke(refresh)
			d.oauth.ExpireAccess(access)
		}
	}
}

// The demo's requests, one of each wire, streamed as the tools stream.
var (
	demoClaude = demoRequest{"/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"` + demoPrompt + `"}]}`}
	demoOpenAI = demoRequest{"/v1/responses", `{"model":"gpt-5-codex","stream":true,"input":"` + demoPrompt + `"}`}
	demoGemini = demoRequest{"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
		`{"contents":[{"role":"user","parts":[{"text":"` + demoPrompt + `"}]}],"generationConfig":{"maxOutputTokens":64}}`}
)

type demoRequest struct{ path, body string }

// traffic sends a Claude or an OpenAI request on every beat, in turn, and
// a Gemini one besides on every third, through the proxy as a client would.
func (d *demo) traffic(ctx context.Context, every time.Duration) {
	base := "http://" + d.srv.Addr()
	t := time.NewTicker(every)
	defer t.Stop()
	for tick := 0; ; tick++ {
		d.script(tick)
		r := demoClaude
		if tick%2 == 1 {
			r = demoOpenAI
		}
		go d.send(ctx, base+r.path, r.body)
		if tick%3 == 2 {
			go d.send(ctx, base+demoGemini.path, demoGemini.body)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// send makes one request as a client would, reads the answer to its end,
// and returns the id of the credential that answered ("" on failure).
func (d *demo) send(ctx context.Context, url, body string) string {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewBufferString(body))
	req.Header.Set("Content-Type", "application/json")
	if strings.Contains(url, "/v1beta/") {
		req.Header.Set("x-goog-api-key", d.srv.ClientKey()) // as Gemini CLI sends its key
	} else {
		req.Header.Set("Authorization", "Bearer "+d.srv.ClientKey())
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.Header.Get("x-subpool-credential")
}

// printEvents prints the proxy's decisions as they happen.
func (d *demo) printEvents(ctx context.Context, w io.Writer) {
	sub, _ := d.srv.Hub().Subscribe(d.srv.Hub().LastID(), 1024)
	defer sub.Close()
	names := labels{}
	for label, id := range d.ids {
		names[id] = label
	}
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-sub.C():
			if !ok {
				return
			}
			if e.Type == api.EventRequestFinished && e.Status == http.StatusOK {
				continue // the quiet successes would drown the decisions
			}
			fmt.Fprintln(w, describeEvent(e, names))
		}
	}
}

func cmdDemo(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	f := newFlags("demo", "[--listen ADDR] [--home DIR] [--gui] [--for DURATION]", "Runs the proxy on simulated Claude, ChatGPT and Gemini upstreams with demo credentials that hit\nscripted 429s, overloads, timeouts and a dead login, plus built-in traffic, printing each decision.\nIt keeps everything in a folder of its own, removed when it stops: your keychain, state and config\nare never touched. Every verb run with the SUBPOOL_HOME it prints reaches it.\nExample: subpool demo --listen 127.0.0.1:9797")
	listen := f.String("listen", "", "address to listen on (default 127.0.0.1:8787, or a free port when that is taken)")
	home := f.String("home", "", "the demo's folder: empty or new, removed again when the demo stops (default: a temp folder)")
	gui := f.Bool("gui", false, "open the tray on the demo")
	dur := f.Duration("for", 0, "stop after this long (default: until Ctrl-C)")
	every := f.Duration("every", 1500*time.Millisecond, "time between demo requests")
	if code, done := f.parseArgs(args, 0, "", stdout, stderr); done {
		return code
	}
	if *listen != "" {
		if err := config.CheckListen(*listen, false, true); err != nil {
			fmt.Fprintf(stderr, "subpool demo: --listen: %v\n", err)
			return 2
		}
	}
	if *gui {
		// The tray cannot open (no cgo, no display): the demo still runs,
		// headless, rather than Fyne panicking or nothing running at all.
		if err := trayUnavailable(); err != nil {
			fmt.Fprintf(stderr, "subpool demo: %v; running the demo without the tray (for the proxy alone: `subpool serve`)\n", err)
			*gui = false
		}
	}
	logger := log.New(stderr, "subpool: ", log.LstdFlags)
	d, err := startDemoListening(*listen, config.Default().Listen, *home, logger.Printf, stderr)
	if err != nil {
		return fail(stderr, "demo", err)
	}
	defer d.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *dur > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *dur)
		defer cancel()
	}
	d.printIntro(stdout)
	go d.printEvents(ctx, stdout)
	go d.traffic(ctx, *every)
	if *gui {
		return runTrayOn(ctx, trayTarget{addr: d.srv.Addr(), token: d.srv.AdminToken(), clientKey: d.srv.ClientKey(), openPanel: true}, stderr)
	}
	<-ctx.Done()
	return 0
}

// startDemoListening starts the demo on listen; with none given it takes
// dflt (the usual address), or a free port when that is taken, and says so.
func startDemoListening(listen, dflt, home string, logf func(string, ...any), stderr io.Writer) (*demo, error) {
	addr := listen
	if addr == "" {
		addr = dflt
	}
	d, err := startDemoAt(addr, home, logf)
	var inUse *daemon.AddrInUseError
	if !errors.As(err, &inUse) {
		return d, err
	}
	if listen != "" {
		return nil, fmt.Errorf("%s is in use; choose another address with --listen, e.g. --listen 127.0.0.1:9797", addr)
	}
	host, _, _ := net.SplitHostPort(addr)
	d, err = startDemoAt(net.JoinHostPort(host, "0"), home, logf)
	if err == nil {
		held := "another program"
		if inUse.Subpool {
			held = "a running subpool"
		}
		fmt.Fprintf(stderr, "subpool demo: %s is held by %s, so the demo listens on %s instead (choose with --listen)\n", addr, held, d.srv.Addr())
	}
	return d, err
}

// printIntro says where the demo is and how to reach it: a client's
// settings, and the SUBPOOL_HOME through which every verb finds it.
func (d *demo) printIntro(w io.Writer) {
	base := "http://" + d.srv.Addr()
	fmt.Fprintf(w, "subpool demo on %s — simulated upstreams at %s, %d demo credentials.\n", base, d.oauth.URL(), len(demoCreds))
	fmt.Fprintf(w, "Point a client at it:\n%s%s", setupText("shell", base, d.srv.ClientKey()), setupText("gemini-cli", base, d.srv.ClientKey()))
	fmt.Fprintf(w, "\n# and for subpool's own verbs (list, events, usage, history, login, …) in another shell:\nexport SUBPOOL_HOME=%s\n\n", shellQuote(d.home.dir))
	fmt.Fprintln(w, "Decisions as they happen (Ctrl-C to stop):")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r == ':' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
