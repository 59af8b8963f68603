package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/subpool/subpool/proxy/clock"
)

// LoginOptions tunes StartLogin. The zero value is usable.
type LoginOptions struct {
	// Client sends the code exchange. Default: 30 s timeout.
	Client *http.Client
	// Clock dates the access token's expiry. Default clock.Real{}.
	Clock clock.Clock
	// NoListen skips the callback listener: the user pastes the address
	// the browser ended on (or Claude's code#state) into Complete.
	NoListen bool
}

// Login is one PKCE login in progress. The browser comes back to the
// callback listener (Wait), or the user pastes where it ended (Complete);
// whichever brings a good code first wins. Close releases the listener.
type Login struct {
	p           Provider
	o           LoginOptions
	verifier    string
	state       string
	redirectURI string
	url         string

	srv       *http.Server
	ln        net.Listener
	callbacks chan callback
	closed    chan struct{}
	closeOnce sync.Once

	mu   sync.Mutex
	done bool
	tok  Tokens
}

// callback is one code the browser brought, with the channel on which the
// callback handler waits to tell the browser how it went.
type callback struct {
	code, state string
	err         error
	reply       chan error
}

// StartLogin prepares a login: a fresh PKCE verifier and state, and a
// listener on the redirect address unless NoListen is set (without one,
// p.PasteRedirectURI replaces the redirect when set). When its port
// is taken, each of p.FallbackRedirectURIs is tried in turn, as Codex
// falls back from 1455 to 1457, and the URL names the one listened on;
// when every port is taken, Listening reports false and only Complete can
// finish. A redirect port of 0 listens on a free port and puts it in the
// URL, as Claude Code does.
//
// Codex, finding its port taken, first asks whatever listens there to
// cancel (GET /cancel) in case it is an older login of its own; subpool
// does not, because that listener may be the person's own `codex login`.
func StartLogin(ctx context.Context, p Provider, o LoginOptions) (*Login, error) {
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if p.AuthorizeURL == "" || p.ClientID == "" || p.RedirectURI == "" {
		return nil, fmt.Errorf("%s has no OAuth login", p.Name)
	}
	l := &Login{p: p, o: o, verifier: randomString(32), state: randomString(32), redirectURI: p.RedirectURI,
		callbacks: make(chan callback), closed: make(chan struct{})}
	if !o.NoListen {
		for _, r := range append([]string{p.RedirectURI}, p.FallbackRedirectURIs...) {
			l.redirectURI = r
			err := l.listen()
			if err == nil {
				break
			}
			if isZeroPort(r) {
				return nil, err
			}
		}
	}
	if l.srv == nil {
		// Nothing listens: the provider's own code page when it has one,
		// else the first address, which the paste flow works with as well
		// as any.
		l.redirectURI = p.RedirectURI
		if p.PasteRedirectURI != "" {
			l.redirectURI = p.PasteRedirectURI
		}
	}
	sum := sha256.Sum256([]byte(l.verifier))
	q := url.Values{}
	for k, v := range p.AuthorizeParams {
		q.Set(k, v)
	}
	q.Set("client_id", p.ClientID)
	q.Set("response_type", "code")
	q.Set("redirect_uri", l.redirectURI)
	q.Set("scope", p.Scope)
	q.Set("code_challenge", base64.RawURLEncoding.EncodeToString(sum[:]))
	q.Set("code_challenge_method", "S256")
	q.Set("state", l.state)
	sep := "?"
	if strings.Contains(p.AuthorizeURL, "?") {
		sep = "&"
	}
	l.url = p.AuthorizeURL + sep + q.Encode()
	return l, nil
}

func isZeroPort(redirect string) bool {
	u, err := url.Parse(redirect)
	return err == nil && u.Port() == "0"
}

// listen serves the redirect URI's path on its port, on loopback only.
func (l *Login) listen() error {
	u, err := url.Parse(l.redirectURI)
	if err != nil || u.Port() == "" {
		return fmt.Errorf("redirect URI %q names no port", l.redirectURI)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", u.Port()))
	if err != nil {
		return fmt.Errorf("cannot listen for the login callback on port %s: %v", u.Port(), err)
	}
	if u.Port() == "0" {
		u.Host = net.JoinHostPort(u.Hostname(), fmt.Sprint(ln.Addr().(*net.TCPAddr).Port))
		l.redirectURI = u.String()
	}
	mux := http.NewServeMux()
	mux.HandleFunc(u.Path, l.serveCallback)
	l.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	l.ln = ln
	go l.srv.Serve(ln) //nolint:errcheck // ErrServerClosed after Close
	return nil
}

// URL is the address to open in the browser.
func (l *Login) URL() string { return l.url }

// RedirectURI is where the browser is sent back to.
func (l *Login) RedirectURI() string { return l.redirectURI }

// Listening reports whether a callback listener runs; without one the
// user must paste the address the browser ended on.
func (l *Login) Listening() bool { return l.srv != nil }

// Close stops the callback listener. It is idempotent.
func (l *Login) Close() {
	l.closeOnce.Do(func() { close(l.closed) })
	if l.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		l.srv.Shutdown(ctx)
		// Shutdown closes only the listeners Serve has taken up; one it
		// has not reached yet would hold the port (Codex's, for the next
		// login) until it did.
		l.ln.Close()
	}
}

