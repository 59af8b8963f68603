package daemon

import (
	"context"
	"strings"
	"testing"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
)

// Issue 43 on the served path: config.toml's [retry] deadlines reach the
// proxy `subpool serve` runs, over real HTTP, on the real clock
// (shortened), with an upstream that really stalls: at the head the
// second key answers; mid-stream the stream ends with an error event.
func TestServedStreamDeadlines(t *testing.T) {
	const body = `{"model":"claude-sonnet-4-5","stream":true,"max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
	deadlines := "[retry]\nfirst_event_timeout = \"300ms\"\nidle_timeout = \"300ms\"\n"
	for _, c := range []struct {
		name  string
		index int
		want  string
		calls string
	}{
		{"at the head", 0, "event: message_stop", "key-a,key-b"},
		{"mid-stream", 4, "overloaded_error", "key-a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			st := &sim.Stalls{}
			up := startSim(t, sim.Options{BeforeEvent: st.Hook})
			home, _ := newHome(t, up, deadlines)
			s := startHome(t, home, &logBuf{})
			for _, k := range []string{"key-a", "key-b"} {
				if _, err := s.core.AddCredential(context.Background(), api.AddCredential{Provider: "anthropic", Label: k, Kind: api.KindAPIKey, Secret: map[string]string{"key": k}}); err != nil {
					t.Fatal(err)
				}
			}
			st.StallAt("key-a", c.index)
			resp, got := proxyPost(t, s, "/v1/messages", body)
			var seen []string
			for _, r := range up.Requests() {
				seen = append(seen, r.Credential)
			}
			if resp.StatusCode != 200 || !strings.Contains(got, c.want) || strings.Join(seen, ",") != c.calls {
				t.Fatalf("%d, upstream calls %v (want %s):\n%s", resp.StatusCode, seen, c.calls, got)
			}
		})
	}
}
