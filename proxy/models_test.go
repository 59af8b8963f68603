package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// GET /v1/models is subpool's own answer: the pool's models and the
// aliases, in the client's wire's shape, filtered by the key's limits;
// each upstream is asked at most once an hour.

func (e *env) get(path string, hdr ...string) (*http.Response, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("x-api-key", testClientKey)
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

type modelsAnswer struct {
	Object string `json:"object"`
	Data   []struct {
		Type   string `json:"type"`
		Object string `json:"object"`
		ID     string `json:"id"`
	} `json:"data"`
	HasMore *bool `json:"has_more"`
}

func (e *env) models(hdr ...string) (ids []string, a modelsAnswer) {
	e.t.Helper()
	resp, body := e.get("/v1/models", hdr...)
	if resp.StatusCode != 200 {
		e.t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, &a); err != nil {
		e.t.Fatalf("%s: %v", body, err)
	}
	for _, d := range a.Data {
		ids = append(ids, d.ID)
	}
	return ids, a
}

func (e *env) modelAsks() int {
	n := 0
	for _, r := range e.up.Requests() {
		if r.Path == "/v1/models" {
			n++
		}
	}
	return n
}

func TestModelsInBothShapesWithAliases(t *testing.T) {
	e := newEnv(t, false, withAliases(bestAlias))
	e.key("anthropic", "key-a")
	e.key("openai", "key-o")

	ids, a := e.models("anthropic-version", "2023-06-01")
	if a.HasMore == nil || a.Object != "" {
		t.Errorf("not Anthropic's shape: %+v", a)
	}
	for _, d := range a.Data {
		if d.Type != "model" {
			t.Errorf("row %+v", d)
		}
	}
	for _, want := range []string{"best", "opus", "gpt-5"} {
		if !slices.Contains(ids, want) {
			t.Errorf("%s missing from %v", want, ids)
		}
	}

	ids, a = e.models("anthropic-version", "")
	if a.Object != "list" || a.HasMore != nil {
		t.Errorf("not OpenAI's shape: %+v", a)
	}
	for _, d := range a.Data {
		if d.Object != "model" {
			t.Errorf("row %+v", d)
		}
	}
	if !slices.Contains(ids, "best") || !slices.Contains(ids, "gpt-4.1") {
		t.Errorf("ids %v", ids)
	}
	// Under a provider's prefix, the wire is the provider's.
	resp, body := e.get("/anthropic/v1/models", "anthropic-version", "")
	var pa modelsAnswer
	if resp.StatusCode != 200 || json.Unmarshal(body, &pa) != nil || pa.HasMore == nil {
		t.Errorf("/anthropic/v1/models: %d %s", resp.StatusCode, body)
	}
}

func TestModelsAreFilteredByTheKeysLimits(t *testing.T) {
	keys := &keyTable{m: map[string]Client{keyCodex: {Name: "codex", Providers: []string{"openai"}, Models: []string{"gpt-4*"}}}}
	e := newEnv(t, false, withAliases(bestAlias), withClients(keys))
	e.key("anthropic", "key-a")
	e.key("openai", "key-o")
	ids, _ := e.models("x-api-key", keyCodex, "anthropic-version", "")
	if !slices.Equal(ids, []string{"gpt-4.1", "gpt-4o-mini"}) {
		t.Errorf("limited key sees %v", ids)
	}
	// Its list never needed anthropic's.
	for _, r := range e.up.Requests() {
		if r.Credential == "key-a" {
			t.Errorf("anthropic was asked for a key that may not use it")
		}
	}
}

func TestUpstreamModelListIsAskedAtMostOnceAnHour(t *testing.T) {
	e := newEnv(t, false, withAliases(bestAlias))
	e.key("anthropic", "key-a")
	e.key("openai", "key-o")
	for range 3 {
		e.models()
	}
	if n := e.modelAsks(); n != 2 {
		t.Fatalf("%d asks for 3 lists of 2 providers, want 2", n)
	}
	e.fake.Advance(59 * time.Minute)
	e.models()
	if n := e.modelAsks(); n != 2 {
		t.Fatalf("%d asks within the hour", n)
	}
	e.fake.Advance(2 * time.Minute)
	e.models()
	if n := e.modelAsks(); n != 4 {
		t.Fatalf("%d asks after the hour, want 4", n)
	}
}

// The upstream's own fields pass through: Anthropic's display_name and
// created_at, OpenAI's created and owned_by (issue 24: the list replaced
// the name with the id and the date with 1970).
func TestModelListKeepsTheUpstreamsFields(t *testing.T) {
	e := newEnv(t, false)
	e.key("anthropic", "key-a")
	e.key("openai", "key-o")
	resp, body := e.get("/anthropic/v1/models", "anthropic-version", "2023-06-01")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	var a struct {
		Data []struct {
			ID, DisplayName, CreatedAt string
		}
	}
	if err := json.Unmarshal([]byte(strings.NewReplacer(`"display_name"`, `"DisplayName"`, `"created_at"`, `"CreatedAt"`).Replace(string(body))), &a); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range a.Data {
		if m.ID == "claude-sonnet-4-5-20250929" {
			found = true
			if m.DisplayName != "Claude Sonnet 4.5" || m.CreatedAt != "2025-09-29T00:00:00Z" {
				t.Fatalf("listed %+v, want the upstream's name and date", m)
			}
		}
	}
	if !found {
		t.Fatalf("claude-sonnet-4-5-20250929 not listed: %s", body)
	}
	resp, body = e.get("/openai/v1/models")
	var o struct {
		Data []struct {
			ID      string `json:"id"`
			Created int64  `json:"created"`
			OwnedBy string `json:"owned_by"`
		} `json:"data"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(body, &o) != nil {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	for _, m := range o.Data {
		if m.ID == "gpt-5" && (m.Created != 1754425777 || m.OwnedBy != "system") {
			t.Fatalf("listed %+v, want created 1754425777, owned_by system", m)
		}
	}
}
