package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/subpool/subpool/daemon"
	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/proxy/admin"
	"github.com/subpool/subpool/proxy/admin/client"
	"github.com/subpool/subpool/proxy/api"
)

// stopGrace is how long a stopping proxy lets in-flight streams finish.
const stopGrace = 10 * time.Second

func cmdServe(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	f := newFlags("serve", "[--listen ADDR] [--home DIR]", "Runs the proxy and the admin API in the foreground, logging to stderr. This is what the login service runs.")
	listen := f.String("listen", "", "address to listen on (default: listen in config.toml)")
	homeFlag := f.String("home", "", "home folder (default $SUBPOOL_HOME, else your config folder/subpool)")
	if code, done := f.parseArgs(args, 0, "", stdout, stderr); done {
		return code
	}
	home, err := resolveHome(*homeFlag)
	if err != nil {
		return fail(stderr, "serve", err)
	}
	logger := log.New(stderr, "subpool: ", log.LstdFlags)
	tuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := daemon.Start(daemon.Options{Home: home, Listen: *listen, Logf: logger.Printf})
	if err != nil {
		return fail(stderr, "serve", err)
	}
	logger.Printf("listening on http://%s (home %s)", s.Addr(), home)
	select {
	case <-ctx.Done():
	case err := <-s.Done():
		if err != nil {
			return fail(stderr, "serve", err)
		}
	}
	logger.Printf("stopping: letting in-flight requests finish (up to %s)", stopGrace)
	sctx, cancel := context.WithTimeout(context.Background(), stopGrace)
	defer cancel()
	if err := s.Shutdown(sctx); err != nil {
		logger.Printf("warning: %v", err)
	}
	logger.Printf("stopped; state saved")
	return 0
}

// serveMemoryLimit bounds the heap when the live heap itself is large (a
// thousand open streams): near the limit the collector runs as often as
// it must. It is far above what the bench's loads reach, so it costs
// nothing there; a limit near them (20 MiB) held RSS like GOGC 100 but
// would keep the collector running without end under a live heap past it.
//
// GOMEMLIMIT in the environment still decides when it is set.
const serveMemoryLimit = 256 << 20

func tuneGC() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(serveMemoryLimit)
	}
}

// homeConfig loads the home's config for client verbs.
func homeConfig(homeFlag string) (string, config.Config, error) {
	if p, err := homePath(homeFlag); err == nil && isGoneDemoHome(p) {
		return "", config.Config{}, demoStopped(p)
	}
	home, err := resolveHome(homeFlag)
	if err != nil {
		return "", config.Config{}, err
	}
	cfg, err := config.Load(filepath.Join(home, config.FileName))
	return home, cfg, err
}

// runningClient returns a client of the proxy serving home, or nil when
// none answers.
func runningClient(ctx context.Context, home string, cfg config.Config) (*client.Client, error) {
	tok, err := daemon.ReadAdminToken(home)
	if err != nil {
		return nil, nil // never started: nothing can be running
	}
	c := &client.Client{Addr: daemon.LiveAddr(home, cfg), Token: tok}
	_, err = c.Status(ctx)
	switch {
	case err == nil:
		return c, nil
	case client.IsNotRunning(err):
		return nil, nil
	case client.IsUnauthorized(err):
		return nil, fmt.Errorf("the proxy on %s rejected the admin token in %s; is it running with another --home?", cfg.Listen, home)
	}
	return nil, fmt.Errorf("the proxy on %s did not answer properly: %v", cfg.Listen, err)
}

