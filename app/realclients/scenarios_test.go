//go:build unix

package realclients

import (
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/policy"
)

// The scenarios of issue 24, "The real clients in make test": what a
// person running each client sees when subpool's upstreams refuse in the
// ways the real services do. Each is a subtest; they run in parallel.
//
// Figures are asserted on the scenario's own wall clock with generous
// margins (these are end-to-end behaviour bounds: "the message within
// 10 s", not benchmarks) and on the upstream calls the sim recorded.

// firstEventRefusal is an Anthropic stream that is refused in its first
// event: the request itself is wrong, so nothing retries it.
const firstEventRefusal = `{"type":"error","error":{"type":"invalid_request_error","message":"messages.0.content: the simulated upstream refuses this request in its first event"}}`

// codexUsageLimitEvent is the ChatGPT backend ending a 200 stream at once
// because the plan's quota is spent.
const codexUsageLimitEvent = `{"type":"response.failed","sequence_number":0,"response":{"id":"resp_sim_limit","object":"response","status":"failed","error":{"code":"usage_limit_reached","message":"The usage limit has been reached"},"output":[],"usage":null}}`

// openaiOverloaded is OpenAI's 503 when its servers are overloaded for
// everyone: capacity, as Anthropic's 529 is.
var openaiOverloaded = sim.Step{Status: 503, Body: `{"error":{"message":"Our servers are currently overloaded. Please try again later.","type":"server_error","param":null,"code":"server_is_overloaded"}}`}

// capacityCalls is the most upstream calls one capacity budget allows:
// the first answer, then one per wait, the waits as short as
// policy.CapacityBackoff makes them (no jitter), the last one cut to end
// at the budget; its answer ends the budget.
func capacityCalls(budget time.Duration) int {
	calls, at := 1, time.Duration(0)
	for n := 0; at < budget; n++ {
		at += min(policy.CapacityBackoff(n, 0), budget-at)
		calls++
	}
	return calls
}

// deadKeyMessage is what subpool's refusal of a dead API key must let a
// person act on: add a new key (logging in again does nothing for a key).
func deadKeyMessage(shown string) bool {
	return strings.Contains(shown, "subpool add-key")
}

// deadBound is how soon a dead sole key's message must be shown.
const deadBound = 10 * time.Second

// aliasConf is the alias list of scenario 6; aliasBound bounds its
// answer, and claudeStart is Claude Code's start-up on top of it.
const (
	aliasConf               = "\n[models]\npool-best = [\"anthropic/claude-opus-4-5\", \"openai/gpt-5.1\"]\n"
	aliasBound, claudeStart = 5 * time.Second, 3 * time.Second
)

func TestRealClients(t *testing.T) {
	t.Run("claude code rotates past a 429 to the second key", testClaudeRotatesPast429)

	t.Run("anthropic sdk waits out a 529 on the same key", testSDKWaitsOut529)

	t.Run("claude code shows a first-event refusal as its message", testClaudeShowsFirstEventRefusal)

	t.Run("claude code shows a dead sole key's message within 10 s", testClaudeDeadSoleKey)
	t.Run("anthropic sdk shows a dead sole key's message within 10 s", testSDKDeadSoleKey)

	// 5. A spent capacity budget: the upstream is overloaded throughout,
	// subpool waits capacity_max and gives up; the SDK must get that
	// error once, not start the wait again with its own retries.
	const budget = 2 * time.Second
	capacityConf := "\n[wait]\ncapacity_max = \"2s\"\n"
	for _, c := range []struct {
		name, script, provider, model string
		step                          sim.Step
	}{
		{"anthropic sdk gets a spent capacity budget once", "anthropic_sdk.cjs", "anthropic", "claude-sonnet-4-5", sim.Overloaded()},
		{"openai sdk gets a spent capacity budget once", "openai_sdk.cjs", "openai", "gpt-5.1", openaiOverloaded},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			up := newUpstream(t, simOptions())
			k := fakeKey(c.provider, "cap-spent")
			up.Always(k, c.step)
			s := serve(t, up, capacityConf, apiKey{c.provider, "main", k})
			ans, r := s.sdk(t, 60*time.Second, c.script, c.model, false)
			took := ans.took()
			calls, _ := up.callsBy(k)
			asked, _ := s.clientRequests()
			maxCalls, maxTook := capacityCalls(budget), budget+3*time.Second
			t.Logf("create() threw after %s (bound %s): %s %d x-should-retry=%q %q; upstream calls %d (one budget of %s allows %d); requests the SDK made %d (want 1)", took.Round(time.Millisecond), maxTook, ans.Name, ans.Status, ans.Retry, ans.Message, calls, budget, maxCalls, asked)
			if ans.OK {
				t.Fatalf("an always-overloaded upstream answered: %+v %s", ans, r)
			}
			if asked != 1 {
				t.Errorf("the SDK asked %d times: its retries started the spent budget again", asked)
			}
			if calls > maxCalls {
				t.Errorf("%d upstream calls, one budget allows %d: the client's retries multiplied the wait:%s", calls, maxCalls, up.describe())
			}
			if took > maxTook {
				t.Errorf("took %s, bound %s", took.Round(time.Millisecond), maxTook)
			}
		})
	}

	t.Run("anthropic sdk alias list moves on past a 429 to the openai key", testSDKAliasMovesOn)
	t.Run("claude code alias list moves on past a 429 to the openai key", testClaudeAliasMovesOn)

	t.Run("opencode is served by the api key, never the claude subscription", testOpencodeServedByKey)

	t.Run("codex moves past an in-stream usage_limit_reached to the other login", testCodexMovesPastUsageLimit)
}

