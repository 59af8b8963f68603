package app

import (
	"context"
	"github.com/subpool/subpool/internal/freeport"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subpool/subpool/daemon"
	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/admin/client"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// Config reloads: what can change live applies to what comes next, a bad
// edit changes nothing, what cannot change live says so, and a request
// under way finishes as it started.

// editConfig replaces old with new in the home's config.toml.
func editConfig(t *testing.T, home, old, new string) {
	t.Helper()
	p := filepath.Join(home, "config.toml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("config.toml has no %q", old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
}

func eventsOf(s *daemon.Daemon, typ api.EventType) []api.Event {
	all, _ := s.Hub().Since(0)
	var out []api.Event
	for _, e := range all {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func adminOf(s *daemon.Daemon) *client.Client {
	return &client.Client{Addr: s.Addr(), Token: s.AdminToken()}
}

func TestReloadedLadderAppliesToTheNextCooldown(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "[cooldown]\nladder = [\"30s\"]\n")
	cli(t, keyA, "add-key", "anthropic", "--label", "alpha", "--home", home)
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := startWith(t, daemon.Options{Home: home, Logf: (&logBuf{}).logf, Clock: clk})
	s.StopWatchingConfig() // only the explicit reload below may read the edit

	editConfig(t, home, `ladder = ["30s"]`, `ladder = ["7s", "9s"]`)
	res, err := adminOf(s).Reload(context.Background())
	if err != nil || res.Error != "" || strings.Join(res.Live, ",") != "cooldown.ladder" || len(res.Restart) != 0 {
		t.Fatalf("reload: %+v %v", res, err)
	}
	up.Script(keyA, sim.Step{Status: http.StatusTooManyRequests}) // no reset time: the ladder's
	if resp, body := proxyPost(t, s, "/v1/messages", `{"model":"claude-sonnet-4-5","messages":[]}`); resp.StatusCode != 429 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	cool := eventsOf(s, api.EventCooldownStarted)
	if len(cool) != 1 || cool[0].Until == nil || cool[0].Until.Sub(cool[0].Time) != 7*time.Second || cool[0].Steps != 2 {
		t.Fatalf("cooldown %+v, want the new ladder's 7s of 2 steps", cool)
	}
	if ev := eventsOf(s, api.EventConfigReloaded); len(ev) != 1 || !strings.Contains(ev[0].Reason, "cooldown.ladder") {
		t.Errorf("config_reloaded %+v", ev)
	}
}

func TestBadEditKeepsTheRunningConfig(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "[cooldown]\nladder = [\"30s\"]\n")
	logs := &logBuf{}
	s := startHome(t, home, logs)
	s.StopWatchingConfig()

	editConfig(t, home, `ladder = ["30s"]`, `ladder = ["30x"]`)
	res, err := adminOf(s).Reload(context.Background())
	if err != nil || !strings.Contains(res.Error, "cooldown.ladder[0]") {
		t.Fatalf("reload: %+v %v", res, err)
	}
	if got := s.LiveConfig().Ladder; len(got) != 1 || got[0] != 30*time.Second {
		t.Errorf("running ladder %v", got)
	}
	ev := eventsOf(s, api.EventConfigRejected)
	if len(ev) != 1 || !strings.Contains(ev[0].Reason, "cooldown.ladder[0]") {
		t.Errorf("config_rejected %+v", ev)
	}
	var refused []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "refused") && strings.Contains(l, "config.toml") {
			refused = append(refused, l)
		}
	}
	if len(refused) != 1 || !strings.Contains(refused[0], "cooldown.ladder[0]") {
		t.Errorf("log lines %q, want one naming the key", refused)
	}
	// The CLI says so and fails.
	if code, _, errs := cli(t, "", "reload", "--home", home); code == 0 || !strings.Contains(errs, "cooldown.ladder[0]") {
		t.Errorf("subpool reload: %d %q", code, errs)
	}
}

func TestListenEditWaitsForARestart(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, addr := newHome(t, up, "")
	cli(t, keyA, "add-key", "anthropic", "--label", "alpha", "--home", home)
	s := startHome(t, home, &logBuf{})
	s.StopWatchingConfig()
	other := freeport.Addr(t)
	editConfig(t, home, addr, other)
	code, out, errs := cli(t, "", "reload", "--home", home)
	if code != 0 || !strings.Contains(out, "listen") || !strings.Contains(out, "next start") {
		t.Fatalf("subpool reload: %d %q %q", code, out, errs)
	}
	if resp, body := proxyPost(t, s, "/v1/messages", `{"model":"claude-sonnet-4-5","messages":[]}`); resp.StatusCode != 200 {
		t.Fatalf("still served on %s: %d %s", s.Addr(), resp.StatusCode, body)
	}
	if s.LiveConfig().Listen != addr {
		t.Errorf("running listen %q", s.LiveConfig().Listen)
	}
}