// findCredential is the status of the credential ref names: its ID, or a
// label only one credential has. A label two share is an error naming
// both IDs; none is api.ErrNotFound wrapped with what to do.
func findCredential(ctx context.Context, b admin.Backend, ref string) (api.CredentialStatus, error) {
	st, err := b.Status(ctx)
	if err != nil {
		return api.CredentialStatus{}, err
	}
	var byLabel []api.CredentialStatus
	for _, p := range st.Providers {
		for _, c := range p.Credentials {
			if c.ID == ref {
				return c, nil
			}
			if strings.EqualFold(c.Label, ref) {
				byLabel = append(byLabel, c)
			}
		}
	}
	switch len(byLabel) {
	case 0:
		return api.CredentialStatus{}, fmt.Errorf("%w: no credential has the ID or label %q; `subpool list` shows them", api.ErrNotFound, ref)
	case 1:
		return byLabel[0], nil
	}
	var ids []string
	for _, c := range byLabel {
		ids = append(ids, c.ID+" ("+c.Provider+")")
	}
	return api.CredentialStatus{}, fmt.Errorf("%w: the label %q names %d credentials: %s; give the ID", api.ErrBadRequest, ref, len(ids), strings.Join(ids, ", "))
}

// notFoundErr is err, with a credential the proxy does not know said as
// what to do.
func notFoundErr(err error, ref string) error {
	if errors.Is(err, api.ErrNotFound) {
		return fmt.Errorf("no credential has the ID or label %q; `subpool list` shows them", ref)
	}
	return err
}

// onHome runs fn against the home homeFlag names: through the proxy that
// serves it when one answers (remote), else on the home itself (local,
// closed when fn returns). It is the one preamble of every verb that works
// with or without a running proxy.
func onHome[T any](homeFlag string, remote func(c *client.Client, home string, cfg config.Config) T,
	local func(home string, cfg config.Config) (T, io.Closer, error), fn func(context.Context, T) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	home, cfg, err := homeConfig(homeFlag)
	if err != nil {
		return err
	}
	c, err := runningClient(ctx, home, cfg)
	if err != nil {
		return err
	}
	if c != nil {
		return fn(ctx, remote(c, home, cfg))
	}
	if isDemoHome(home) {
		return demoStopped(home) // opened in place it would look empty
	}
	v, closer, err := local(home, cfg)
	if err != nil {
		return err
	}
	defer closer.Close()
	return fn(ctx, v)
}

// fromBackend is withBackend for a call that returns a value: it returns
// what get returned.
func fromBackend[T any](homeFlag string, get func(ctx context.Context, b admin.Backend) (T, error)) (T, error) {
	var v T
	err := withBackend(homeFlag, func(ctx context.Context, b admin.Backend) error {
		var err error
		v, err = get(ctx, b)
		return err
	})
	return v, err
}

// withBackend runs fn against the running proxy, or, when none answers,
// against the home opened in place under its lock (one writer at a time).
func withBackend(homeFlag string, fn func(ctx context.Context, b admin.Backend) error) error {
	return onHome(homeFlag, func(c *client.Client, _ string, _ config.Config) admin.Backend { return c },
		func(home string, cfg config.Config) (admin.Backend, io.Closer, error) {
			d, err := openInPlace(home, cfg)
			return d, d, err
		}, fn)
}

// openInPlace opens the home's daemon without serving, logging to stderr.
func openInPlace(home string, cfg config.Config) (*daemon.Daemon, error) {
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "subpool: "+format+"\n", a...) }
	return daemon.Open(home, cfg, logf)
}