// 1. Rotation on a 429: the first key is rate limited, the answer
// comes from the second within the same `claude -p`.
func testClaudeRotatesPast429(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, simOptions())
	a, b := fakeKey("anthropic", "rot-a"), fakeKey("anthropic", "rot-b")
	up.Script(a, sim.RateLimited("anthropic", 30*time.Second))
	s := serve(t, up, "", apiKey{"anthropic", "first", a}, apiKey{"anthropic", "second", b})
	start := time.Now()
	r := s.claude(t, 60*time.Second, "say hi")
	took := time.Since(start)
	aCalls, _ := up.callsBy(a)
	bCalls, bOK := up.callsBy(b)
	t.Logf("answer in %s (the client is killed at 60 s); upstream calls: first key %d (429), second key %d (%d answered 200)", took.Round(time.Millisecond), aCalls, bCalls, bOK)
	if r.err != nil || !strings.Contains(r.stdout, "pong-from-sim") {
		t.Fatalf("no answer: %s\nupstream:%s", r, up.describe())
	}
	if aCalls != 1 || bOK < 1 || len(up.modelCalls()) != aCalls+bCalls {
		t.Fatalf("want one 429 on the first key and the answer from the second:%s", up.describe())
	}
}

// 2. An overload waited out on the same credential: two 529s, then
// the answer, in one create() the SDK never had to retry.
func testSDKWaitsOut529(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, simOptions())
	k := fakeKey("anthropic", "cap-wait")
	up.Script(k, sim.Overloaded(), sim.Overloaded())
	s := serve(t, up, "", apiKey{"anthropic", "main", k})
	id := s.ids()["main"]
	ans, r := s.sdk(t, 60*time.Second, "anthropic_sdk.cjs", "claude-sonnet-4-5", false)
	took := ans.took()
	calls, ok := up.callsBy(k)
	asked, _ := s.clientRequests()
	t.Logf("answer in %s (the client is killed at 60 s); upstream calls %d (2×529, then 200: want 3), x-subpool-attempts %s; requests the SDK made %d (want 1)", took.Round(time.Millisecond), calls, ans.Attempts, asked)
	if !ans.OK || !strings.Contains(ans.Text, "pong-from-sim") || ans.Credential != id {
		t.Fatalf("no answer from %s: %+v %s\nupstream:%s", id, ans, r, up.describe())
	}
	if calls != 3 || ok != 1 || asked != 1 {
		t.Fatalf("want 2 overloads and one answer upstream, all on the one key, for one request of the SDK (it made %d):%s", asked, up.describe())
	}
}

// 3. A refusal in the first event of a 200 stream reaches Claude Code
// as the upstream's error, shown with its message, never as an empty
// answer. subpool asks the upstream once per request: Claude Code
// 2.1.337 itself sends a refused request again without its optional
// betas (thinking-token-count, advanced-tool-use, the thinking
// display), up to 6 requests in all, whatever x-should-retry says.
func testClaudeShowsFirstEventRefusal(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, simOptions())
	k := fakeKey("anthropic", "first-event")
	up.Always(k, sim.Step{StreamError: firstEventRefusal})
	s := serve(t, up, "", apiKey{"anthropic", "main", k})
	start := time.Now()
	r := s.claude(t, 60*time.Second, "say hi")
	took := time.Since(start)
	calls, _ := up.callsBy(k)
	asked, attempts := s.clientRequests()
	t.Logf("shown in %s (the client is killed at 60 s), exit %v; requests Claude Code made %d, upstream calls %d (want one each: subpool retries no bad request)\nshown: %s", took.Round(time.Millisecond), r.err, asked, calls, strings.TrimSpace(r.shown()))
	if !strings.Contains(r.shown(), "refuses this request in its first event") {
		t.Fatalf("the refusal's message was not shown: %s\nupstream:%s", r, up.describe())
	}
	if r.err == nil {
		t.Errorf("claude -p exited 0 on a refusal")
	}
	if asked < 1 || asked > 6 || calls != asked || attempts != asked {
		t.Errorf("want 1 upstream call for each of Claude Code's requests (at most 6), got %d calls (%d attempts) for %d requests:%s", calls, attempts, asked, up.describe())
	}
}

