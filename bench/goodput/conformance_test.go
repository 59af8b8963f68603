package goodput

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/auth"
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/clock"
	"github.com/subpool/subpool/proxy/pool"
)

// The subpool strategy decides with proxy/policy and keeps the pool's
// books with pool.Apply, both the engine's own; only its carrying out of
// the actions (run.carryOut, run.lease) is a copy. This test plays the
// same requests, one after the other, through the real proxy (on a
// fake clock, with an in-memory transport answering from the same upstream
// model) and through the mirror, and requires the same upstream calls in
// the same order at the same times. If attempt.go changes how it carries
// actions out, this fails until subpool.go follows.
func TestMirrorMatchesProxy(t *testing.T) {
	seen := map[int]int{}
	for _, c := range []struct {
		announce, perModel bool
	}{{true, false}, {false, false}, {true, true}} {
		name := fmt.Sprintf("announce=%v", c.announce)
		if c.perModel {
			name += ",per-model"
		}
		t.Run(name, func(t *testing.T) {
			sc := small(c.announce)
			// One request at a time: below the quota, so that requests
			// do not queue behind each other's waits and reach the
			// outage, the storm and the revoked key when they happen.
			sc.Models[0].Load = 0.6
			if c.perModel {
				// Two models with limits of their own, so that each
				// answer's budget is its model's: the proxy and the
				// mirror must key them alike.
				sc.PerModel = true
				sc.Models[0].Load = 0.4
				sc.Models = append(sc.Models, Model{Name: "claude-haiku-4-5", Quota: 2, Load: 0.4})
			}
			sc.Duration = 15 * time.Minute
			// No upstream latency, like the proxy's in-memory transport:
			// with 1 ns, instants that tie in the proxy fall a nanosecond
			// apart in the mirror, and after an outage a different
			// credential probes first.
			sc.ErrLatency, sc.TTFB, sc.Stream = 0, 0, 0
			arr := sc.arrivals()
			want := viaProxy(t, sc, arr)
			got := viaMirror(sc, arr)
			if len(want) == 0 {
				t.Fatal("no upstream calls")
			}
			// Both sides' times are compared to the millisecond.
			for _, calls := range [][]call{got, want} {
				for i := range calls {
					calls[i].At = calls[i].At.Round(time.Millisecond)
				}
			}
			n := min(len(got), len(want))
			for i := range n {
				if got[i] != want[i] {
					t.Fatalf("call %d differs:\nproxy  %+v\nmirror %+v\n(of %d and %d calls)", i, want[i], got[i], len(want), len(got))
				}
			}
			if len(got) != len(want) {
				t.Fatalf("proxy made %d calls, mirror %d", len(want), len(got))
			}
			for _, c := range want {
				seen[c.Status]++
			}
			t.Logf("%d requests, %d identical upstream calls", len(arr), len(want))
		})
	}
	for _, st := range []int{200, 429, 529, 401, 500} {
		if seen[st] == 0 {
			t.Errorf("no call answered %d: the scenario no longer covers that branch", st)
		}
	}
}

// The mirror, one request at a time: each starts at its arrival or when
// the previous one ended, whichever is later.
func viaMirror(sc *Scenario, arr []arrival) []call {
	w := newWorld()
	e := &env{sc: sc, w: w, up: newUpstream(sc, w), prof: classify.Lookup(sc.Provider)}
	e.up.keep = true
	for range sc.Outages {
		e.firstOKAfter = append(e.firstOKAfter, -1)
	}
	handle := startSubpool(subpoolConfig{Jitter: func() float64 { return 0.5 }})(e)
	for i, a := range arr {
		r := &request{id: i, arrive: a.at, model: a.model}
		e.reqs = append(e.reqs, r)
		w.at(Epoch.Add(a.at), func() { handle(r) })
		w.runUntil(func() bool { return r.done })
	}
	return e.up.log
}

// viaProxy plays the arrivals through proxy.Proxy.
func viaProxy(t *testing.T, sc *Scenario, arr []arrival) []call {
	fake := clock.NewFake(Epoch)
	up := newUpstream(sc, fake)
	up.keep = true
	pl := pool.New(fake, pool.Config{}, nil)
	pl.SetProvider(sc.Provider, classify.Lookup(sc.Provider).LimitScope)
	for i := range sc.Creds {
		pl.Add(pool.Credential{ID: credID(i), Provider: sc.Provider, Label: credID(i), Kind: api.KindAPIKey})
	}
	px := proxy.New(proxy.Options{
		Clock: fake, Pool: pl, Auth: idAuth{},
		Providers: map[string]*proxy.Provider{sc.Provider: {Name: sc.Provider, Wire: sc.Provider,
			BaseURL: "http://upstream.invalid", Profile: classify.Lookup(sc.Provider)}},
		SoleProviderMax: 2 * time.Minute, CapacityMax: 5 * time.Minute,
		Transport: modelTransport{up: up}, Jitter: func() float64 { return 0.5 },
	})
	for _, a := range arr {
		if at := Epoch.Add(a.at); at.After(fake.Now()) {
			fake.AdvanceTo(at)
		}
		body := fmt.Sprintf(`{"model":%q,"max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`, a.model)
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8787/v1/messages", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		done := make(chan struct{})
		go func() {
			px.ServeHTTP(httptest.NewRecorder(), req)
			close(done)
		}()
		pump(t, fake, done)
	}
	return up.log
}

// pump lets a request's own waits pass on the fake clock until it is done.
func pump(t *testing.T, fake *clock.Fake, done <-chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		select {
		case <-done:
			return
		default:
		}
		adv := make(chan error, 1)
		wctx, wcancel := context.WithCancel(ctx)
		go func() { adv <- fake.AdvanceToNextWaiter(wctx) }()
		select {
		case <-done:
			wcancel()
			<-adv
			return
		case err := <-adv:
			wcancel()
			if err != nil {
				t.Fatal("request never finished")
			}
		}
	}
}

type idAuth struct{}

func (idAuth) Auth(_ context.Context, cred pool.Credential, refresh bool) (auth.Auth, error) {
	if refresh {
		return auth.Auth{}, auth.ErrNoRefresh
	}
	return auth.Auth{Header: http.Header{"X-Api-Key": {cred.ID}}}, nil
}

// modelTransport answers from the upstream model, at once.
type modelTransport struct{ up *upstream }

func (m modelTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	var body struct {
		Model string `json:"model"`
	}
	json.Unmarshal(b, &body)
	i := -1
	for k := range m.up.creds {
		if credID(k) == r.Header.Get("X-Api-Key") {
			i = k
		}
	}
	if i < 0 {
		return nil, fmt.Errorf("unknown key %q", r.Header.Get("X-Api-Key"))
	}
	a := m.up.serve(i, body.Model)
	m.up.delivered(a)
	h := a.resp.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{StatusCode: a.resp.Status, Header: h, Body: io.NopCloser(bytes.NewReader(a.resp.Body)),
		ContentLength: int64(len(a.resp.Body)), Request: r, ProtoMajor: 1, ProtoMinor: 1}, nil
}
