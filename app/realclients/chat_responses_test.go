//go:build unix

package realclients

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
)

// The OpenAI SDK's chat.completions.create, as an editor calls it, on a
// person whose only OpenAI credential is a ChatGPT login (issue 44: a
// 404 before): streaming and not, an answer and a tool call.
func TestOpenAISDKChatOnChatGPTLogin(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream bool
		prompt string
		tool   bool
	}{
		{"json", false, "say hi", false},
		{"stream", true, "say hi", false},
		{"json tool call", false, "Please use the tool on main.go.", true},
		{"stream tool call", true, "Please use the tool on main.go.", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			up := newUpstream(t, simOptions())
			s := serve(t, up, "")
			s.addOAuth("openai", "plus", up.oa.Grant(sim.OpenAI))
			a, r := s.sdk(t, 30*time.Second, "openai_sdk.cjs", "gpt-5-codex", tc.stream, "SDK_CHAT", "1", "SDK_PROMPT", tc.prompt)
			t.Logf("%+v %s\nupstream:%s", a, r, up.describe())
			switch {
			case !a.OK:
				t.Fatalf("the SDK threw %s %d: %s", a.Name, a.Status, a.Message)
			case tc.tool && (a.Tool != "read_file" || !json.Valid([]byte(a.Args))):
				t.Fatalf("no tool call: %+v", a)
			case !tc.tool && !strings.Contains(a.Text, answerWord):
				t.Fatalf("no answer: %+v", a)
			}
			if !strings.Contains(up.describe(), "/backend-api/codex/responses") {
				t.Errorf("not served by the Codex backend:%s", up.describe())
			}
		})
	}
}

// Codex CLI on a provider whose upstream serves only Chat Completions
// (wire = "openai-chat"; the sim has no /v1/responses here, as DeepSeek
// or Ollama have none): its Responses turn goes as Chat Completions and
// its answer comes back as Responses events.
func TestCodexOnAChatOnlyProvider(t *testing.T) {
	o := simOptions()
	o.ChatOnly = true
	up := newUpstream(t, o)
	s := serve(t, up, "\n[providers.deepseek]\nwire = \"openai-chat\"\nbase_url = \""+up.url+"\"\n",
		apiKey{"deepseek", "ds", "sk-deepseek-subpool-realclients-test-000000"})
	r := s.codex(t, 60*time.Second, "say hi", "-m", "deepseek-chat",
		"-c", `model_providers.subpool.base_url="http://`+s.addr+`/deepseek/v1"`)
	t.Logf("codex run: %s\nupstream:%s", r, up.describe())
	if r.err != nil || !strings.Contains(r.stdout, answerWord) {
		t.Fatalf("no answer: %s\nupstream:%s", r, up.describe())
	}
	if d := up.describe(); !strings.Contains(d, "/v1/chat/completions") || strings.Contains(d, "/v1/responses") {
		t.Errorf("not served as Chat Completions:%s", d)
	}
}