// 4. The only credential is dead (401: parked for a new key). Nothing
// will change by itself, so the person must see subpool's message at
// once, not a client retrying with backoff.
func testClaudeDeadSoleKey(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, simOptions())
	k := fakeKey("anthropic", "dead-cc")
	up.Always(k, sim.Unauthorized("anthropic"))
	s := serve(t, up, "", apiKey{"anthropic", "main", k})
	start := time.Now()
	r := s.claude(t, 2*deadBound, "say hi")
	took := time.Since(start)
	calls, _ := up.callsBy(k)
	asked, _ := s.clientRequests()
	t.Logf("claude -p ended after %s (bound %s, timed out: %v); upstream calls %d (bound 2); requests Claude Code made to subpool %d\nshown: %s", took.Round(time.Millisecond), deadBound, r.timedOut, calls, asked, strings.TrimSpace(r.shown()))
	if !deadKeyMessage(r.shown()) {
		t.Errorf("subpool's message (add a new key: subpool add-key) was not shown: %s", r)
	}
	if took > deadBound || r.timedOut {
		t.Errorf("took %s, bound %s", took.Round(time.Millisecond), deadBound)
	}
	if calls > 2 {
		t.Errorf("%d upstream calls, bound 2:%s", calls, up.describe())
	}
}

func testSDKDeadSoleKey(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, simOptions())
	k := fakeKey("anthropic", "dead-sdk")
	up.Always(k, sim.Unauthorized("anthropic"))
	s := serve(t, up, "", apiKey{"anthropic", "main", k})
	ans, r := s.sdk(t, 2*deadBound, "anthropic_sdk.cjs", "claude-sonnet-4-5", false)
	took := ans.took()
	calls, _ := up.callsBy(k)
	asked, _ := s.clientRequests()
	t.Logf("create() threw after %s (bound %s): %s %d x-should-retry=%q %q; upstream calls %d (bound 2); requests the SDK made %d (want 1)", took.Round(time.Millisecond), deadBound, ans.Name, ans.Status, ans.Retry, ans.Message, calls, asked)
	if ans.OK || !deadKeyMessage(ans.Message) {
		t.Errorf("subpool's message (add a new key: subpool add-key) was not thrown: %+v %s", ans, r)
	}
	if ans.Retry != "false" || asked != 1 {
		t.Errorf("the refusal did not stop the SDK's retries (x-should-retry %q, %d requests): nothing changes by itself for a dead key", ans.Retry, asked)
	}
	if took > deadBound || r.timedOut {
		t.Errorf("took %s, bound %s", took.Round(time.Millisecond), deadBound)
	}
	if calls > 2 {
		t.Errorf("%d upstream calls, bound 2:%s", calls, up.describe())
	}
}

// 6. An alias list moves on: the only Anthropic key is rate limited
// for 20 s, the OpenAI key is ready, so the alias is answered at once by
// the OpenAI key instead of waiting out the 20 s.
// Not "best": Claude Code resolves --model best itself (to its newest
// Opus) and never sends the name.
// The SDK's create() is timed; claude -p as a whole, with its start-up
// (about a second here) allowed for on top.
func testSDKAliasMovesOn(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, simOptions())
	ak, ok := fakeKey("anthropic", "alias-a"), fakeKey("openai", "alias-o")
	up.Always(ak, sim.RateLimited("anthropic", 20*time.Second))
	s := serve(t, up, aliasConf, apiKey{"anthropic", "claude", ak}, apiKey{"openai", "gpt", ok})
	oid := s.ids()["gpt"]
	ans, r := s.sdk(t, 4*aliasBound, "anthropic_sdk.cjs", "pool-best", false)
	took := ans.took()
	aCalls, _ := up.callsBy(ak)
	oCalls, oOK := up.callsBy(ok)
	t.Logf("answer in %s (bound %s) from %q (want %s); upstream calls: anthropic %d, openai %d (%d answered 200)", took.Round(time.Millisecond), aliasBound, ans.Credential, oid, aCalls, oCalls, oOK)
	if !ans.OK || !strings.Contains(ans.Text, "pong-from-sim") {
		t.Fatalf("no answer: %+v %s\nupstream:%s", ans, r, up.describe())
	}
	if ans.Credential != oid || oOK < 1 {
		t.Errorf("served by %q, want the OpenAI key %s:%s", ans.Credential, oid, up.describe())
	}
	if took > aliasBound {
		t.Errorf("took %s, bound %s: the alias waited for the rate-limited target", took.Round(time.Millisecond), aliasBound)
	}
}

