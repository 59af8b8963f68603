//go:build unix

package realclients

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
)

// Issue 43, the real clients: Claude Code, Codex and Gemini CLI against an
// upstream that stalls (another credential answers), and against a spent
// overload wait and a spent attempt budget. Each gets the answer from the
// other credential, or an error it shows at once: no silent retry loop.
// Counted on the requests the client made to subpool (its history) and on
// the upstream calls the sim saw; the client's run is bounded by its own
// timeout, and a run that reaches it fails.

// realClient is one client as these scenarios drive it.
type realClient struct {
	name, provider string
	// midStream is the index of a stream event after the first content
	// delta of the sim's answer on this client's route.
	midStream int
	// overloaded is the provider's overload answer.
	overloaded sim.Step
	run        func(t *testing.T, s *served, timeout time.Duration) (answered bool, r result)
}

var realClients = []realClient{
	{name: "claude code", provider: "anthropic", midStream: 4, overloaded: sim.Overloaded(),
		run: func(t *testing.T, s *served, timeout time.Duration) (bool, result) {
			r := s.claude(t, timeout, "say hi")
			return r.err == nil && strings.Contains(r.stdout, "pong-from-sim"), r
		}},
	{name: "codex", provider: "openai", midStream: 5, overloaded: openaiOverloaded,
		run: func(t *testing.T, s *served, timeout time.Duration) (bool, result) {
			r := s.codex(t, timeout, "say hi")
			return r.err == nil && strings.Contains(r.stdout, "pong-from-sim"), r
		}},
	{name: "gemini cli", provider: "google", midStream: 1, overloaded: sim.GoogleOverloaded(),
		run: func(t *testing.T, s *served, timeout time.Duration) (bool, result) {
			a, r := s.gemini(t, timeout, geminiAPI, "say hi")
			return r.err == nil && strings.Contains(a.Response, "pong-from-sim"), r
		}},
}

// keys makes n API keys of c's provider that the sim knows.
func (c realClient) keys(up *upstream, tag string, n int) []apiKey {
	var out []apiKey
	for i := range n {
		k := fakeKey(c.provider, fmt.Sprintf("%s-%d", tag, i))
		if c.provider == "google" {
			up.AddGoogleKey(k)
		}
		out = append(out, apiKey{c.provider, fmt.Sprintf("key-%d", i), k})
	}
	return out
}

// shortDeadlines are the stream deadlines the stall scenarios run with:
// short enough that subpool acts first, before any client's own.
const shortDeadlines = "\n[retry]\nfirst_event_timeout = \"3s\"\nidle_timeout = \"3s\"\n"

// clientBound is how long a client run may take here; one that hangs or
// loops is killed then, and fails.
const clientBound = 90 * time.Second

// stalling serves two keys of c's provider, the first of which stalls
// before its stream's event at index, with shortDeadlines.
func (c realClient) stalling(t *testing.T, tag string, index int) (*upstream, *served, []apiKey) {
	st := &sim.Stalls{}
	o := simOptions()
	o.BeforeEvent = st.Hook
	up := newUpstream(t, o)
	keys := c.keys(up, tag, 2)
	st.StallAt(keys[0].secret, index)
	return up, serve(t, up, shortDeadlines, keys...), keys
}

func TestRealClientsOnStalls(t *testing.T) {
	for _, c := range realClients {
		// Nothing after the 200 and its SSE headers on the first key:
		// subpool tries the second at the deadline, within the client's
		// one request.
		t.Run(c.name+" gets the other key's answer past a stall at the head", func(t *testing.T) {
			t.Parallel()
			up, s, keys := c.stalling(t, "stall-head", 0)
			answered, r := c.run(t, s, clientBound)
			stalled, _ := up.callsBy(keys[0].secret)
			_, ok := up.callsBy(keys[1].secret)
			asked, attempts := s.clientRequests()
			t.Logf("%s ended after %s; upstream: stalled key %d, other key %d answered; requests the client made %d, attempts %d", c.name, r.took.Round(time.Millisecond), stalled, ok, asked, attempts)
			if !answered {
				t.Fatalf("no answer: %s\nupstream:%s", r, up.describe())
			}
			if stalled != 1 || ok != 1 || asked != 1 {
				t.Errorf("want one stalled call, one answer, one client request:%s", up.describe())
			}
		})
		// The first key stalls after content reached the client: subpool
		// ends the stream with the wire's error event, and the client's
		// own retry goes to the other key.
		t.Run(c.name+" is not held by a stall mid-stream", func(t *testing.T) {
			t.Parallel()
			up, s, keys := c.stalling(t, "stall-mid", c.midStream)
			answered, r := c.run(t, s, clientBound)
			stalled, _ := up.callsBy(keys[0].secret)
			_, ok := up.callsBy(keys[1].secret)
			asked, _ := s.clientRequests()
			t.Logf("%s ended after %s (answered: %v); upstream: stalled key %d, other key %d answered; requests the client made %d\nshown: %s", c.name, r.took.Round(time.Millisecond), answered, stalled, ok, asked, tail(strings.TrimSpace(r.shown()), 600))
			if r.timedOut {
				t.Fatalf("the client was still waiting at %s: %s\nupstream:%s", clientBound, r, up.describe())
			}
			if stalled != 1 {
				t.Errorf("the stalled key was called %d times, want 1:%s", stalled, up.describe())
			}
			// Each of the three retries a stream cut short at once, and
			// the retry lands on the other key (the stalled one cools).
			if !answered || ok != 1 || asked != 2 {
				t.Errorf("want the answer from the other key on the client's one retry: answered %v, %d requests:%s", answered, asked, up.describe())
			}
		})
	}
}