// gate holds each upstream request until released, so a test can act
// while one is in flight without timing anything.
type gate struct {
	arrived chan struct{}
	release chan struct{}
	once    sync.Once
}

func (g *gate) RoundTrip(r *http.Request) (*http.Response, error) {
	g.once.Do(func() {
		close(g.arrived)
		<-g.release
	})
	return http.DefaultTransport.RoundTrip(r)
}

func TestRequestInFlightFinishesAsItStarted(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "[models]\nbest = \"claude-opus-4-5\"\n")
	cli(t, keyA, "add-key", "anthropic", "--label", "alpha", "--home", home)
	g := &gate{arrived: make(chan struct{}), release: make(chan struct{})}
	s := startWith(t, daemon.Options{Home: home, Logf: (&logBuf{}).logf, Transport: g})
	s.StopWatchingConfig()

	type answer struct {
		resp *http.Response
		body string
	}
	done := make(chan answer, 1)
	go func() {
		resp, body := proxyPost(t, s, "/v1/messages", `{"model":"best","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`)
		done <- answer{resp, body}
	}()
	<-g.arrived
	editConfig(t, home, `best = "claude-opus-4-5"`, `best = "claude-haiku-4-5"`)
	if res, _ := s.Reload(context.Background()); strings.Join(res.Live, ",") != "models" {
		t.Fatalf("reload %+v", res)
	}
	close(g.release)
	a := <-done
	if a.resp.StatusCode != 200 || !strings.Contains(a.body, `"model":"best"`) {
		t.Fatalf("%d %s", a.resp.StatusCode, a.body)
	}
	if got := up.Requests(); len(got) != 1 || got[0].Model != "claude-opus-4-5" {
		t.Fatalf("the request in flight went to %+v", got)
	}
	// The next one takes the new alias.
	proxyPost(t, s, "/v1/messages", `{"model":"best","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`)
	if got := up.Requests(); len(got) != 2 || got[1].Model != "claude-haiku-4-5" {
		t.Fatalf("the next request went to %+v", got)
	}
}

// An edit is noticed by itself.
func TestEditIsNoticed(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "[cooldown]\nladder = [\"30s\"]\n")
	logs := &logBuf{}
	s := startHome(t, home, logs)
	editConfig(t, home, `ladder = ["30s"]`, `ladder = ["40s"]`)
	deadline := time.Now().Add(20 * time.Second)
	for len(eventsOf(s, api.EventConfigReloaded)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no config_reloaded after an edit; log:\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := s.LiveConfig().Ladder; len(got) != 1 || got[0] != 40*time.Second {
		t.Fatalf("ladder %v", got)
	}
}

// [wait], [retry] and max_body change live too: an edited max_body and
// transient retries apply to the next request.
func TestReloadedLimitsApplyToTheNextRequest(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "[retry]\ntransient = [\"1ms\", \"1ms\"]\n")
	p := filepath.Join(home, "config.toml")
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, append([]byte("max_body = 100000\n"), b...), 0o600); err != nil {
		t.Fatal(err)
	}
	cli(t, keyA, "add-key", "anthropic", "--label", "alpha", "--home", home)
	s := startWith(t, daemon.Options{Home: home, Logf: (&logBuf{}).logf})
	s.StopWatchingConfig()

	big := `{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[{"role":"user","content":"` + strings.Repeat("x", 3000) + `"}]}`
	editConfig(t, home, "max_body = 100000", "max_body = 1024")
	editConfig(t, home, `transient = ["1ms", "1ms"]`, `transient = ["1ms"]`)
	res, err := adminOf(s).Reload(context.Background())
	if err != nil || res.Error != "" || strings.Join(res.Live, ",") != "max_body,retry.transient" || len(res.Restart) != 0 {
		t.Fatalf("reload: %+v %v", res, err)
	}
	if resp, body := proxyPost(t, s, "/v1/messages", big); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("after max_body = 1024: %d %s", resp.StatusCode, body)
	}
	up.Always(keyA, sim.ServerError(503))
	if resp, body := proxyPost(t, s, "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[]}`); resp.StatusCode != 503 || resp.Header.Get("x-subpool-attempts") != "2" {
		t.Fatalf("after one transient retry: %d attempts %q %s", resp.StatusCode, resp.Header.Get("x-subpool-attempts"), body)
	}
}
