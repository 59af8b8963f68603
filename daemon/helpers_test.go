package daemon

import (
	"context"
	"fmt"
	"github.com/subpool/subpool/internal/freeport"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
)

// Test helpers shared by this package's tests; app's end-to-end tests keep
// their own copies, since test files cannot be shared across packages.

// newHome makes a home whose providers point at up, with the file
// keychain backend (the OS keychain has its own tests in keychain/).
func newHome(t *testing.T, up *sim.Server, extra string) (home, addr string) {
	t.Helper()
	home = t.TempDir()
	addr = freeport.Addr(t)
	cfg := fmt.Sprintf(`listen = %q
[keychain]
backend = "file"
[providers.anthropic]
base_url = %q
[providers.openai]
base_url = %q
[wait]
sole_provider_max = "0s"
%s`, addr, up.URL(), up.URL(), extra)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return home, addr
}

func startSim(t *testing.T, o sim.Options) *sim.Server {
	t.Helper()
	up := sim.New(o)
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(up.Close)
	return up
}

// logBuf collects log lines from a server.
type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) logf(format string, a ...any) {
	l.mu.Lock()
	fmt.Fprintf(&l.b, format+"\n", a...)
	l.mu.Unlock()
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startHome(t *testing.T, home string, logs *logBuf) *Daemon {
	t.Helper()
	return startWith(t, Options{Home: home, Logf: logs.logf})
}

// startWith starts a server that stops when the test ends.
func startWith(t *testing.T, o Options) *Daemon {
	t.Helper()
	s, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return s
}

func proxyPost(t *testing.T, s *Daemon, path, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+s.addr+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.clientKey)
	req.Header.Set("Content-Type", "application/json")
	// A fresh connection each time: tests restart servers on the same
	// address, and a kept-alive connection to the stopped one would answer
	// a POST with EOF.
	req.Close = true
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// startOAuthSim runs a sim with its OAuth server; both token endpoints
// and all model routes answer on the OAuth server's address.
func startOAuthSim(t *testing.T, o sim.OAuthOptions) (*sim.Server, *sim.OAuthServer) {
	t.Helper()
	up := sim.New(sim.Options{})
	t.Cleanup(up.Close)
	oa := up.OAuth(o)
	if err := oa.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(oa.Close)
	return up, oa
}

// oauthHome is a home whose providers, token endpoints included, point at
// the sim.
func oauthHome(t *testing.T, oa *sim.OAuthServer) string {
	t.Helper()
	home := t.TempDir()
	cfg := fmt.Sprintf(`listen = %q
[keychain]
backend = "file"
[providers.anthropic]
base_url = %q
token_url = %q
# A free port for each login's callback: the real fixed ones would be
# shared with any other test binary running at the same time.
redirect_uri = "http://localhost:0/callback"
[providers.openai]
base_url = %q
chatgpt_base_url = %q
token_url = %q
redirect_uri = "http://localhost:0/auth/callback"
[wait]
sole_provider_max = "0s"
`, freeport.Addr(t), oa.URL(), oa.URL()+"/v1/oauth/token", oa.URL(), oa.URL()+"/backend-api/codex", oa.URL()+"/oauth/token")
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}
