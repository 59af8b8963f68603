package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata from the current output")

func TestMain(m *testing.M) {
	// OpenAI answers carry a creation time; a fixed one keeps goldens
	// stable. Set once, before any test runs, so no test races on it.
	now = func() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }
	os.Exit(m.Run())
}

// golden compares got with the file, or rewrites the file under -update.
func golden(t *testing.T, file string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (go test -update rewrites it after review):\n--- got\n%s\n--- want\n%s", file, got, want)
	}
}

func indent(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, b)
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

func readFile(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wireOf names the wire of a fixture by its file name prefix.
func wireOf(name string) Target {
	switch {
	case strings.HasPrefix(name, "chat_"):
		return OpenAIChat
	case strings.HasPrefix(name, "responses_"):
		return OpenAIResponses
	case strings.HasPrefix(name, "gemini_"):
		return Gemini
	case strings.HasPrefix(name, "code_assist_"):
		return GeminiCodeAssist
	}
	return Anthropic
}

// targetsOf is where a fixture of wire from is translated to. (Gemini
// and Code Assist, which differ by an envelope, are tested apart.)
func targetsOf(from Target) []Target {
	switch from {
	case Anthropic:
		return []Target{OpenAIChat, OpenAIResponses, Gemini, GeminiCodeAssist}
	case Gemini:
		return []Target{Anthropic, OpenAIChat, OpenAIResponses}
	case GeminiCodeAssist:
		return []Target{Anthropic, OpenAIChat}
	case OpenAIChat:
		return []Target{Anthropic, Gemini, OpenAIResponses}
	}
	return []Target{Anthropic, Gemini, OpenAIChat}
}

// Request fixtures are real client shapes: Claude Code (cache_control,
// thinking, metadata.user_id as JSON, image tool results, is_error),
// opencode on Chat Completions (system + developer, parallel tool calls,
// a foreign tool id), Codex CLI on Responses (developer message,
// reasoning items, function calls, store/include/prompt_cache_key),
// Gemini CLI with a key (calls without ids answered by responses with
// ids of its own, thought signatures, an OpenAPI schema, its sampling
// and thinking defaults) and with a Google login (the Code Assist
// envelope, calls with the ids a translated answer gave, an image read
// by a tool).
var requestCases = []struct {
	file   string
	from   Target
	to     Target
	model  string
	stream bool // a Gemini client's :streamGenerateContent
}{
	// gpt-4.1 takes no reasoning effort: thinking is dropped with a note,
	// temperature is kept.
	{"claude_code", Anthropic, OpenAIChat, "gpt-4.1", false},
	// gpt-5 takes an effort but no temperature.
	{"claude_code", Anthropic, OpenAIResponses, "gpt-5", false},
	{"images_and_choice", Anthropic, OpenAIChat, "gpt-4o", false},
	{"adaptive_effort", Anthropic, OpenAIChat, "o3", false},
	{"adaptive_effort", Anthropic, OpenAIResponses, "gpt-5.1-codex", false},
	// The ChatGPT backend: no output cap, always streaming, instructions
	// required, the user id as cache key.
	{"claude_code", Anthropic, ChatGPTCodex, "gpt-5-codex", false},
	{"adaptive_effort", Anthropic, ChatGPTCodex, "gpt-5-codex", false},
	{"opencode", OpenAIChat, Anthropic, "claude-sonnet-4-5", false},
	{"codex", OpenAIResponses, Anthropic, "claude-sonnet-4-5", false},
	{"easy_input", OpenAIResponses, Anthropic, "claude-haiku-4-5", false},

	// Claude Code on Gemini: a budget on Gemini 2.5, a level on Gemini 3
	// (whose function responses carry their images), the Code Assist
	// envelope.
	{"claude_code", Anthropic, Gemini, "gemini-2.5-pro", false},
	{"claude_code", Anthropic, GeminiCodeAssist, "gemini-3-pro-preview", false},
	{"adaptive_effort", Anthropic, Gemini, "gemini-3-flash-preview", false},
	{"opencode", OpenAIChat, Gemini, "gemini-2.5-flash", false},
	{"codex", OpenAIResponses, Gemini, "gemini-2.5-pro", false},
	// Gemini CLI on Claude or OpenAI.
	{"gemini_cli", Gemini, Anthropic, "claude-sonnet-4-5", true},
	{"gemini_cli", Gemini, OpenAIChat, "gpt-4.1", true},
	{"gemini_cli", Gemini, OpenAIResponses, "gpt-5", false},
	{"gemini_cli", Gemini, ChatGPTCodex, "gpt-5-codex", true},
	{"code_assist_cli", GeminiCodeAssist, Anthropic, "claude-opus-4-1", true},
	// A key's client on a login's credential, and back.
	{"gemini_cli", Gemini, GeminiCodeAssist, "gemini-2.5-pro", true},
	{"code_assist_cli", GeminiCodeAssist, Gemini, "gemini-2.5-pro", true},

	// Chat ⇄ Responses. An editor on the OpenAI SDK (Cline's shape:
	// system and developer messages, a web image with its detail,
	// parallel calls, a refusal in history, a strict tool, a named
	// choice) on the Responses API and on a ChatGPT login; structured
	// output crosses.
	{"editor_chat", OpenAIChat, OpenAIResponses, "gpt-5", false},
	{"editor_chat", OpenAIChat, ChatGPTCodex, "gpt-5-codex", false},
	{"sdk_chat_schema", OpenAIChat, OpenAIResponses, "gpt-4.1-mini", false},
	// Codex CLI on a chat-only provider (no reasoning effort there);
	// Codex 0.171's own request, recorded: its sub-agent tools in a
	// namespace (flattened, a call in history too), hosted web search
	// (dropped with a note), no instructions; and the same on Claude.
	{"codex", OpenAIResponses, OpenAIChat, "deepseek-chat", false},
	{"codex_0171", OpenAIResponses, OpenAIChat, "deepseek-chat", false},
	{"codex_0171", OpenAIResponses, Anthropic, "claude-sonnet-4-5", false},
	// A Responses request for a ChatGPT login: Codex CLI's passes as it
	// is; the SDK's (stream false, an output cap, store true, no
	// instructions) is put in the backend's shape.
	{"codex", OpenAIResponses, ChatGPTCodex, "gpt-5-codex", false},
	{"sdk_responses", OpenAIResponses, ChatGPTCodex, "gpt-5-codex", false},
	{"sdk_responses", OpenAIResponses, OpenAIChat, "gpt-5", false},
}

func TestRequestGolden(t *testing.T) {
	for _, tc := range requestCases {
		name := tc.file + ".to-" + string(tc.to)
		t.Run(name, func(t *testing.T) {
			in := readFile(t, filepath.Join("testdata", "requests", tc.file+".json"))
			body, notes, err := RequestWithOptions(tc.from, tc.to, in, tc.model, RequestOptions{Stream: tc.stream})
			if err != nil {
				t.Fatal(err)
			}
			if notes == nil {
				notes = []string{}
			}
			out := marshal(struct {
				Notes []string        `json:"notes"`
				Body  json.RawMessage `json:"body"`
			}{notes, body})
			golden(t, filepath.Join("testdata", "requests", name+".golden.json"), indent(t, out))
		})
	}
}

func TestResponseGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "responses", "*.json"))
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.json") {
			continue
		}
		base := strings.TrimSuffix(filepath.Base(f), ".json")
		from := wireOf(base)
		for _, to := range targetsOf(from) {
			name := base + ".to-" + string(to)
			t.Run(name, func(t *testing.T) {
				out, err := Response(from, to, readFile(t, f), "client-model")
				if err != nil {
					t.Fatal(err)
				}
				golden(t, filepath.Join("testdata", "responses", name+".golden.json"), indent(t, out))
			})
		}
	}
}

func TestStreamGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "streams", "*.sse"))
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.sse") {
			continue
		}
		base := strings.TrimSuffix(filepath.Base(f), ".sse")
		from := wireOf(base)
		for _, to := range targetsOf(from) {
			name := base + ".to-" + string(to)
			t.Run(name, func(t *testing.T) {
				var out bytes.Buffer
				if err := Stream(&out, bytes.NewReader(readFile(t, f)), from, to, "client-model"); err != nil {
					t.Fatal(err)
				}
				validate(t, to, out.Bytes())
				golden(t, filepath.Join("testdata", "streams", name+".golden.sse"), out.Bytes())
			})
		}
	}
}

// Collect turns each upstream stream fixture into the client's JSON
// answer; a stream with an error or cut short yields no answer.
func TestCollectGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "streams", "*.sse"))
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.sse") {
			continue
		}
		base := strings.TrimSuffix(filepath.Base(f), ".sse")
		from := wireOf(base)
		for _, to := range targetsOf(from) {
			name := base + ".collect-to-" + string(to)
			t.Run(name, func(t *testing.T) {
				out, err := Collect(from, to, bytes.NewReader(readFile(t, f)), "client-model")
				var se *StreamError
				switch {
				case errors.As(err, &se):
					out = marshal(struct {
						StreamError string          `json:"stream_error"`
						Body        json.RawMessage `json:"body"`
					}{se.Message, se.Body})
				case err != nil:
					out = marshal(map[string]string{"error": err.Error()})
				}
				golden(t, filepath.Join("testdata", "streams", name+".golden.json"), indent(t, out))
			})
		}
	}
}
