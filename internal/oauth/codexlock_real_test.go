package oauth

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The installed Codex takes the locks subpool takes, the way subpool
// takes them: with subpool holding auth.json.lock, `codex login
// --with-api-key` gives up with "credential commit lock timed out" and
// leaves auth.json alone; with subpool holding auth.lock it waits.
func TestRealCodexHonoursSubpoolsLocks(t *testing.T) {
	bin := codexBinary(t)
	for _, c := range []struct {
		lock string
		want string // "" : Codex is still waiting when the test stops it
	}{{"auth.json.lock", "credential commit lock timed out"}, {codexStateLock, ""}} {
		t.Run(c.lock, func(t *testing.T) {
			home := t.TempDir()
			auth := filepath.Join(home, "auth.json")
			before := []byte(`{"auth_mode":"chatgpt","OPENAI_API_KEY":null,"tokens":{"access_token":"a","refresh_token":"r"}}` + "\n")
			os.WriteFile(auth, before, 0o600)
			holdFlock(t, filepath.Join(home, c.lock))
			// Codex ends its wait for the commit lock itself, after 5 s; it
			// writes in well under 3 s when nothing holds it back.
			limit := 3 * time.Second
			if c.want != "" {
				limit = 30 * time.Second
			}
			ctx, cancel := context.WithTimeout(guard(t), limit)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "login", "--with-api-key")
			cmd.Env = append(os.Environ(), "CODEX_HOME="+home)
			cmd.Stdin = strings.NewReader("sk-subpool-lock-test\n")
			out, err := cmd.CombinedOutput()
			if c.want != "" && !strings.Contains(string(out), c.want) {
				t.Fatalf("Codex under subpool's %s: %v\n%s", c.lock, err, out)
			}
			if c.want == "" && ctx.Err() == nil {
				t.Fatalf("Codex did not wait for subpool's %s: %v\n%s", c.lock, err, out)
			}
			if after, _ := os.ReadFile(auth); string(after) != string(before) {
				t.Fatalf("Codex wrote auth.json under subpool's %s", c.lock)
			}
		})
	}
}
