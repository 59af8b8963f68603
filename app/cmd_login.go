package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/subpool/subpool/daemon"
	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/oauth"
	"github.com/subpool/subpool/proxy/admin"
	"github.com/subpool/subpool/proxy/api"
)

// terminalLoginTimeout bounds `subpool login`; Ctrl-C ends it sooner.
const terminalLoginTimeout = 15 * time.Minute

// subscriptions are the providers with a subscription login, in the
// order a person reads them; providerAliases names them the way people do.
var subscriptions = []string{config.Anthropic, config.OpenAI, config.Google}

func cmdLogin(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f := newFlags("login", "anthropic|openai|google [--label L] [--no-browser] [--proxy URL] [--home DIR]",
		"Logs in to a subscription (anthropic: Claude Pro/Max; openai: ChatGPT/Codex; google: Gemini CLI's Google login) in the browser and stores the tokens in the keychain.\n"+
			"The address is printed too: on a machine without a browser, open it elsewhere and paste back the address the browser ended on.")
	label := f.String("label", "", "a name you will recognise (default: the account's email)")
	noBrowser := f.Bool("no-browser", false, "only print the address; do not open a browser")
	proxyURL := f.String("proxy", "", "this login's own egress proxy, http:// or socks5:// (default: [network] proxy); its token exchange goes through it too")
	home := f.String("home", "", "home folder")
	if code, done := f.parseArgs(args, 1, "name one subscription: anthropic (Claude), openai (ChatGPT) or google (Gemini)", stdout, stderr); done {
		return code
	}
	provider, err := resolveName(f.pos[0], "subscription", subscriptions, providerAliases)
	if err != nil {
		fmt.Fprintf(stderr, "subpool login: %q has no subscription login;%s use anthropic (Claude), openai (ChatGPT) or google (Gemini), or `subpool add-key` for API keys\n",
			f.pos[0], suggestName(strings.ToLower(f.pos[0]), subscriptions, providerAliases))
		return 2
	}
	_, cfg, err := homeConfig(*home)
	if err != nil {
		return fail(stderr, "login", err)
	}
	p, ok := daemon.OAuthProvider(cfg.Providers[provider])
	if !ok {
		return fail(stderr, "login", fmt.Errorf("provider %s is not the built-in one in config.toml", provider))
	}

	hc, err := daemon.LoginClient(cfg, *proxyURL)
	if err != nil {
		return fail(stderr, "login", fmt.Errorf("--proxy: %v", err))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, terminalLoginTimeout)
	defer cancel()
	l, err := oauth.StartLogin(ctx, p, oauth.LoginOptions{Client: hc})
	if err != nil {
		return fail(stderr, "login", err)
	}
	defer l.Close()

	out := &syncWriter{w: stdout}
	// The address stands alone on its line, so a script (or a person on
	// another machine) can take it whole.
	fmt.Fprintf(out, "To log in to %s, open this address:\n\n%s\n\n", subscriptionName(provider), l.URL())
	eofEnds := sendToBrowser(out, l, p.RedirectURI, !*noBrowser, stdin)
	tok, err := awaitLogin(ctx, l, stdin, out, eofEnds)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = errors.New("the login was not finished in time; run it again")
		} else if errors.Is(err, context.Canceled) {
			err = errors.New("the login was cancelled")
		}
		return fail(stderr, "login", err)
	}
	if provider == config.Google {
		fmt.Fprintln(out, "Asking Code Assist which Google Cloud project serves this login…")
		if err := daemon.CompleteGoogleLogin(ctx, hc, cfg.Providers[provider], &tok, time.Now()); err != nil {
			return fail(stderr, "login", err)
		}
	}

	lbl := *label
	if lbl == "" {
		lbl = tok.Label(provider)
	}
	id, err := fromBackend(*home, func(ctx context.Context, b admin.Backend) (string, error) {
		return b.AddCredential(ctx, api.AddCredential{Provider: provider, Label: lbl, Kind: api.KindOAuth, Secret: tok.Secret(), Proxy: *proxyURL})
	})
	if err != nil {
		return fail(stderr, "login", cleanAPIErr(err))
	}
	fmt.Fprintf(out, "added %s (%s, %s)\n", id, provider, lbl)
	return 0
}

// sendToBrowser opens the login's address (when open) and says what to
// do next. It reports whether the end of stdin should end the login:
// when nothing else can (no browser was opened here), or when a person
// pressed Ctrl-D on the terminal.
func sendToBrowser(out io.Writer, l *oauth.Login, redirectURI string, open bool, stdin io.Reader) (eofEnds bool) {
	opened := false
	if open {
		if err := openBrowser(l.URL()); err != nil {
			fmt.Fprintf(out, "(no browser opened: %v)\n", err)
		} else {
			opened = true
		}
	}
	if l.Listening() {
		fmt.Fprintf(out, "Waiting up to %.0f minutes for the browser to come back (Ctrl-C to stop)… On another machine? Paste here the address the browser ended on, then Enter.\n", terminalLoginTimeout.Minutes())
	} else {
		fmt.Fprintf(out, "After logging in, the browser goes to %s, which shows an error page here: paste its address (or the code shown), then Enter.\n", redirectURI)
	}
	f, isFile := stdin.(*os.File)
	return !opened || isFile && isTerminal(f)
}

func subscriptionName(provider string) string {
	switch provider {
	case config.Anthropic:
		return "your Claude subscription"
	case config.Google:
		return "your Google account (Gemini CLI's login)"
	}
	return "your ChatGPT subscription"
}

