package proxy

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/subpool/subpool/proxy/api"
)

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(s))
	zw.Close()
	return b.Bytes()
}

func (e *env) postGzip(path string, body []byte) (*http.Response, string) {
	e.t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, e.srv.URL+path, bytes.NewReader(body))
	req.Header.Set("x-api-key", testClientKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// A compressed request body is read for its model like a plain one, and
// sent on as it came; where the body must be rewritten (an alias's model)
// the plain body goes instead, without the Content-Encoding (issue 27: a
// gzip body was forwarded opaque, so aliases, model cooldowns and
// history's model column did not apply).
func TestCompressedBodyIsReadAndSentAsItCame(t *testing.T) {
	e := newEnv(t, false, withAliases(bestAlias))
	e.key("anthropic", "key-a")
	src := gz(t, msgBody)
	e.postGzip("/v1/messages", src)
	recs := e.up.Requests()
	if len(recs) != 1 || !bytes.Equal(recs[0].Body, src) || recs[0].Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("upstream got %d requests, body sent as it came: %v", len(recs), len(recs) == 1 && bytes.Equal(recs[0].Body, src))
	}
	fin := e.rec.of(api.EventRequestFinished)
	if len(fin) != 1 || fin[0].Model != "claude-sonnet-4-5" {
		t.Fatalf("request_finished %+v, want the model read from the compressed body", fin)
	}

	e.postGzip("/v1/messages", gz(t, strings.Replace(msgBody, "claude-sonnet-4-5", "opus", 1)))
	recs = e.up.Requests()
	last := recs[len(recs)-1]
	if last.Model != "claude-opus-4-5" || last.Header.Get("Content-Encoding") != "" || !bytes.Contains(last.Body, []byte(`"claude-opus-4-5"`)) {
		t.Fatalf("alias through a compressed body: upstream saw model %q, encoding %q, body %q", last.Model, last.Header.Get("Content-Encoding"), last.Body)
	}
}

// A compressed body that decodes past max_body is refused like a large one.
func TestCompressedBodyIsBoundedByMaxBody(t *testing.T) {
	e := newEnv(t, false, func(o *Options, _ *simOpts) { o.MaxBody = 4 << 10 })
	e.key("anthropic", "key-a")
	big := `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"` + strings.Repeat("a", 64<<10) + `"}]}`
	resp, body := e.postGzip("/v1/messages", gz(t, big))
	if resp.StatusCode != 413 || !strings.Contains(body, "decompresses to more than max_body") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if n := len(e.up.Requests()); n != 0 {
		t.Fatalf("%d upstream calls", n)
	}
}
