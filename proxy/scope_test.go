package proxy

import (
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
)

// z.ai code 1311 ("plan does not yet include") parks only that model of
// that credential; the ladder is never involved and other models still go.
func TestPaymentParksOnlyThatModel(t *testing.T) {
	e := newEnv(t, false, func(o *Options, _ *simOpts) {
		o.Providers = map[string]*Provider{"zai": {Name: "zai", Wire: "anthropic", Profile: custom("zai", "anthropic", "credential")}}
	})
	e.key("zai", "zai-1", "zai-2")
	e.up.Script("zai-1", sim.Step{Status: 429, Body: `{"type":"error","error":{"type":"1311","message":"Your subscription plan does not yet include access to GLM-5"}}`})
	resp, body := e.post("/zai/v1/messages", `{"model":"glm-5","messages":[]}`)
	if resp.StatusCode != 200 || resp.Header.Get("x-subpool-credential") != "zai-2" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	st := e.state("zai-1")
	if len(st.Parks) != 1 || st.Parks[0].Kind != api.ParkPayment || st.Parks[0].Model != "glm-5" || len(st.Cooldowns) != 0 {
		t.Fatalf("zai-1 %+v", st)
	}
	// Another model still goes to zai-1 (it is least recently used).
	resp, _ = e.post("/zai/v1/messages", `{"model":"glm-4.6","messages":[]}`)
	if resp.Header.Get("x-subpool-credential") != "zai-1" {
		t.Fatalf("other model went to %s", resp.Header.Get("x-subpool-credential"))
	}
	if len(e.rec.of(api.EventCooldownStarted)) != 0 {
		t.Fatal("payment started a cooldown")
	}
}

// On an egress-limited provider one 429 cools every credential of it: one
// upstream call, not one per sibling.
func TestEgressScopeCoolsAllSiblings(t *testing.T) {
	e := newEnv(t, false, func(o *Options, _ *simOpts) {
		o.SoleProviderMax = 0
		o.Providers = map[string]*Provider{"zai": {Name: "zai", Wire: "anthropic", Profile: custom("zai", "anthropic", "egress")}}
	})
	e.key("zai", "zai-1", "zai-2", "zai-3")
	e.up.Script("zai-1", sim.RateLimited("anthropic", time.Minute))
	resp, body := e.post("/zai/v1/messages", msgBody)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "60" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if n := len(e.up.Requests()); n != 1 {
		t.Fatalf("%d upstream calls, want 1", n)
	}
	cds := e.rec.of(api.EventCooldownStarted)
	if len(cds) != 1 || cds[0].Scope != "provider" {
		t.Fatalf("cooldowns %+v", cds)
	}
}

// An invalid key parks the credential for re-login and the request is
// served by another.
func TestAuthInvalidParksAndRotates(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a", "key-b")
	e.up.Script("key-a", sim.Unauthorized("anthropic"))
	resp, body := e.post("/v1/messages", msgBody)
	if resp.StatusCode != 200 || resp.Header.Get("x-subpool-credential") != "key-b" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if st := e.state("key-a"); st.State != api.StateParked || st.Parks[0].Kind != api.ParkRelogin {
		t.Fatalf("key-a %+v", st)
	}
	if len(e.rec.of(api.EventReloginRequired)) != 1 {
		t.Fatal("no relogin_required event")
	}
	// And it stays out: the next request never tries it.
	e.post("/v1/messages", msgBody)
	if e.up.Calls("key-a") != 1 {
		t.Fatal("a parked credential was called again")
	}
}

// The client's own mistakes pass through untouched, without rotation.
func TestClientErrorPassesThrough(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a", "key-b")
	bad := `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 250000 tokens > 200000 maximum"}}`
	e.up.Script("key-a", sim.Step{Status: 400, Body: bad})
	resp, body := e.post("/v1/messages", msgBody)
	if resp.StatusCode != 400 || body != bad || e.up.Calls("key-b") != 0 {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	if !strings.Contains(resp.Header.Get("x-subpool-credential"), "key-a") {
		t.Fatal("missing credential header on a passed-through error")
	}
}

// Affinity: one conversation stays on one credential while it is ready,
// and moves only when that credential cools.
func TestAffinityFollowsConversation(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a", "key-b")
	conv := func(sess string) string {
		return `{"model":"claude-sonnet-4-5","metadata":{"user_id":"{\"device_id\":\"d\",\"account_uuid\":\"\",\"session_id\":\"` + sess + `\"}"},"messages":[]}`
	}
	var first string
	for i := 0; i < 4; i++ {
		resp, _ := e.post("/v1/messages", conv("s-1"))
		got := resp.Header.Get("x-subpool-credential")
		if first == "" {
			first = got
		} else if got != first {
			t.Fatalf("turn %d moved to %s from %s", i, got, first)
		}
		e.post("/v1/messages", conv("s-2")) // another conversation in between
	}
	e.up.Script(first, sim.RateLimited("anthropic", time.Hour))
	resp, _ := e.post("/v1/messages", conv("s-1"))
	moved := resp.Header.Get("x-subpool-credential")
	if moved == first || moved == "" {
		t.Fatalf("did not move off the cooling credential: %s", moved)
	}
	resp, _ = e.post("/v1/messages", conv("s-1"))
	if resp.Header.Get("x-subpool-credential") != moved {
		t.Fatal("conversation did not stay on its new credential")
	}
}
