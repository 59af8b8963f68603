//go:build unix

package realclients

import (
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
)

// answer is the text every simulated success says (sim.Options.ChunkText,
// five times).
const answerWord = "pong-from-sim "

func simOptions() sim.Options { return sim.Options{ChunkText: answerWord} }

// Each client answers through subpool: the one-line setup `subpool env`
// prints is all it needs.
func TestBaseline(t *testing.T) {
	t.Run("claude code", func(t *testing.T) {
		t.Parallel()
		up := newUpstream(t, simOptions())
		key := fakeKey("anthropic", "base-cc")
		s := serve(t, up, "", apiKey{"anthropic", "main", key})
		r := s.claude(t, 60*time.Second, "say hi")
		t.Logf("claude -p: %s\nupstream:%s", r, up.describe())
		if r.err != nil || !strings.Contains(r.stdout, "pong-from-sim") {
			t.Fatalf("no answer: %s", r)
		}
	})
	t.Run("codex", func(t *testing.T) {
		t.Parallel()
		up := newUpstream(t, simOptions())
		key := fakeKey("openai", "base-codex")
		s := serve(t, up, "", apiKey{"openai", "main", key})
		r := s.codex(t, 60*time.Second, "say hi")
		t.Logf("codex exec: %s\nupstream:%s", r, up.describe())
		if r.err != nil || !strings.Contains(r.stdout, "pong-from-sim") {
			t.Fatalf("no answer: %s", r)
		}
	})
	t.Run("anthropic sdk", func(t *testing.T) {
		t.Parallel()
		up := newUpstream(t, simOptions())
		s := serve(t, up, "", apiKey{"anthropic", "main", fakeKey("anthropic", "base-asdk")})
		a, r := s.sdk(t, 30*time.Second, "anthropic_sdk.cjs", "claude-sonnet-4-5", false)
		t.Logf("%+v %s\nupstream:%s", a, r, up.describe())
		if !a.OK || !strings.Contains(a.Text, "pong-from-sim") {
			t.Fatalf("no answer: %+v %s", a, r)
		}
	})
	t.Run("openai sdk", func(t *testing.T) {
		t.Parallel()
		up := newUpstream(t, simOptions())
		s := serve(t, up, "", apiKey{"openai", "main", fakeKey("openai", "base-osdk")})
		a, r := s.sdk(t, 30*time.Second, "openai_sdk.cjs", "gpt-5.1", false)
		t.Logf("%+v %s\nupstream:%s", a, r, up.describe())
		if !a.OK || !strings.Contains(a.Text, "pong-from-sim") {
			t.Fatalf("no answer: %+v %s", a, r)
		}
	})
	t.Run("opencode", func(t *testing.T) {
		t.Parallel()
		up := newUpstream(t, simOptions())
		s := serve(t, up, "", apiKey{"anthropic", "main", fakeKey("anthropic", "base-oc")})
		r := s.opencode(t, 90*time.Second, "anthropic/claude-sonnet-4-5", "say hi")
		t.Logf("opencode run: %s\nupstream:%s", r, up.describe())
		if r.err != nil || !strings.Contains(r.stdout, "pong-from-sim") {
			t.Fatalf("no answer: %s", r)
		}
	})
}
