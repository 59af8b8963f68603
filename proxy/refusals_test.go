package proxy

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
)

// An upstream error body of any size reaches the client byte for byte;
// only its head is read to classify it.
func TestLargeErrorBodyPassesThroughWhole(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a")
	msg := strings.Repeat("long context detail ", 1<<20/20)
	body := `{"type":"error","error":{"type":"invalid_request_error","message":"` + msg + `"}}`
	e.up.Script("key-a", sim.Step{Status: 400, Body: body})
	resp, got := e.post("/v1/messages", msgBody)
	if resp.StatusCode != 400 || got != body {
		t.Fatalf("%d: got %d bytes, want %d identical", resp.StatusCode, len(got), len(body))
	}
}

// Each route takes its method; anything else is refused with 405 and
// Allow, in the provider's shape, before any upstream sees it.
func TestWrongMethodIs405(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a")
	e.key("openai", "key-o")
	for _, c := range []struct{ method, path, allow, shape string }{
		{http.MethodGet, "/v1/messages", "POST", `"type":"error"`},
		{http.MethodPut, "/v1/messages", "POST", `"type":"error"`},
		{http.MethodDelete, "/anthropic/v1/messages/count_tokens", "POST", `"type":"error"`},
		{http.MethodPatch, "/v1/responses", "POST", `"error":{`},
		{http.MethodGet, "/v1/chat/completions", "POST", `"error":{`},
		{http.MethodPost, "/v1/models", "GET", `"error":{`},
	} {
		req, _ := http.NewRequest(c.method, e.srv.URL+c.path, strings.NewReader(msgBody))
		req.Header.Set("x-api-key", testClientKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != c.allow || !strings.Contains(string(b), c.shape) {
			t.Errorf("%s %s: %d allow=%q %s", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), b)
		}
	}
	if n := len(e.up.Requests()); n != 0 {
		t.Fatalf("%d upstream calls", n)
	}
}

// A JSON answer cut after its headers still ends in request_finished, and
// the client sees the connection fail rather than a short body.
func TestCutJSONAnswerIsFinished(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a")
	e.up.Script("key-a", sim.Step{CutAfter: 1})
	e.post("/v1/messages", msgBody)
	fin := e.rec.of(api.EventRequestFinished)
	if len(fin) != 1 || fin[0].CredentialID != "key-a" || fin[0].Class != "transient" {
		t.Fatalf("request_finished %+v", fin)
	}
}

// A client that leaves is no news about the credential: its reason stays
// as it was.
func TestAbortLeavesReasonAlone(t *testing.T) {
	e := newEnv(t, true)
	e.key("anthropic", "key-a")
	e.up.Script("key-a", sim.Step{Delay: 5 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	ch := e.async(ctx, "/v1/messages", msgBody)
	for len(e.up.Requests()) == 0 {
		// wait until the upstream has the request
		if ctx.Err() != nil {
			break
		}
		select {
		case <-ch:
			t.Fatal("answered early")
		default:
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-ch
	// The handler may still be unwinding after the client saw the end.
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := e.serving.Wait(wctx); err != nil {
		t.Fatal(err)
	}
	if r := e.state("key-a").Reason; r != "" {
		t.Fatalf("reason %q after the client left", r)
	}
	fin := e.rec.of(api.EventRequestFinished)
	if len(fin) != 1 || fin[0].Class != "aborted" {
		t.Fatalf("request_finished %+v", fin)
	}
}