// awaitLogin finishes l by whichever comes first: the browser at the
// callback, or a line pasted on stdin. A bad paste is reported and the
// user may paste again.
//
// When stdin ends, a login that cannot listen for the browser has nothing
// left to finish it; with eofEnds, neither has one that can (no browser
// was opened, or the person pressed Ctrl-D).
func awaitLogin(ctx context.Context, l *oauth.Login, stdin io.Reader, out io.Writer, eofEnds bool) (oauth.Tokens, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		tok oauth.Tokens
		err error
	}
	done := make(chan result, 2)
	go func() {
		tok, err := l.Wait(ctx)
		done <- result{tok, err}
	}()
	if stdin != nil {
		// This reader may outlive the login, blocked on a terminal nobody
		// types into; the process ends soon after.
		go func() {
			sc := bufio.NewScanner(stdin)
			sc.Buffer(make([]byte, 0, 64<<10), 64<<10)
			for sc.Scan() {
				line := strings.TrimSpace(sc.Text())
				if line == "" {
					continue
				}
				tok, err := l.Complete(ctx, line)
				if err == nil {
					done <- result{tok, nil}
					return
				}
				if ctx.Err() != nil {
					return
				}
				fmt.Fprintf(out, "That did not work: %v. Paste the address again, or press Ctrl-C.\n", err)
			}
			switch {
			case !l.Listening():
				// Nothing else can finish the login now.
				done <- result{err: errors.New("no address was pasted; run the login again and paste the address the browser ended on")}
			case eofEnds:
				done <- result{err: errors.New("input ended before the login finished; open the address in a browser (--no-browser only prints it) and paste where it ended on a terminal, or let the browser come back")}
			}
		}()
	}
	r := <-done
	return r.tok, r.err
}

// syncWriter lets the paste reader and the command share stdout.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// openBrowser opens u in the user's browser. Tests replace it with a
// client that plays the browser.
var openBrowser = func(u string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", u)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	default:
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			return errors.New("no graphical session; open the address on any machine with a browser")
		}
		cmd = exec.Command("xdg-open", u)
	}
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}

func cmdImport(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	f := newFlags("import", "claude-code|codex|gemini-cli [--label L] [--home DIR]",
		"Imports the subscription login that Claude Code (~/.claude/.credentials.json, or the macOS keychain), Codex CLI ($CODEX_HOME/auth.json) or Gemini CLI (~/.gemini/oauth_creds.json) holds.\n"+
			"The CLI keeps working: subpool re-reads its file before every refresh and writes the new tokens back (see docs/subscriptions.md).")
	label := f.String("label", "", "a name you will recognise (default: the CLI and the account's email)")
	home := f.String("home", "", "home folder")
	if code, done := f.parseArgs(args, 1, "name one CLI: claude-code, codex or gemini-cli", stdout, stderr); done {
		return code
	}
	var (
		src      oauth.Source
		err      error
		provider string
	)
	cli, err := resolveName(f.pos[0], "CLI", []string{oauth.SourceClaudeCode, oauth.SourceCodex, oauth.SourceGeminiCLI}, toolAliases)
	if err != nil {
		fmt.Fprintf(stderr, "subpool import: %v\n", err)
		return 2
	}
	switch cli {
	case oauth.SourceClaudeCode:
		provider = config.Anthropic
		src, err = oauth.DetectClaudeCode()
	case oauth.SourceCodex:
		provider = config.OpenAI
		src, err = oauth.DetectCodex()
	case oauth.SourceGeminiCLI:
		provider = config.Google
		src, err = oauth.DetectGeminiCLI()
	}
	if err != nil {
		return fail(stderr, "import", err)
	}
	tok, err := src.Read()
	if err != nil {
		return fail(stderr, "import", err)
	}
	if tok.Refresh == "" {
		return fail(stderr, "import", fmt.Errorf("the login in %s has no refresh token, so it would stop working within hours; log in again in %s first", src, src.Kind))
	}
	if src.Kind == oauth.SourceClaudeCode && tok.Email == "" {
		tok.Email = oauth.ClaudeCodeEmail()
	}
	if src.Kind == oauth.SourceGeminiCLI {
		if tok.Email == "" {
			tok.Email = oauth.GeminiCLIEmail()
		}
		_, cfg, err := homeConfig(*home)
		if err != nil {
			return fail(stderr, "import", err)
		}
		hc, err := daemon.LoginClient(cfg, "")
		if err != nil {
			return fail(stderr, "import", err)
		}
		// Gemini CLI keeps no project on disk; it asks at every start.
		if err := daemon.CompleteGoogleLogin(context.Background(), hc, cfg.Providers[provider], &tok, time.Now()); err != nil {
			return fail(stderr, "import", err)
		}
	}
	lbl := *label
	if lbl == "" {
		lbl = src.Kind
		if who := tok.Label(provider); who != provider {
			lbl += " " + who
		}
		if r := []rune(lbl); len(r) > 64 {
			lbl = string(r[:64])
		}
	}
	id, err := fromBackend(*home, func(ctx context.Context, b admin.Backend) (string, error) {
		return b.AddCredential(ctx, api.AddCredential{Provider: provider, Label: lbl, Kind: api.KindOAuth, Source: src.Kind, Secret: tok.Secret()})
	})
	if err != nil {
		return fail(stderr, "import", cleanAPIErr(err))
	}
	fmt.Fprintf(stdout, "imported %s (%s, %s) from %s; %s and subpool now share this login\n", id, provider, lbl, src, src.Kind)
	return 0
}