func (l *Login) serveCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cb := callback{code: q.Get("code"), state: q.Get("state"), reply: make(chan error, 1)}
	if e := q.Get("error"); e != "" {
		cb.err = fmt.Errorf("the login was refused: %s", short(e))
	} else if cb.code == "" {
		cb.err = errors.New("the callback carried no code")
	}
	var result error
	select {
	case l.callbacks <- cb:
		select {
		case result = <-cb.reply:
		case <-r.Context().Done():
			return
		}
	case <-l.closed:
		result = errors.New("this login attempt has ended; start it again")
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	msg := "Logged in to " + l.p.Name + ". You can close this tab and go back to subpool."
	if result != nil {
		w.WriteHeader(http.StatusBadRequest)
		msg = "Login failed: " + result.Error()
	}
	fmt.Fprintf(w, "<!doctype html><title>subpool</title><p>%s</p>\n", html.EscapeString(msg))
}

// Wait returns the tokens once the browser comes back to the listener
// with a good code, or with ctx's error. A bad callback (wrong state, a
// refused exchange) is reported to the browser and waited past: the user
// may try again in the same tab. Without a listener it only waits for ctx
// to end: Complete is then the one way to finish, and a caller running
// both cancels ctx when Complete succeeds.
func (l *Login) Wait(ctx context.Context) (Tokens, error) {
	if l.srv == nil {
		<-ctx.Done()
		return Tokens{}, ctx.Err()
	}
	for {
		select {
		case <-ctx.Done():
			return Tokens{}, ctx.Err()
		case cb := <-l.callbacks:
			if cb.err != nil {
				cb.reply <- cb.err
				continue
			}
			t, err := l.finish(ctx, cb.code, cb.state)
			cb.reply <- err
			if err == nil {
				return t, nil
			}
		}
	}
}

// Complete finishes the login from what the user pasted: the whole
// address the browser ended on, its query, Claude's "code#state", or the
// bare code.
func (l *Login) Complete(ctx context.Context, pasted string) (Tokens, error) {
	code, state, err := parsePasted(pasted)
	if err != nil {
		return Tokens{}, err
	}
	return l.finish(ctx, code, state)
}

func parsePasted(s string) (code, state string, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", "", errors.New("nothing pasted")
	}
	if i := strings.IndexByte(s, '?'); i >= 0 && strings.Contains(s[:i], "://") {
		s = s[i+1:]
	}
	if strings.Contains(s, "=") {
		q, perr := url.ParseQuery(strings.TrimPrefix(s, "?"))
		if perr != nil {
			return "", "", errors.New("the pasted address is not one the login sent you to")
		}
		if e := q.Get("error"); e != "" {
			return "", "", fmt.Errorf("the login was refused: %s", short(e))
		}
		code, state = q.Get("code"), q.Get("state")
	} else {
		code, state, _ = strings.Cut(s, "#")
	}
	if code == "" {
		return "", "", errors.New("no code in what was pasted; paste the whole address the browser ended on")
	}
	return code, state, nil
}

// finish exchanges a code once: after a success, later calls get the
// same tokens; after a failure the user may try again.
func (l *Login) finish(ctx context.Context, code, state string) (Tokens, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return l.tok, nil
	}
	// Claude's page shows "code#state"; a pasted code may carry it.
	if c, s, ok := strings.Cut(code, "#"); ok {
		code = c
		if state == "" {
			state = s
		}
	}
	if state != "" && state != l.state {
		return Tokens{}, errors.New("this code belongs to another login attempt; start the login again")
	}
	t, err := exchange(ctx, l.o.Client, l.p, code, l.verifier, l.state, l.redirectURI, l.o.Clock.Now())
	if err != nil {
		var te *TokenError
		if errors.As(err, &te) && te.Status != 0 {
			return Tokens{}, fmt.Errorf("%s refused the login code (%s); start the login again", l.p.Name, te.what())
		}
		return Tokens{}, err
	}
	if l.p.Name == NameGoogle && t.Refresh == "" {
		return Tokens{}, errors.New("Google gave this login no refresh token, so it would end within the hour; start the login again and allow the access Google asks for")
	}
	if l.p.UserInfoURL != "" {
		// As Gemini CLI does: a login without its email still works, so
		// a failure here only leaves the label plainer.
		if email, err := FetchGoogleEmail(ctx, l.o.Client, l.p.UserInfoURL, t.Access); err == nil && email != "" {
			t.Email = email
		}
	}
	l.done, l.tok = true, t
	return t, nil
}

// randomString is n random bytes, base64url: a PKCE verifier of 43
// characters for n = 32 (RFC 7636 wants 43 to 128).
func randomString(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