func cmdAddKey(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f := newFlags("add-key", "PROVIDER --label L [--proxy URL] [--home DIR]", "Stores an API key in the keychain. On a terminal it asks for the key (not shown as you type);\notherwise it reads the key from stdin, so it stays out of your shell history. A key or label\nthe home already holds is refused.\nExample: pbpaste | subpool add-key anthropic --label work")
	label := f.String("label", "", "a name you will recognise, e.g. work")
	proxyURL := f.String("proxy", "", "this key's own egress proxy, http:// or socks5:// (default: [network] proxy)")
	home := f.String("home", "", "home folder")
	if code, done := f.parseArgs(args, 1, "name one provider, e.g. `subpool add-key anthropic --label work`", stdout, stderr); done {
		return code
	}
	if *label == "" {
		fmt.Fprintln(stderr, "subpool add-key: --label is required, e.g. --label work")
		return 2
	}
	_, cfg, err := homeConfig(*home)
	if err != nil {
		return fail(stderr, "add-key", err)
	}
	provider, err := resolveName(f.pos[0], "provider", cfg.ProviderNames(), providerAliases)
	if err != nil {
		fmt.Fprintf(stderr, "subpool add-key: %v\n", err)
		return 2
	}
	key, code := readKey(stdin, stderr, provider)
	if code != 0 {
		return code
	}
	id, err := fromBackend(*home, func(ctx context.Context, b admin.Backend) (string, error) {
		return b.AddCredential(ctx, api.AddCredential{Provider: provider, Label: *label, Kind: api.KindAPIKey, Secret: map[string]string{"key": key}, Proxy: *proxyURL})
	})
	if err != nil {
		return fail(stderr, "add-key", cleanAPIErr(err))
	}
	fmt.Fprintf(stdout, "added %s (%s, %s)\n", id, provider, *label)
	// Said once it is added, so a refusal stays one line.
	if w := keyShapeWarning(provider, key); w != "" {
		fmt.Fprintf(stderr, "subpool add-key: warning: %s\n", w)
	}
	return 0
}

// readKey is the API key: asked for, unechoed, on a terminal; else read
// from stdin. A non-zero code means it was reported.
func readKey(stdin io.Reader, stderr io.Writer, provider string) (string, int) {
	if f, ok := stdin.(*os.File); ok && isTerminal(f) {
		key, err := readHidden(f, func() { fmt.Fprintf(stderr, "%s API key (not shown): ", provider) })
		fmt.Fprintln(stderr)
		if err != nil {
			return "", fail(stderr, "add-key", fmt.Errorf("cannot read the key from the terminal: %v; pipe it in instead", err))
		}
		if key = strings.TrimSpace(key); key == "" {
			fmt.Fprintln(stderr, "subpool add-key: no key given; paste the key, then Enter")
			return "", 2
		}
		return key, 0
	}
	b, err := io.ReadAll(io.LimitReader(stdin, 64<<10))
	if err != nil {
		return "", fail(stderr, "add-key", err)
	}
	key := strings.TrimSpace(string(b))
	if key == "" {
		fmt.Fprintf(stderr, "subpool add-key: no key on stdin; pipe it in, e.g. `echo \"$KEY\" | subpool add-key %s --label work`, or run it on a terminal to be asked\n", provider)
		return "", 2
	}
	return key, 0
}

