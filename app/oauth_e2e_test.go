package app

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/subpool/subpool/internal/oauth"
	"github.com/subpool/subpool/internal/sim"
)

// Subscription usage the upstream reports in headers is in `subpool list
// --json` (and the table), and requests move to the credential with more
// headroom. This runs the real server end to end; the subscription
// variant is in internal/oauth (TestUtilizationSteersSubscriptions).
func TestUtilizationInListAndSelection(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	ids := map[string]string{}
	for _, k := range []struct{ key, label string }{{keyA, "busy"}, {keyB, "idle"}} {
		code, out, errs := cli(t, k.key+"\n", "add-key", "anthropic", "--label", k.label, "--home", home)
		if code != 0 {
			t.Fatalf("add-key: %q", errs)
		}
		ids[k.label] = strings.Fields(out)[1]
	}
	up.SetUtilization(keyA, 0.9, 0.3)
	up.SetUtilization(keyB, 0.2, 0.1)
	s := startHome(t, home, &logBuf{})
	const body = `{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`
	for range 2 { // one each while nothing is known
		if resp, b := proxyPost(t, s, "/v1/messages", body); resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	}
	for i := range 6 {
		resp, b := proxyPost(t, s, "/v1/messages", body)
		if resp.StatusCode != 200 || resp.Header.Get("x-subpool-credential") != ids["idle"] {
			t.Fatalf("request %d went to %s: %s", i, resp.Header.Get("x-subpool-credential"), b)
		}
	}
	st := listStatusJSON(t, home)
	busy, idle := statusCred(t, st, ids["busy"]), statusCred(t, st, ids["idle"])
	if busy.Usage == nil || busy.Usage.FiveHour == nil || !closeTo(busy.Usage.FiveHour.Used, 0.9) || !closeTo(busy.Usage.SevenDay.Used, 0.3) || busy.Usage.FiveHour.ResetsAt == nil {
		b, _ := json.Marshal(busy.Usage)
		t.Fatalf("busy utilization: %s", b)
	}
	if idle.Usage == nil || !closeTo(idle.Usage.FiveHour.Used, 0.2) || busy.Counters.Requests != 1 || idle.Counters.Requests != 7 {
		t.Fatalf("idle: %+v %+v / %+v", idle.Usage, idle.Counters, busy.Counters)
	}
	_, table, _ := cli(t, "", "list", "--home", home)
	if !strings.Contains(table, "5h 90% ↻") { // the binding window and its reset
		t.Fatalf("table: %s", table)
	}
}

// `subpool login … --no-browser` prints the authorize address on a line of
// its own: Claude Code's claude.ai login page unless authorize_url says
// otherwise.
func TestLoginPrintsTheAddressOnItsOwnLine(t *testing.T) {
	_, oa := startOAuthSim(t, sim.OAuthOptions{})
	home := oauthHome(t, oa)
	code, out, errs := loginWith(t, oa, home, "anthropic", true)
	if code != 0 {
		t.Fatalf("login: %d %q %q", code, out, errs)
	}
	own := false
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, oauth.AnthropicAuthorizeURL+"?") && !strings.ContainsAny(l, " \t") {
			own = true
		}
	}
	if !own {
		t.Fatalf("no line holds the address alone:\n%s", out)
	}
}

func closeTo(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
