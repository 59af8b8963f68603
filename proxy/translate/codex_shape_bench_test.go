package translate

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// A long Codex conversation (about 1 MiB) on a ChatGPT login: the scan
// that lets it pass as it is, against shaping it by reading it whole.
func longCodexBody(b *testing.B) []byte {
	var buf bytes.Buffer
	raw, err := os.ReadFile("testdata/requests/codex.json")
	if err != nil {
		b.Fatal(err)
	}
	if err := json.Compact(&buf, raw); err != nil {
		b.Fatal(err)
	}
	turn := `{"type":"function_call_output","call_id":"call_Xy7aBcD3eFgH9iJkLmN0pQrS","output":"` + strings.Repeat("line of tool output\\n", 50) + `"},`
	return bytes.Replace(buf.Bytes(), []byte(`"input":[`), []byte(`"input":[`+strings.Repeat(turn, 1024)), 1)
}

func BenchmarkCodexReady(b *testing.B) {
	body := longCodexBody(b)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if !CodexReady(body) {
			b.Fatal("not ready")
		}
	}
}

func BenchmarkCodexShapeWhole(b *testing.B) {
	body := longCodexBody(b)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := Request(OpenAIResponses, ChatGPTCodex, body, "gpt-5-codex"); err != nil {
			b.Fatal(err)
		}
	}
}
