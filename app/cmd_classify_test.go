package app

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runClassify(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = cmdClassify(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// Users paste Codex bodies under "openai": the ChatGPT plan's usage
// limit must read as a rate limit with the body's own reset time.
func TestClassifyCodexBodyFromStdin(t *testing.T) {
	body := `{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"plus","resets_in_seconds":3600}}`
	code, out, errOut := runClassify(t, body, "--provider", "openai", "--status", "429", "--body", "-")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if !strings.HasPrefix(out, `{"class":"rate_limit","scope":"credential","retry_after_ms":3600000,"reason":"429 usage_limit_reached: `) {
		t.Errorf("stdout %q", out)
	}
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "}\n") {
		t.Errorf("want one JSON line, got %q", out)
	}
}

func TestClassifyHeadersFileAndClock(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "body.json")
	body := `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your account's rate limit. Please try again later."}}`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runClassify(t, "",
		"--provider", "anthropic", "--status", "429", "--body", file, "--now", "2026-09-05T03:00:00Z",
		"--header", "anthropic-ratelimit-unified-5h-status: rejected",
		"--header", "Anthropic-Ratelimit-Unified-5h-Reset: 1788586800",
		"--header", "retry-after:60")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var got struct {
		Class        string `json:"class"`
		Scope        string `json:"scope"`
		RetryAfterMS int64  `json:"retry_after_ms"`
		Reason       string `json:"reason"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	// The rejected window resets at 05:40Z, 2h40m after --now.
	if got.Class != "rate_limit" || got.Scope != "credential" || got.RetryAfterMS != 9600000 || got.Reason == "" {
		t.Errorf("got %+v", got)
	}
}

func TestClassifyEventAndEgress(t *testing.T) {
	code, out, _ := runClassify(t, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		"--provider", "anthropic", "--event", "error", "--body", "-")
	if code != 0 || !strings.HasPrefix(out, `{"class":"capacity","scope":"",`) {
		t.Errorf("event: exit %d, %q", code, out)
	}
	code, out, _ = runClassify(t, "", "--provider", "openai-compatible", "--status", "429", "--limit-scope", "egress")
	if code != 0 || !strings.HasPrefix(out, `{"class":"rate_limit","scope":"provider",`) {
		t.Errorf("egress: exit %d, %q", code, out)
	}
	code, out, _ = runClassify(t, "", "--provider=zai", "--status=200")
	if code != 0 || out != `{"class":"ok","scope":"","retry_after_ms":0,"reason":"ok"}`+"\n" {
		t.Errorf("ok: exit %d, %q", code, out)
	}
}

func TestClassifyBadFlags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		says string // what the one line must name
	}{
		{"no provider", []string{"--status", "429"}, "--provider"},
		{"unknown provider", []string{"--provider", "mistral", "--status", "429"}, `"mistral"`},
		{"no status", []string{"--provider", "openai"}, "--status"},
		{"status not a number", []string{"--provider", "openai", "--status", "many"}, `"many"`},
		{"status out of range", []string{"--provider", "openai", "--status", "42"}, "--status"},
		{"header without colon", []string{"--provider", "openai", "--status", "429", "--header", "retry-after 30"}, "--header"},
		{"header with empty name", []string{"--provider", "openai", "--status", "429", "--header", ": 30"}, "--header"},
		{"missing body file", []string{"--provider", "openai", "--status", "429", "--body", "/nonexistent/body.json"}, "--body"},
		{"unknown flag", []string{"--provider", "openai", "--status", "429", "--verbose"}, "-verbose"},
		{"flag without value", []string{"--provider"}, "-provider"},
		{"stray argument", []string{"--provider", "openai", "--status", "429", "extra"}, `"extra"`},
		{"bad limit scope", []string{"--provider", "openai", "--status", "429", "--limit-scope", "global"}, "--limit-scope"},
		{"bad clock", []string{"--provider", "openai", "--status", "429", "--now", "yesterday"}, "--now"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runClassify(t, "", c.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if out != "" {
				t.Errorf("stdout %q", out)
			}
			if strings.Count(errOut, "\n") != 1 || !strings.HasSuffix(errOut, "\n") {
				t.Errorf("want one line on stderr, got %q", errOut)
			}
			if !strings.HasPrefix(errOut, "subpool classify: ") || !strings.Contains(errOut, c.says) {
				t.Errorf("stderr %q does not name %q", errOut, c.says)
			}
		})
	}
}

func TestClassifyHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		code, out, errOut := runClassify(t, "", arg)
		if code != 0 || errOut != "" || !strings.Contains(out, "Usage: subpool classify --provider") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", arg, code, out, errOut)
		}
	}
}
