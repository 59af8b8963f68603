package proxy

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/subpool/subpool/internal/sim"
)

func TestUpstreamHeadersAreBounded(t *testing.T) {
	for _, c := range []struct {
		name string
		n    int
	}{{"past the transport's bound", 100_000}, {"past what is relayed", 3_000}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, false)
			e.key("anthropic", "key-a")
			h := map[string]string{}
			for i := range c.n {
				h[fmt.Sprintf("X-Filler-%06d", i)] = "aaaaaaaaaaaaaaaaaa"
			}
			e.up.Always("key-a", sim.Step{Header: h})
			r := e.pump(e.async(context.Background(), "/v1/messages", msgBody))
			if r.resp == nil || r.resp.StatusCode != http.StatusBadGateway || !strings.Contains(r.body, "headers") || !strings.Contains(r.body, "bound") {
				t.Fatalf("%v %s", r.resp, r.body)
			}
			t.Logf("%d %s", r.resp.StatusCode, r.body)
			if len(r.resp.Header) > 20 {
				t.Fatalf("%d headers relayed", len(r.resp.Header))
			}
		})
	}
}

func TestOrdinaryHeadersAreRelayed(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a")
	e.up.Script("key-a", sim.Step{Header: map[string]string{"X-Upstream-Note": strings.Repeat("n", 8<<10)}})
	resp, body := e.post("/v1/messages", msgBody)
	if resp.StatusCode != http.StatusOK || len(resp.Header.Get("X-Upstream-Note")) != 8<<10 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
}
