//go:build unix

package realclients

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// setup runs `subpool setup TOOL` as the person would, in their
// environment (so it finds their HOME and the tool's config dir), and
// returns what it printed.
func (s *served) setup(t *testing.T, p *person, args ...string) string {
	t.Helper()
	cmd := exec.Command(s.bin, append(append([]string{"setup"}, args...), "--home", s.home)...)
	cmd.Env = cleanEnv(p.env)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("subpool setup %v: %v: %s", args, err, errb.String())
	}
	return out.String()
}

// After `subpool setup TOOL` the real tool answers through subpool with
// nothing else set: no exported variable, no flag. Then `--undo` gives the
// person's file back as it was.
func TestSetupThenTheToolAnswers(t *testing.T) {
	cases := []struct {
		tool, provider, file string
		// toolWrites: the tool changes the file itself on its first run
		// (opencode adds its $schema), so undo takes out only subpool's
		// members and keeps that change.
		toolWrites bool
		run        func(s *served, p *person) result
	}{
		{"claude-code", "anthropic", ".claude/settings.json", false, func(s *served, p *person) result {
			return p.run(t, 60*time.Second, clientBin(t, "claude"), "-p", "say hi")
		}},
		{"codex", "openai", ".codex/config.toml", false, func(s *served, p *person) result {
			return p.run(t, 60*time.Second, clientBin(t, "codex"), "exec", "--skip-git-repo-check", "say hi")
		}},
		{"opencode", "anthropic", ".config/opencode/opencode.json", true, func(s *served, p *person) result {
			return p.run(t, 90*time.Second, clientBin(t, "opencode"), "run", "-m", "anthropic/claude-sonnet-4-5", "say hi")
		}},
	}
	for _, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			t.Parallel()
			up := newUpstream(t, simOptions())
			key := fakeKey(c.provider, "setup-"+c.tool)
			s := serve(t, up, "", apiKey{c.provider, "main", key})
			p := newPerson(t)
			path := filepath.Join(p.home, c.file)
			// A file the person already had, with a setting of their own.
			original := map[string]string{
				"claude-code": "{\n  \"includeCoAuthoredBy\": false\n}\n",
				"codex":       "# mine\nhide_agent_reasoning = true\n",
				"opencode":    "{\n  \"theme\": \"opencode\"\n}\n",
			}[c.tool]
			os.MkdirAll(filepath.Dir(path), 0o700)
			if err := os.WriteFile(path, []byte(original), 0o600); err != nil {
				t.Fatal(err)
			}
			printed := s.setup(t, p, c.tool)
			r := c.run(s, p)
			t.Logf("setup printed:\n%s%s\nupstream:%s", printed, r, up.describe())
			if r.err != nil || !strings.Contains(r.stdout, "pong-from-sim") {
				t.Fatalf("no answer after setup: %s", r)
			}
			if calls, _ := up.callsBy(key); calls == 0 {
				t.Fatalf("the answer did not come through subpool's key:%s", up.describe())
			}
			undone := s.setup(t, p, c.tool, "--undo")
			got, _ := os.ReadFile(path)
			switch {
			case !c.toolWrites && string(got) != original:
				t.Fatalf("after --undo:\n%s\nwant\n%s", got, original)
			case c.toolWrites && (strings.Contains(string(got), s.addr) || keyRe.Match(got) || !strings.Contains(string(got), `"theme": "opencode"`)):
				t.Fatalf("after --undo (%s):\n%s\nwant the person's settings and none of subpool's", undone, got)
			}
		})
	}
}
