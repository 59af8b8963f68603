//go:build unix

package realclients

import (
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
)

// The editor agents speak Chat Completions. Each is set up the way a
// person would: `subpool setup continue|cline`, then the CLI with nothing
// else set.

// editorModel is what setup points both editors at.
const editorModel = "gpt-5.1"

// continueCLI runs Continue's `cn -p PROMPT` (headless) set up by `subpool
// setup continue`; --auto lets it run a tool the model calls.
func (s *served) continueCLI(t *testing.T, timeout time.Duration, prompt string) result {
	t.Helper()
	bin := clientBin(t, "cn")
	p := newPerson(t)
	p.env["CONTINUE_GLOBAL_DIR"] = p.home + "/.continue"
	p.env["CONTINUE_CLI_ENABLE_TELEMETRY"] = "0"
	p.env["CONTINUE_METRICS_ENABLED"] = "0"
	s.setup(t, p, "continue", "--model", editorModel)
	return p.run(t, timeout, bin, "-p", "--auto", "--config", p.home+"/.continue/config.yaml", prompt)
}

// clineCLI runs Cline's one-shot `cline --json PROMPT` set up by `subpool
// setup cline` (its OpenAI-compatible provider).
func (s *served) clineCLI(t *testing.T, timeout time.Duration, prompt string) result {
	t.Helper()
	bin := clientBin(t, "cline")
	p := newPerson(t)
	p.env["CLINE_DIR"] = p.home + "/.cline"
	s.setup(t, p, "cline", "--model", editorModel)
	return p.run(t, timeout, bin, "--json", prompt)
}

type editor struct {
	name, wire string
	run        func(s *served, t *testing.T, timeout time.Duration, prompt string) result
}

var editors = []editor{
	{"continue", "/v1/responses", (*served).continueCLI},
	{"cline", "/v1/chat/completions", (*served).clineCLI},
}

func TestEditors(t *testing.T) {
	cases := []struct {
		name string
		run  func(*testing.T, editor)
	}{
		{"streams an answer on an api key", editorStreamsOnAnAPIKey},
		{"answers on a ChatGPT login only", editorAnswersOnAChatGPTLogin},
		{"carries a tool call on a ChatGPT login only", editorToolCallOnAChatGPTLogin},
		{"moves past a spent ChatGPT login to the other", editorPastASpentChatGPTLogin},
		{"carries a tool call and its result", editorToolCallAndItsResult},
		{"rotates past a rate-limited key", editorRotatesPastARateLimitedKey},
	}
	for _, e := range editors {
		for _, c := range cases {
			t.Run(e.name+" "+c.name, func(t *testing.T) { c.run(t, e) })
		}
	}
}

func editorStreamsOnAnAPIKey(t *testing.T, e editor) {
	t.Parallel()
	up := newUpstream(t, simOptions())
	key := fakeKey("openai", "ed-"+e.name)
	s := serve(t, up, "", apiKey{"openai", "main", key})
	r := e.run(s, t, 90*time.Second, "say hi")
	t.Logf("%s\nupstream:%s", r, up.describe())
	if r.err != nil || !strings.Contains(r.stdout, "pong-from-sim") {
		t.Fatalf("no answer: %s", r)
	}
	// Cline speaks Chat Completions; Continue too, but Responses
	// for the models OpenAI serves there (gpt-5*, o*), as here.
	calls := up.modelCalls()
	if len(calls) == 0 || calls[0].Path != e.wire || !calls[0].Stream {
		t.Fatalf("want a streamed call to %s:%s", e.wire, up.describe())
	}
}

func editorAnswersOnAChatGPTLogin(t *testing.T, e editor) {
	t.Parallel()
	up := newUpstream(t, simOptions())
	s := serve(t, up, "")
	s.addOAuth("openai", "plus", up.oa.Grant(sim.OpenAI))
	r := e.run(s, t, 90*time.Second, "say hi")
	t.Logf("%s\nupstream:%s", r, up.describe())
	if r.err != nil || !strings.Contains(r.stdout, "pong-from-sim") {
		t.Fatalf("no answer: %s", r)
	}
	calls := up.modelCalls()
	if len(calls) == 0 || calls[0].Path != "/backend-api/codex/responses" {
		t.Fatalf("not served by the ChatGPT login's Codex backend:%s", up.describe())
	}
}

func editorToolCallOnAChatGPTLogin(t *testing.T, e editor) {
	t.Parallel()
	up := newUpstream(t, simOptions())
	s := serve(t, up, "")
	s.addOAuth("openai", "plus", up.oa.Grant(sim.OpenAI))
	r := e.run(s, t, 120*time.Second, "use the tool")
	calls := up.modelCalls()
	t.Logf("%s\nupstream:%s", r, up.describe())
	if r.err != nil || len(calls) < 2 {
		t.Fatalf("want the tool call answered and a second turn: %s", r)
	}
	last := string(calls[len(calls)-1].Body)
	if calls[len(calls)-1].Path != "/backend-api/codex/responses" || !strings.Contains(last, "function_call_output") {
		t.Fatalf("the second turn reached the Codex backend without the tool's result:%s", up.describe())
	}
}

func editorPastASpentChatGPTLogin(t *testing.T, e editor) {
	t.Parallel()
	up := newUpstream(t, simOptions())
	first, second := up.oa.Grant(sim.OpenAI), up.oa.Grant(sim.OpenAI)
	up.Script(first.Access, sim.UsageLimitReached(time.Hour))
	s := serve(t, up, "")
	s.addOAuth("openai", "plus-1", first)
	s.addOAuth("openai", "plus-2", second)
	r := e.run(s, t, 90*time.Second, "say hi")
	fCalls, _ := up.callsBy(first.Access)
	_, sOK := up.callsBy(second.Access)
	t.Logf("%s\nupstream:%s", r, up.describe())
	if r.err != nil || !strings.Contains(r.stdout, "pong-from-sim") || fCalls != 1 || sOK < 1 {
		t.Fatalf("want one refused call on the spent login and the answer from the other: %s", r)
	}
}

func editorToolCallAndItsResult(t *testing.T, e editor) {
	t.Parallel()
	up := newUpstream(t, simOptions())
	s := serve(t, up, "", apiKey{"openai", "main", fakeKey("openai", "edt-"+e.name)})
	r := e.run(s, t, 120*time.Second, "use the tool")
	calls := up.modelCalls()
	t.Logf("%s\nupstream:%s", r, up.describe())
	if r.err != nil || len(calls) < 2 {
		t.Fatalf("want the tool call answered and a second turn: %s", r)
	}
	if last := string(calls[len(calls)-1].Body); !strings.Contains(last, "tool_call_id") && !strings.Contains(last, "function_call_output") {
		t.Fatalf("the second turn carries no tool result:%s", up.describe())
	}
}

func editorRotatesPastARateLimitedKey(t *testing.T, e editor) {
	t.Parallel()
	up := newUpstream(t, simOptions())
	a, b := fakeKey("openai", "edr-a-"+e.name), fakeKey("openai", "edr-b-"+e.name)
	up.Script(a, sim.RateLimited("openai", 30*time.Second))
	s := serve(t, up, "", apiKey{"openai", "first", a}, apiKey{"openai", "second", b})
	r := e.run(s, t, 90*time.Second, "say hi")
	aCalls, _ := up.callsBy(a)
	_, bOK := up.callsBy(b)
	t.Logf("%s\nupstream:%s", r, up.describe())
	if r.err != nil || !strings.Contains(r.stdout, "pong-from-sim") || aCalls != 1 || bOK < 1 {
		t.Fatalf("want one 429 on the first key and the answer from the second: %s", r)
	}
}
