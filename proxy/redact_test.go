package proxy

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/subpool/subpool/internal/sim"
)

func TestRelayedErrorBodiesHideThePoolsSecrets(t *testing.T) {
	const own = "sk-ant-api03-own-secret-0123456789abcdefghij"
	const other = "sk-ant-api03-other-secret-9876543210zyxwvu"
	e := newEnv(t, false)
	e.key("anthropic", other)
	e.post("/v1/messages", msgBody) // the proxy sends other's key once
	e.pool.Remove(other)
	e.key("anthropic", own)
	prefix := `{"type":"error","error":{"type":"invalid_request_error","message":"`
	echo := func(pad int) string {
		return prefix + strings.Repeat("p", pad) + `headers: x-api-key: ` + own + `, before: ` + other + `, again: Bearer ` + own + `"}}`
	}
	for name, body := range map[string]string{
		"a short echo": echo(0),
		// own's first copy starts 10 bytes before the end of the head.
		"across the head": echo(maxErrorBody - len(prefix) - len("headers: x-api-key: ") - 10),
		"past the head":   echo(3 * maxErrorBody),
	} {
		e.up.Script(own, sim.Step{Status: 400, Body: body})
		resp, got := e.post("/v1/messages", msgBody)
		if resp.StatusCode != http.StatusBadRequest || len(got) != len(body) || resp.ContentLength >= 0 && resp.ContentLength != int64(len(body)) {
			t.Errorf("%s: %d, %d bytes of %d (Content-Length %d)", name, resp.StatusCode, len(got), len(body), resp.ContentLength)
		}
		if strings.Contains(got, own) || strings.Contains(got, other) || strings.Count(got, "[redacted") != 3 {
			t.Errorf("%s: a secret reached the client: …%s", name, got[max(0, len(got)-200):])
		}
	}
	// An error event in a 200 stream, relayed as the HTTP error it is.
	e.up.Script(own, sim.Step{StreamError: `{"type":"error","error":{"type":"invalid_request_error","message":"echo ` + own + `"}}`})
	resp, got := e.post("/v1/messages", strings.Replace(msgBody, `"max_tokens"`, `"stream":true,"max_tokens"`, 1))
	if strings.Contains(got, own) || !strings.Contains(got, "[redacted") {
		t.Errorf("in-stream error: %d %s", resp.StatusCode, got)
	}
	// The same event after content reached the client: it goes out as the
	// stream's last event, masked too.
	e.up.Script(own, sim.Step{StreamError: `{"type":"error","error":{"type":"api_error","message":"echo ` + own + `"}}`, ErrorAfter: 2})
	resp, got = e.post("/v1/messages", strings.Replace(msgBody, `"max_tokens"`, `"stream":true,"max_tokens"`, 1))
	if resp.StatusCode != http.StatusOK || strings.Contains(got, own) || !strings.Contains(got, "[redacted") || !strings.Contains(got, "content_block_delta") {
		t.Errorf("mid-stream error: %d %s", resp.StatusCode, got)
	}
}

// The stream's masking holds whatever the reads' sizes: a byte at a time,
// a secret across every boundary, secrets that overlap or hold another.
func TestRedactReaderAtEveryBoundary(t *testing.T) {
	list := [][]byte{[]byte("sk-ant-secret-long-one"), []byte("secret-long")}
	src := "a sk-ant-secret-long-one b secret-long c sk-ant-sk-ant-secret-long-one secret-lon"
	want := "a [redacted************] b [redacted*] c sk-ant-[redacted************] secret-lon"
	if len(want) != len(src) {
		t.Fatalf("the expectation is %d bytes, the source %d", len(want), len(src))
	}
	for name, r := range map[string]io.Reader{
		"one byte at a time": iotest.OneByteReader(strings.NewReader(src)),
		"half":               iotest.HalfReader(strings.NewReader(src)),
		"whole":              strings.NewReader(src),
	} {
		got, err := io.ReadAll(newRedactReader(r, io.NopCloser(nil), list))
		if err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
}
