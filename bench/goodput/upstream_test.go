package goodput

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/clock"
)

// The simulator's upstream builds its answers by hand, for speed; internal/sim
// is the reference for what the services send. Each answer must get the
// same verdict from the real classifier as sim's answer for the same case.
func TestAnswersClassifyLikeSim(t *testing.T) {
	fake := clock.NewFake(Epoch)
	const wait = 42 * time.Second
	ask := func(srv *sim.Server, key string) classify.Response {
		req := httptest.NewRequest(http.MethodPost, "/v1/messages", strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[]}`))
		req.Header.Set("x-api-key", key)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		body, _ := io.ReadAll(rec.Result().Body)
		return classify.Response{Status: rec.Code, Header: rec.Result().Header, Body: body}
	}
	newSim := func() *sim.Server { return sim.New(sim.Options{Clock: fake}) }
	quota := func(announce bool) classify.Response {
		s := newSim()
		s.SetQuota("k", sim.Quota{Requests: 1, Window: wait, Announce: announce})
		ask(s, "k")
		return ask(s, "k")
	}
	step := func(st sim.Step) classify.Response {
		s := newSim()
		s.Script("k", st)
		return ask(s, "k")
	}

	api := &upstream{sc: &Scenario{Provider: "anthropic"}, clk: fake}
	sub := &upstream{sc: &Scenario{Provider: "anthropic", Subscription: true}, clk: fake}
	cases := []struct {
		name      string
		ours, sim classify.Response
	}{
		{"429 with reset", api.rateLimited("claude-sonnet-4-5", 1, wait, true, true), quota(true)},
		{"bare 429", api.rateLimited("claude-sonnet-4-5", 1, wait, false, true), quota(false)},
		{"pool-wide 429 with retry-after", api.rateLimited("claude-sonnet-4-5", 0, wait, true, false), step(sim.RateLimited("anthropic", wait))},
		{"subscription window spent", sub.rateLimited("claude-sonnet-4-5", 1, wait, true, true), step(sim.UnifiedLimitReached(wait))},
		{"529", api.overloaded(), step(sim.Overloaded())},
		{"500", api.serverError(), step(sim.ServerError(500))},
		{"401", api.unauthorized(), step(sim.Unauthorized("anthropic"))},
	}
	// OpenAI names the model whose limit is spent; sim's quota answers do
	// not, so this one is checked against the verdict it must get.
	oa := &upstream{sc: &Scenario{Provider: "openai", PerModel: true}, clk: fake}
	v := classify.Classify(classify.Lookup("openai"), oa.rateLimited("gpt-4.1", 5, wait, true, true), fake.Now())
	if v.Class != classify.RateLimit || v.Scope != classify.ScopeModel || v.RetryAfter != wait {
		t.Errorf("OpenAI per-model 429: %+v", v)
	}

	p := classify.Lookup("anthropic")
	for _, c := range cases {
		if c.ours.Status != c.sim.Status {
			t.Errorf("%s: status %d, sim %d", c.name, c.ours.Status, c.sim.Status)
		}
		a, b := classify.Classify(p, c.ours, fake.Now()), classify.Classify(p, c.sim, fake.Now())
		if a.Class != b.Class || a.Scope != b.Scope || (a.RetryAfter-b.RetryAfter).Abs() > time.Second {
			t.Errorf("%s:\n ours %+v\n sim  %+v", c.name, a, b)
		}
	}
}
