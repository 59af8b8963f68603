package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/clock"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// start runs a sim on loopback for the test's lifetime.
func start(t *testing.T, opts Options) *Server {
	t.Helper()
	s := New(opts)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func startFake(t *testing.T, opts Options) (*Server, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(epoch)
	opts.Clock = clk
	return start(t, opts), clk
}

// guard is a hang guard, not a timing assertion: it only fires when the
// code under test deadlocks (a stream that never flushes, a wait that
// never wakes), turning a stuck test into a failure with a message.
func guard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// call sends a request carrying cred the way that route's clients do:
// x-api-key for Anthropic, a bearer token otherwise. Extra headers come in
// key, value pairs.
func call(t *testing.T, ctx context.Context, s *Server, method, path, cred, body string, hdr ...string) *http.Response {
	t.Helper()
	resp, err := do(ctx, s, method, path, cred, body, hdr...)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func do(ctx context.Context, s *Server, method, path, cred, body string, hdr ...string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.URL()+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if cred != "" {
		if providerOf(req.URL.Path) == Anthropic {
			req.Header.Set("x-api-key", cred)
		} else {
			req.Header.Set("Authorization", "Bearer "+cred)
		}
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return http.DefaultClient.Do(req)
}

// post sends a POST and returns the status, headers and whole body.
func post(t *testing.T, s *Server, path, cred, body string, hdr ...string) (int, http.Header, []byte) {
	t.Helper()
	resp := call(t, guard(t), s, http.MethodPost, path, cred, body, hdr...)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: reading body: %v", path, err)
	}
	return resp.StatusCode, resp.Header, b
}

type event struct {
	Name string // "" on Chat Completions
	Data []byte
}

// eventReader parses SSE as the clients do: "event:" and "data:" lines,
// a blank line ending each event.
type eventReader struct{ br *bufio.Reader }

func newEventReader(r io.Reader) *eventReader { return &eventReader{bufio.NewReader(r)} }

// next returns the next event, io.EOF at a clean end, or the transport's
// error (io.ErrUnexpectedEOF when the connection was cut mid-body).
func (er *eventReader) next() (event, error) {
	var ev event
	seen := false
	for {
		line, err := er.br.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && line == "" && !seen {
				return ev, io.EOF
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return ev, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if seen {
				return ev, nil
			}
		case strings.HasPrefix(line, "event: "):
			ev.Name, seen = strings.TrimPrefix(line, "event: "), true
		case strings.HasPrefix(line, "data: "):
			ev.Data, seen = []byte(strings.TrimPrefix(line, "data: ")), true
		}
	}
}

// events reads a whole stream, failing the test on anything but a clean
// end.
func events(t *testing.T, r io.Reader) []event {
	t.Helper()
	evs, err := readEvents(r)
	if err != nil {
		t.Fatalf("after %d events: %v", len(evs), err)
	}
	return evs
}

func readEvents(r io.Reader) ([]event, error) {
	er := newEventReader(r)
	var evs []event
	for {
		ev, err := er.next()
		if err == io.EOF {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func names(evs []event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Name
	}
	return out
}

// decode unmarshals JSON strictly enough to catch a malformed body.
func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, b)
	}
	return m
}

// get walks a decoded object by a dotted path; numeric parts index arrays.
func get(t *testing.T, m any, path string) any {
	t.Helper()
	cur := m
	for _, part := range strings.Split(path, ".") {
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[part]
			if !ok {
				t.Fatalf("%s: no %q in %v", path, part, v)
			}
			cur = next
		case []any:
			i := -1
			for j := range v {
				if part == itoa(j) {
					i = j
				}
			}
			if i < 0 {
				t.Fatalf("%s: index %q out of %d", path, part, len(v))
			}
			cur = v[i]
		default:
			t.Fatalf("%s: cannot enter %T at %q", path, cur, part)
		}
	}
	return cur
}

func str(t *testing.T, m any, path string) string {
	t.Helper()
	s, ok := get(t, m, path).(string)
	if !ok {
		t.Fatalf("%s: %v is not a string", path, get(t, m, path))
	}
	return s
}

func num(t *testing.T, m any, path string) int64 {
	t.Helper()
	n, ok := get(t, m, path).(json.Number)
	if !ok {
		t.Fatalf("%s: %v is not a number", path, get(t, m, path))
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return i
}

func isNull(t *testing.T, m any, path string) bool {
	t.Helper()
	return get(t, m, path) == nil
}