func testClaudeAliasMovesOn(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, simOptions())
	ak, ok := fakeKey("anthropic", "alias-cc-a"), fakeKey("openai", "alias-cc-o")
	up.Always(ak, sim.RateLimited("anthropic", 20*time.Second))
	s := serve(t, up, aliasConf, apiKey{"anthropic", "claude", ak}, apiKey{"openai", "gpt", ok})
	start := time.Now()
	r := s.claude(t, 4*aliasBound, "say hi", "--model", "pool-best")
	took := time.Since(start)
	aCalls, _ := up.callsBy(ak)
	oCalls, oOK := up.callsBy(ok)
	t.Logf("claude -p --model pool-best ended after %s (bound %s); upstream calls: anthropic %d, openai %d (%d answered 200)", took.Round(time.Millisecond), aliasBound+claudeStart, aCalls, oCalls, oOK)
	if r.err != nil || !strings.Contains(r.stdout, "pong-from-sim") {
		t.Fatalf("no answer: %s\nupstream:%s", r, up.describe())
	}
	if oOK < 1 {
		t.Errorf("not served by the OpenAI key:%s", up.describe())
	}
	if took > aliasBound+claudeStart {
		t.Errorf("took %s, bound %s: the alias waited for the rate-limited target", took.Round(time.Millisecond), aliasBound+claudeStart)
	}
}

// 7. opencode on a home holding a Claude subscription (added first,
// so it is what the pool would pick first) and an Anthropic API key:
// Anthropic bills a third-party tool's use of a subscription as extra
// usage, so every opencode request goes to the key.
func testOpencodeServedByKey(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, simOptions())
	sub := up.oa.Grant(sim.Anthropic)
	k := fakeKey("anthropic", "oc-key")
	s := serve(t, up, "")
	s.addOAuth("anthropic", "max", sub)
	s.addKey(apiKey{"anthropic", "key", k})
	start := time.Now()
	r := s.opencode(t, 90*time.Second, "anthropic/claude-sonnet-4-5", "say hi")
	took := time.Since(start)
	subCalls, _ := up.callsBy(sub.Access)
	keyCalls, keyOK := up.callsBy(k)
	t.Logf("opencode run ended after %s; upstream calls: subscription %d (want 0), API key %d (%d answered 200)", took.Round(time.Millisecond), subCalls, keyCalls, keyOK)
	if r.err != nil || !strings.Contains(r.stdout, "pong-from-sim") {
		t.Fatalf("no answer: %s\nupstream:%s", r, up.describe())
	}
	if subCalls != 0 || keyOK < 1 {
		t.Errorf("opencode's requests reached the Claude subscription:%s", up.describe())
	}
}

// 8. Codex on two ChatGPT logins; the first one's plan is spent, which
// the backend says inside a 200 stream. The answer comes from the
// other login, within the same `codex exec`.
func testCodexMovesPastUsageLimit(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, simOptions())
	first, second := up.oa.Grant(sim.OpenAI), up.oa.Grant(sim.OpenAI)
	up.Script(first.Access, sim.Step{StreamError: codexUsageLimitEvent})
	s := serve(t, up, "")
	s.addOAuth("openai", "plus-1", first)
	s.addOAuth("openai", "plus-2", second)
	start := time.Now()
	r := s.codex(t, 60*time.Second, "say hi")
	took := time.Since(start)
	fCalls, _ := up.callsBy(first.Access)
	sCalls, sOK := up.callsBy(second.Access)
	t.Logf("answer in %s (the client is killed at 60 s); upstream calls: first login %d (usage_limit_reached), second %d (%d answered)", took.Round(time.Millisecond), fCalls, sCalls, sOK)
	if r.err != nil || !strings.Contains(r.stdout, "pong-from-sim") {
		t.Fatalf("no answer: %s\nupstream:%s", r, up.describe())
	}
	if fCalls != 1 || sOK < 1 {
		t.Errorf("want one refused call on the first login and the answer from the second:%s", up.describe())
	}
}