// cleanAPIErr drops the sentinel prefix ("bad request: ") that the admin
// API adds for its status mapping; a person needs only the reason.
func cleanAPIErr(err error) error {
	msg := err.Error()
	for _, p := range []string{api.ErrBadRequest.Error() + ": ", api.ErrUnsupported.Error() + ": ", api.ErrConflict.Error() + ": "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return errors.New(msg)
}

func cmdList(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	f := newFlags("list", "[--json] [--home DIR]", "Lists every credential: provider, label, kind, which tools it serves (subpool tools), state (with any pace learned\nfrom 429s that named no reset), cooldown left, utilization.")
	asJSON := f.Bool("json", false, "print the status as JSON, for scripts")
	home := f.String("home", "", "home folder")
	if code, done := f.parseArgs(args, 0, "", stdout, stderr); done {
		return code
	}
	st, err := fromBackend(*home, func(ctx context.Context, b admin.Backend) (api.Status, error) {
		return b.Status(ctx)
	})
	if err != nil {
		return fail(stderr, "list", err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(st)
		return 0
	}
	printTable(stdout, st)
	return 0
}

func printTable(w io.Writer, st api.Status) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	proxyCol := proxyColumn(st)
	fmt.Fprintln(tw, "ID\tPROVIDER\tLABEL\tKIND\tSERVES\tSTATE\tCOOLDOWN\tUTILIZATION\tREQUESTS"+proxyCol(nil))
	n := 0
	for _, p := range st.Providers {
		for _, c := range p.Credentials {
			n++
			state := stateWords(c)
			if pw := paceWords(c.Paces, st.Now); pw != "" {
				state += " (" + pw + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d%s\n", c.ID, c.Provider, c.Label, c.Kind, servesWords(c), state, cooldownLeft(c, p.Cooldown, st.Now), windowWords(c, st.Now), c.Counters.Requests, proxyCol(&c))
		}
	}
	tw.Flush()
	if n == 0 {
		fmt.Fprintln(w, "no credentials yet: `echo $KEY | subpool add-key anthropic --label work`")
	}
}

func stateWords(c api.CredentialStatus) string {
	s := c.State
	for _, p := range c.Parks {
		switch {
		case p.Kind == api.ParkRelogin:
			return "log in again"
		case p.Kind == api.ParkRegion:
			return "parked: region refused (set [network] proxy)"
		case p.Model != "":
			s += " (payment: " + p.Model + ")"
		default:
			return "parked: payment"
		}
	}
	return s
}

func cooldownLeft(c api.CredentialStatus, prov *api.Cooldown, now time.Time) string {
	var longest time.Duration
	var what string
	cds := c.Cooldowns
	if prov != nil {
		cds = append(cds[:len(cds):len(cds)], *prov)
	}
	for _, cd := range cds {
		if d := cd.Until.Sub(now); d > longest {
			longest = d
			what = ""
			if cd.Model != "" {
				what = " " + cd.Model
			}
		}
	}
	if longest <= 0 {
		return "-"
	}
	return longest.Round(time.Second).String() + what
}

func utilWords(u *api.Utilization) string {
	if u == nil {
		return "-"
	}
	var parts []string
	if u.FiveHour != nil {
		parts = append(parts, fmt.Sprintf("5h %.0f%%", u.FiveHour.Used*100))
	}
	if u.SevenDay != nil {
		parts = append(parts, fmt.Sprintf("7d %.0f%%", u.SevenDay.Used*100))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// The verbs that take one credential ID, each a call of one Backend method.
var (
	cmdRemove = idVerb("remove", "Removes a credential and deletes its secret from the keychain.", "removed", admin.Backend.RemoveCredential)
	cmdPause  = idVerb("pause", "Stops using a credential until `subpool resume ID`.", "paused", admin.Backend.Pause)
	cmdResume = idVerb("resume", "Uses a paused credential again.", "resumed", admin.Backend.Resume)
	cmdReset  = idVerb("reset", "Clears a credential's cooldowns and payment parks now, e.g. after the plan renewed.", "reset", admin.Backend.Reset)
)

// idVerb makes the verb called name. The verb calls op with the one
// credential ID it is given and prints done and the ID.
func idVerb(name, summary, done string, op func(admin.Backend, context.Context, string) error) func(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return func(args []string, _ io.Reader, stdout, stderr io.Writer) int {
		f := newFlags(name, "ID|LABEL [--home DIR]", summary+"\nExample: subpool "+name+" anthropic-1a2b3c")
		home := f.String("home", "", "home folder")
		if code, stop := f.parseArgs(args, 1, "name one credential by its ID or label (see `subpool list`)", stdout, stderr); stop {
			return code
		}
		ref, id := f.pos[0], ""
		err := withBackend(*home, func(ctx context.Context, b admin.Backend) error {
			c, err := findCredential(ctx, b, ref)
			if err != nil {
				return err
			}
			id = c.ID
			return op(b, ctx, id)
		})
		if err != nil {
			return fail(stderr, name, cleanAPIErr(notFoundErr(err, ref)))
		}
		fmt.Fprintf(stdout, "%s %s\n", done, id)
		return 0
	}
}

func cmdEnv(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	f := newFlags("env", "claude-code|codex|gemini-cli|opencode|shell [--home DIR]", "Prints what to paste so a tool talks to the proxy: the base URL and the client key named after the tool (made on first use).")
	home := f.String("home", "", "home folder")
	if code, done := f.parseArgs(args, 1, "name one tool: claude-code, codex, gemini-cli, opencode or shell", stdout, stderr); done {
		return code
	}
	tool, err := resolveName(f.pos[0], "tool", envTools, toolAliases)
	if err != nil {
		fmt.Fprintf(stderr, "subpool env: %v\n", err)
		return 2
	}
	h, cfg, err := homeConfig(*home)
	if err != nil {
		return fail(stderr, "env", err)
	}
	// Each tool has a key of its own, named after it, made on first use
	// (cmd_client.go).
	key, err := toolKey(h, tool)
	if err != nil {
		return fail(stderr, "env", err)
	}
	fmt.Fprint(stdout, setupText(tool, "http://"+daemon.LiveAddr(h, cfg), key))
	return 0
}

// envTools are the tools `subpool env` knows, in the order help lists them.
var envTools = []string{"claude-code", "codex", "gemini-cli", "opencode", "shell"}

// setupText is what `subpool env` prints and the tray copies.
func setupText(tool, base, key string) string {
	switch tool {
	case "claude-code":
		return fmt.Sprintf(`# Claude Code: run in your shell (or put under "env" in ~/.claude/settings.json)
export ANTHROPIC_BASE_URL=%s
export ANTHROPIC_AUTH_TOKEN=%s
`, base, key)
	case "codex":
		return fmt.Sprintf(`# Codex CLI: add to ~/.codex/config.toml
model_provider = "subpool"

[model_providers.subpool]
name = "subpool"
base_url = "%s/v1"
env_key = "SUBPOOL_API_KEY"
wire_api = "responses"

# and in your shell:
export SUBPOOL_API_KEY=%s
`, base, key)
	case "gemini-cli":
		// Read in Gemini CLI 0.61.0: with GOOGLE_GEMINI_BASE_URL set it
		// needs the key auth selected in settings (else it takes a
		// "gateway" it cannot run); its login mode takes a fixed access
		// token from GOOGLE_CLOUD_ACCESS_TOKEN with GOOGLE_GENAI_USE_GCA,
		// which reaches Code Assist at CODE_ASSIST_ENDPOINT. Either way the
		// key is subpool's client key, and the pool's Google logins and
		// Gemini API keys both serve it.
		return fmt.Sprintf(`# Gemini CLI, Gemini API mode (served by your Google logins and Gemini API keys):
# in ~/.gemini/settings.json: {"security": {"auth": {"selectedType": "gemini-api-key"}}}
export GOOGLE_GEMINI_BASE_URL=%s
export GEMINI_API_KEY=%s

# or "Login with Google" mode (Code Assist; needs a Google login in subpool):
# export GOOGLE_GENAI_USE_GCA=true
# export CODE_ASSIST_ENDPOINT=%s
# export GOOGLE_CLOUD_ACCESS_TOKEN=%s
`, base, key, base, key)
	case "opencode":
		b, _ := json.MarshalIndent(map[string]any{
			"$schema": "https://opencode.ai/config.json",
			"provider": map[string]any{
				"anthropic": map[string]any{"options": map[string]string{"baseURL": base + "/v1", "apiKey": key}},
				"openai":    map[string]any{"options": map[string]string{"baseURL": base + "/v1", "apiKey": key}},
			},
		}, "", "  ")
		return "// opencode: merge into opencode.json (project) or ~/.config/opencode/opencode.json\n" + string(b) + "\n"
	default:
		return fmt.Sprintf(`export ANTHROPIC_BASE_URL=%s
export ANTHROPIC_AUTH_TOKEN=%s
export OPENAI_BASE_URL=%s/v1
export OPENAI_API_KEY=%s
`, base, key, base, key)
	}
}

func cmdEvents(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	f := newFlags("events", "[--json] [--home DIR]", "Prints the proxy's decisions as they happen: cooldowns, rotations, waits, refreshes, finished requests.")
	asJSON := f.Bool("json", false, "one JSON object per line, for scripts")
	home := f.String("home", "", "home folder")
	if code, done := f.parseArgs(args, 0, "", stdout, stderr); done {
		return code
	}
	h, cfg, err := homeConfig(*home)
	if err != nil {
		return fail(stderr, "events", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := runningClient(ctx, h, cfg)
	if err != nil {
		return fail(stderr, "events", err)
	}
	if c == nil && isDemoHome(h) {
		return fail(stderr, "events", demoStopped(h))
	}
	if c == nil {
		return fail(stderr, "events", fmt.Errorf("no proxy answers on %s; start one with `subpool serve`", daemon.LiveAddr(h, cfg)))
	}
	enc := json.NewEncoder(stdout)
	names := labels{}
	for ev := range c.Events(ctx) {
		if *asJSON {
			enc.Encode(ev)
		} else {
			names.learn(ev)
			fmt.Fprintln(stdout, describeEvent(ev, names))
		}
		if ev.Type == client.EventUnauthorized {
			return 1
		}
	}
	return 0
}

// labels maps credential ids to the labels people gave them.
type labels map[string]string

func (l labels) learn(e api.Event) {
	if e.Snapshot != nil {
		for _, p := range e.Snapshot.Providers {
			for _, c := range p.Credentials {
				l[c.ID] = c.Label
			}
		}
	}
	if e.CredentialID != "" && e.Label != "" {
		l[e.CredentialID] = e.Label
	}
}

func (l labels) name(id string) string {
	if n := l[id]; n != "" {
		return n
	}
	return id
}

// describeEvent is one line a person reads.
func describeEvent(e api.Event, names labels) string {
	t := e.Time.Local().Format("15:04:05")
	who := e.Provider
	if e.CredentialID != "" && e.Type != api.EventRotated {
		who += "/" + names.name(e.CredentialID)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %-18s %s", t, e.Type, who)
	switch e.Type {
	case api.EventSnapshot:
		if e.Snapshot != nil {
			n := 0
			for _, p := range e.Snapshot.Providers {
				n += len(p.Credentials)
			}
			fmt.Fprintf(&b, "connected to %s: %d credentials", e.Snapshot.Listen, n)
		}
	case api.EventCooldownStarted:
		if e.Until != nil {
			fmt.Fprintf(&b, " for %s", e.Until.Sub(e.Time).Round(time.Second))
		}
		if e.Step > 0 {
			fmt.Fprintf(&b, " step %d/%d", e.Step, e.Steps)
		}
		if e.Scope != "" && e.Scope != "credential" {
			fmt.Fprintf(&b, " scope %s", e.Scope)
		}
		if e.Model != "" {
			fmt.Fprintf(&b, " model %s", e.Model)
		}
	case api.EventRotated:
		fmt.Fprintf(&b, " %s -> %s", names.name(e.From), names.name(e.To))
	case api.EventWaitStarted:
		fmt.Fprintf(&b, " %s wait %s", e.Kind, (time.Duration(e.WaitMS) * time.Millisecond).Round(10*time.Millisecond))
	case api.EventWaitEnded:
		fmt.Fprintf(&b, " %s wait %s", e.Kind, e.Outcome)
	case api.EventRequestFinished:
		fmt.Fprintf(&b, " %s %d %s attempts=%d %dms", e.Path, e.Status, e.Class, e.Attempts, e.LatencyMS)
	case api.EventCredentialUpdated:
		fmt.Fprintf(&b, " %s", e.State)
	}
	if e.Reason != "" && e.Type != api.EventSnapshot {
		fmt.Fprintf(&b, " (%s)", e.Reason)
	}
	return b.String()
}
