package daemon

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
)

// The served binary's upstream transport is the daemon's, not the one
// proxy.New makes when given none: it must carry the bound on the headers
// read too.
// An upstream sending 100,000 headers (3.6 MB) gets the 502 that names
// the 1 MiB read bound, not the relay bound after reading it all.
func TestServedTransportBoundsUpstreamHeaders(t *testing.T) {
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	s := startHome(t, home, &logBuf{})
	if _, err := s.core.AddCredential(context.Background(), api.AddCredential{Provider: "anthropic", Label: "key-a", Kind: api.KindAPIKey, Secret: map[string]string{"key": "key-a"}}); err != nil {
		t.Fatal(err)
	}
	h := map[string]string{}
	for i := range 100_000 {
		h[fmt.Sprintf("X-Filler-%06d", i)] = "aaaaaaaaaaaaaaaaaa"
	}
	up.Always("key-a", sim.Step{Header: h})
	resp, body := proxyPost(t, s, "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "more than 1 MiB of response headers") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}
