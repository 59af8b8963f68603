package classify

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sample is one real upstream answer and what subpool must make of it.
// The files in testdata/corpus hold them, one file per provider, each with
// the public page or issue it was copied from.
type sample struct {
	Name       string            `json:"name"`
	Provider   string            `json:"provider"`
	LimitScope string            `json:"limit_scope"`
	Status     int               `json:"status"`
	Headers    map[string]string `json:"headers"`
	// Body is the body itself when it is JSON, or a JSON string holding it.
	Body json.RawMessage `json:"body"`
	// Stream: Body is the data of the first SSE event, named Event.
	Stream    bool   `json:"stream"`
	Event     string `json:"event"`
	Transport string `json:"transport"` // a transport error instead of a response
	Now       string `json:"now"`
	Want      struct {
		Class        Class `json:"class"`
		Scope        Scope `json:"scope"`
		RetryAfterMS int64 `json:"retry_after_ms"`
		// Status: the verdict's Status for a stream sample, what the
		// in-stream error stands for. Other samples are judged as their
		// own status, or 0 when no response arrived.
		Status int `json:"status"`
		// Tool: the refusal is about the requesting tool, not the
		// credential (Verdict.Tool).
		Tool bool `json:"tool"`
	} `json:"want"`
	Source string `json:"source"`
	Note   string `json:"note"`
}

// corpusNow is the clock for samples whose answer does not depend on it.
var corpusNow = time.Date(2026, 9, 10, 0, 0, 0, 0, time.UTC)

func loadCorpus(t testing.TB) []sample {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "corpus", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus files: %v", err)
	}
	sort.Strings(files)
	var all []sample
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		var ss []sample
		if err := dec.Decode(&ss); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for i := range ss {
			ss[i].Name = filepath.Base(f) + ": " + ss[i].Name
		}
		all = append(all, ss...)
	}
	return all
}

func (s *sample) profile(t testing.TB) *Profile {
	p := Lookup(s.Provider)
	if p == nil {
		t.Fatalf("unknown provider %q", s.Provider)
	}
	if s.LimitScope != "" {
		p = Custom(s.Provider, p.Wire, s.LimitScope)
	}
	return p
}

func (s *sample) body(t testing.TB) []byte {
	if len(s.Body) == 0 {
		return nil
	}
	if s.Body[0] == '"' {
		var text string
		if err := json.Unmarshal(s.Body, &text); err != nil {
			t.Fatal(err)
		}
		return []byte(text)
	}
	return []byte(s.Body)
}

func (s *sample) now(t testing.TB) time.Time {
	if s.Now == "" {
		return corpusNow
	}
	n, err := time.Parse(time.RFC3339, s.Now)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// transportErr builds the error value net/http would hand the proxy.
func transportErr(t testing.TB, kind string) error {
	wrap := func(err error) error {
		return &url.Error{Op: "Post", URL: "https://api.example.com/v1/messages", Err: err}
	}
	switch kind {
	case "":
		return nil
	case "canceled":
		return wrap(context.Canceled)
	case "deadline":
		return wrap(context.DeadlineExceeded)
	case "econnreset":
		return wrap(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)})
	case "econnrefused":
		return wrap(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
	case "unexpected_eof":
		return wrap(io.ErrUnexpectedEOF)
	}
	t.Fatalf("unknown transport error %q", kind)
	return nil
}

func (s *sample) run(t testing.TB) (Verdict, bool) {
	p, now := s.profile(t), s.now(t)
	if s.Stream {
		return ClassifyEvent(p, s.Event, s.body(t), now)
	}
	h := http.Header{}
	for k, v := range s.Headers {
		h.Add(k, v)
	}
	v := Classify(p, Response{Status: s.Status, Header: h, Body: s.body(t), Err: transportErr(t, s.Transport)}, now)
	return v, v.Class != OK
}

func TestCorpus(t *testing.T) {
	for _, s := range loadCorpus(t) {
		t.Run(s.Name, func(t *testing.T) {
			if s.Source == "" || !(strings.HasPrefix(s.Source, "https://") || strings.HasPrefix(s.Source, "constructed")) {
				t.Errorf("source must be a public URL or say it was constructed: %q", s.Source)
			}
			v, isErr := s.run(t)
			got := [3]any{v.Class, v.Scope, v.RetryAfter.Milliseconds()}
			want := [3]any{s.Want.Class, s.Want.Scope, s.Want.RetryAfterMS}
			if got != want {
				t.Errorf("got %v, want %v\nreason: %s", got, want, v.Reason)
			}
			if isErr != (s.Want.Class != OK) {
				t.Errorf("isError = %v for class %s", isErr, s.Want.Class)
			}
			if want := s.wantStatus(); v.Status != want {
				t.Errorf("status %d, want %d", v.Status, want)
			}
			if v.Tool != s.Want.Tool {
				t.Errorf("tool %v, want %v\nreason: %s", v.Tool, s.Want.Tool, v.Reason)
			}
			checkReason(t, v)
		})
	}
}

func (s *sample) wantStatus() int {
	switch {
	case s.Stream:
		return s.Want.Status
	case s.Want.Class == Aborted, s.Transport != "" && s.Status < 400:
		return 0
	}
	return s.Status
}

// checkReason holds every reason to what the tray needs: something to
// read, one line, no secrets.
func checkReason(t testing.TB, v Verdict) {
	t.Helper()
	if v.Reason == "" {
		t.Errorf("empty reason")
	}
	if strings.ContainsAny(v.Reason, "\n\r\t") {
		t.Errorf("reason spans lines: %q", v.Reason)
	}
	for _, secret := range []string{"sk-", "***", "eyJ", "AIza", "ya29."} {
		if strings.Contains(v.Reason, secret) {
			t.Errorf("reason leaks %q: %s", secret, v.Reason)
		}
	}
	if len(v.Reason) > 256 {
		t.Errorf("reason is %d bytes", len(v.Reason))
	}
}

// The corpus must keep covering what the issue asks: every class, every
// built-in provider, enough samples that the tables rest on evidence.
func TestCorpusCoverage(t *testing.T) {
	all := loadCorpus(t)
	if len(all) < 60 {
		t.Errorf("corpus has %d samples, want at least 60", len(all))
	}
	classes := map[Class]int{}
	providers := map[string]int{}
	for _, s := range all {
		classes[s.Want.Class]++
		providers[s.Provider]++
	}
	for _, c := range []Class{OK, RateLimit, Transient, Capacity, AuthExpired, AuthInvalid, Payment, ClientError, Aborted} {
		if classes[c] == 0 {
			t.Errorf("no sample of class %s", c)
		}
	}
	for _, n := range Names() {
		if providers[n] == 0 {
			t.Errorf("no sample for provider %s", n)
		}
	}
	t.Logf("%d samples; by class %v; by provider %v", len(all), classes, providers)
}
