package app

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/classify"
)

// `subpool reserve` with no proxy running writes the state file, which
// the proxy reads at its next start; bad input is one line.
func TestReserveWithoutProxy(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	code, out, _ := cli(t, keyA, "add-key", "anthropic", "--label", "alpha", "--home", home)
	if code != 0 {
		t.Fatal(out)
	}
	id := strings.Fields(out)[1]
	if code, out, errs := cli(t, "", "reserve", id, "15%", "--home", home); code != 0 || !strings.Contains(out, "15%") {
		t.Fatalf("reserve: %d %q %q", code, out, errs)
	}
	state := func() string {
		b, _ := os.ReadFile(filepath.Join(home, "state.json"))
		return string(b)
	}
	if !strings.Contains(state(), `"reserve": 15`) && !strings.Contains(state(), `"reserve":15`) {
		t.Fatalf("state file %s", state())
	}
	if code, _, _ := cli(t, "", "reserve", id, "default", "--home", home); code != 0 || strings.Contains(state(), "reserve") {
		t.Fatalf("default: %d, state %s", code, state())
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"reserve", id, "100"}, 2, "0 to 99"},
		{[]string{"reserve", id}, 2, "percent"},
		{[]string{"reserve", "nope", "10"}, 1, "subpool list"},
	} {
		code, _, errs := cli(t, "", append(tc.args, "--home", home)...)
		if code != tc.code || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: %d %q", tc.args, code, errs)
		}
	}
}

// With the proxy running, the reserve goes through the admin API and holds
// at once; `subpool list` shows the binding window with its reset, and
// --json every window.
func TestReserveAndListWithProxy(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "[usage]\npoll = \"0\"\n")
	s := startHome(t, home, &logBuf{})
	id, err := s.AddCredential(context.Background(), api.AddCredential{Provider: "anthropic", Label: "Claude Max", Kind: api.KindOAuth,
		Secret: map[string]string{"access_token": "at-test-0123456789", "refresh_token": "rt-test-0123456789", "expires_at": time.Now().Add(time.Hour).Format(time.RFC3339)}})
	if err != nil {
		t.Fatal(err)
	}
	q, err := classify.ReadClaudeUsage([]byte(`{"five_hour":{"utilization":72,"resets_at":"`+time.Now().Add(2*time.Hour).UTC().Format(time.RFC3339)+`"},
		"seven_day":{"utilization":40,"resets_at":"`+time.Now().Add(72*time.Hour).UTC().Format(time.RFC3339)+`"}}`), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s.Pool().SetQuota(id, q)

	if code, out, errs := cli(t, "", "reserve", id, "30", "--home", home); code != 0 {
		t.Fatalf("reserve: %q %q", out, errs)
	}
	_, out, _ := cli(t, "", "list", "--home", home)
	reset := time.Now().Add(2 * time.Hour).Local().Format("15:04")
	if !strings.Contains(out, "5h 72% ↻"+reset+" (held: reserve 30%)") {
		t.Fatalf("list:\n%s", out)
	}
	_, out, _ = cli(t, "", "list", "--json", "--home", home)
	var st api.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	c := st.Providers[0].Credentials[0]
	if c.Reserve != 30 || c.ReservedUntil == nil || c.Usage == nil || len(c.Usage.Windows) != 2 ||
		c.Usage.Windows[0].Name != "5h" || !c.Usage.Windows[0].Binding || c.Usage.Windows[1].Name != "7d" || c.Usage.Windows[1].ResetsAt == nil {
		t.Fatalf("list --json: %+v", c)
	}
	if !strings.Contains(out, `"binding": true`) || !strings.Contains(out, `"resets_at"`) {
		t.Fatalf("json lacks the window fields:\n%s", out)
	}
}