func TestRealClientsOnSpentBudgets(t *testing.T) {
	for _, c := range realClients {
		// The model is overloaded throughout: subpool waits
		// wait.capacity_max, then answers once, finally.
		t.Run(c.name+" shows a spent overload wait at once", func(t *testing.T) {
			t.Parallel()
			up := newUpstream(t, simOptions())
			keys := c.keys(up, "cap-spent", 1)
			up.Always(keys[0].secret, c.overloaded)
			s := serve(t, up, "\n[wait]\ncapacity_max = \"2s\"\n", keys...)
			answered, r := c.run(t, s, clientBound)
			calls, _ := up.callsBy(keys[0].secret)
			asked, _ := s.clientRequests()
			t.Logf("%s ended after %s; upstream calls %d (one budget allows %d); requests the client made %d\nshown: %s", c.name, r.took.Round(time.Millisecond), calls, capacityCalls(2*time.Second), asked, tail(strings.TrimSpace(r.shown()), 600))
			c.wantShownOnce(t, answered, r, asked, up)
			if calls > capacityCalls(2*time.Second) {
				t.Errorf("%d upstream calls, one budget allows %d: the client's retries started the wait again", calls, capacityCalls(2*time.Second))
			}
		})
		// Every key answers 429 with no time in it: the attempts run out
		// (two here), and the client gets the 429 once.
		t.Run(c.name+" shows a spent attempt budget at once", func(t *testing.T) {
			t.Parallel()
			up := newUpstream(t, simOptions())
			keys := c.keys(up, "budget", 2)
			for _, k := range keys {
				up.Always(k.secret, sim.RateLimited(c.provider, 0))
			}
			s := serve(t, up, "\n[retry]\nmax_attempts = 2\n", keys...)
			answered, r := c.run(t, s, clientBound)
			asked, attempts := s.clientRequests()
			t.Logf("%s ended after %s; upstream calls %d; requests the client made %d, attempts %d\nshown: %s", c.name, r.took.Round(time.Millisecond), len(up.modelCalls()), asked, attempts, tail(strings.TrimSpace(r.shown()), 600))
			c.wantShownOnce(t, answered, r, asked, up)
		})
	}
}

// wantShownOnce: the client made one request, showed an error and ended
// on its own.
func (c realClient) wantShownOnce(t *testing.T, answered bool, r result, asked int, up *upstream) {
	t.Helper()
	if answered {
		t.Fatalf("an always-failing upstream answered: %s", r)
	}
	if r.timedOut {
		t.Fatalf("%s was still retrying at %s: %s\nupstream:%s", c.name, clientBound, r, up.describe())
	}
	if asked != 1 {
		t.Errorf("%s asked %d times: a silent retry loop\nupstream:%s", c.name, asked, up.describe())
	}
	if r.err == nil || strings.TrimSpace(r.shown()) == "" {
		t.Errorf("%s exited %v showing %q", c.name, r.err, r.shown())
	}
}

// docs/providers.md said Claude Code's own retry rule takes over on a
// retry-after too long to wait in subpool; read in its package, it gives
// up at once past 60 s (api_request_retry_after_too_long). Seen here: the
// only key cooling for 10 minutes, one request, the error shown.
func TestClaudeCodeGivesUpOnALongRetryAfter(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, simOptions())
	k := fakeKey("anthropic", "long-retry")
	up.Script(k, sim.RateLimited("anthropic", 10*time.Minute))
	s := serve(t, up, "", apiKey{"anthropic", "main", k})
	r := s.claude(t, clientBound, "say hi")
	asked, _ := s.clientRequests()
	t.Logf("claude -p ended after %s; requests %d\nshown: %s", r.took.Round(time.Millisecond), asked, tail(strings.TrimSpace(r.shown()), 400))
	c := realClients[0]
	c.wantShownOnce(t, false, r, asked, up)
}
