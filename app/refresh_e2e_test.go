package app

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/subpool/subpool/daemon"
	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
)

// The running server renews a login that is about to run out with no
// request made, and parks one whose refresh token is dead, on the wall
// clock with the look shortened.
func TestServerRefreshesIdleLogins(t *testing.T) {
	up, oa := startOAuthSim(t, sim.OAuthOptions{AccessTTL: 4 * time.Minute}) // due: within the 5 min skew
	home := oauthHome(t, oa)
	claudeDir, codexDir := t.TempDir(), t.TempDir()
	t.Setenv("CLAUDE_CONFIG_DIR", claudeDir)
	t.Setenv("CODEX_HOME", codexDir)
	cc := oa.Grant(sim.Anthropic)
	os.WriteFile(filepath.Join(claudeDir, ".credentials.json"), []byte(fmt.Sprintf(
		`{"claudeAiOauth":{"accessToken":%q,"refreshToken":%q,"expiresAt":%d,"scopes":["user:inference"]}}`,
		cc.Access, cc.Refresh, cc.ExpiresAt.UnixMilli())), 0o600)
	cx := oa.Grant(sim.OpenAI)
	os.WriteFile(filepath.Join(codexDir, "auth.json"), []byte(fmt.Sprintf(
		`{"tokens":{"id_token":%q,"access_token":%q,"refresh_token":%q,"account_id":%q}}`,
		cx.IDToken, cx.Access, cx.Refresh, cx.AccountID)), 0o600)
	for _, cli := range []string{"claude-code", "codex"} {
		if code, out, errs := runImport(cli, "--home", home); code != 0 {
			t.Fatalf("import %s: %d %q %q", cli, code, out, errs)
		}
	}
	oa.Revoke(cx.Refresh) // the ChatGPT account signed out everywhere

	s := startWith(t, daemon.Options{Home: home, Logf: (&logBuf{}).logf, LoginRefresh: 20 * time.Millisecond})
	waitFor(t, "the Claude login renewed and the ChatGPT one parked", func() bool {
		a, o := s.Pool().Status("anthropic"), s.Pool().Status("openai")
		return oa.Stats().Rotations == 1 && len(a[0].Parks) == 0 &&
			len(o[0].Parks) == 1 && o[0].Parks[0].Kind == api.ParkRelogin
	})
	if n := len(modelRequests(up.Requests())); n != 0 {
		t.Fatalf("%d model requests were made", n)
	}
	if st := oa.Stats(); st.Rotations != 1 || st.Revoked < 1 {
		t.Fatalf("token endpoint: %+v", st)
	}
}

// waitFor polls cond until it holds; the limit only guards against a
// hang, it is not a timing assertion.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
