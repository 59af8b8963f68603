package sim

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The answers setup.ts reads for a login that has used Code Assist before:
// currentTier and the project, so Gemini CLI skips onboarding.
func TestLoadCodeAssistOnboarded(t *testing.T) {
	s, project := googleStart(t, Options{}, GoogleLogin{})
	if !strings.HasPrefix(project, "sim-project-") {
		t.Errorf("project %q", project)
	}
	status, _, body := gcall(t, s, "POST", "/v1internal:loadCodeAssist", loginToken,
		`{"metadata":{"ideType":"IDE_UNSPECIFIED","platform":"PLATFORM_UNSPECIFIED","pluginType":"GEMINI"}}`)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	m := decode(t, body)
	if str(t, m, "currentTier.id") != "free-tier" || str(t, m, "currentTier.name") == "" || str(t, m, "cloudaicompanionProject") != project {
		t.Errorf("loadCodeAssist %s", body)
	}
	if str(t, m, "allowedTiers.0.id") != "free-tier" || get(t, m, "allowedTiers.0.isDefault") != true ||
		get(t, m, "allowedTiers.1.userDefinedCloudaicompanionProject") != true {
		t.Errorf("allowedTiers %v", get(t, m, "allowedTiers"))
	}

	_, std := googleStart(t, Options{}, GoogleLogin{Tier: "standard-tier", Project: "my-gcp-project"})
	if std != "my-gcp-project" {
		t.Errorf("project %q", std)
	}
}

// A first login: no currentTier, the default tier to onboard with, and an
// operation that is done on its first poll, as setup.ts loops on it.
func TestCodeAssistOnboarding(t *testing.T) {
	s, project := googleStart(t, Options{}, GoogleLogin{Onboard: true, Project: "fresh-project-1"})
	load := func() map[string]any {
		t.Helper()
		status, _, body := gcall(t, s, "POST", "/v1internal:loadCodeAssist", loginToken, `{"metadata":{"pluginType":"GEMINI"}}`)
		if status != 200 {
			t.Fatalf("%d %s", status, body)
		}
		return decode(t, body)
	}
	m := load()
	if _, ok := m["currentTier"]; ok {
		t.Errorf("a new login has a currentTier: %v", m)
	}
	if _, ok := m["cloudaicompanionProject"]; ok || get(t, m, "allowedTiers.0.isDefault") != true {
		t.Errorf("new login %v", m)
	}
	// Before onboarding the project is nobody's.
	if status, _, _ := gcall(t, s, "POST", assistPath, loginToken, assistBody(project, "gemini-2.5-pro", geminiBodyHi)); status != 403 {
		t.Errorf("generate before onboarding: %d", status)
	}

	status, _, body := gcall(t, s, "POST", "/v1internal:onboardUser", loginToken, `{"tierId":"free-tier","metadata":{"pluginType":"GEMINI"}}`)
	op := decode(t, body)
	name := str(t, op, "name")
	if status != 200 || op["done"] != false || !strings.HasPrefix(name, "operations/") {
		t.Fatalf("onboardUser %d %s", status, body)
	}
	if status, _, body := gcall(t, s, "GET", "/v1internal/operations/never-started", loginToken, ""); status != 404 || googleError(t, body).Error.Status != "NOT_FOUND" {
		t.Errorf("unknown operation %d %s", status, body)
	}
	status, _, body = gcall(t, s, "GET", "/v1internal/"+name, loginToken, "")
	op = decode(t, body)
	if status != 200 || op["done"] != true || str(t, op, "response.cloudaicompanionProject.id") != project ||
		str(t, op, "response.@type") != "type.googleapis.com/google.internal.cloud.code.v1internal.OnboardUserResponse" {
		t.Fatalf("operation %d %s", status, body)
	}
	if m := load(); str(t, m, "currentTier.id") != "free-tier" || str(t, m, "cloudaicompanionProject") != project {
		t.Errorf("after onboarding %v", m)
	}
	if _, _, body := gcall(t, s, "POST", "/v1internal:onboardUser", loginToken, `{"tierId":"free-tier"}`); decode(t, body)["done"] != true {
		t.Errorf("second onboardUser %s", body)
	}
	if status, _, _ := gcall(t, s, "POST", assistPath, loginToken, assistBody(project, "gemini-2.5-pro", geminiBodyHi)); status != 200 {
		t.Errorf("generate after onboarding: %d", status)
	}
}

// The envelope Gemini CLI sends and the one it unwraps.
func TestCodeAssistGenerate(t *testing.T) {
	s, project := googleStart(t, Options{Chunks: 3, ChunkText: "ok "}, GoogleLogin{})
	body := assistBody(project, "gemini-2.5-flash", geminiBodyHi)

	status, hdr, b := gcall(t, s, "POST", assistPath, loginToken, body)
	if status != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
		t.Fatalf("%d %v %s", status, hdr, b)
	}
	m := decode(t, b)
	if str(t, m, "response.candidates.0.content.parts.0.text") != "ok ok ok " || str(t, m, "response.modelVersion") != "gemini-2.5-flash" ||
		str(t, m, "traceId") == "" || str(t, m, "response.responseId") == "" {
		t.Errorf("generateContent %s", b)
	}
	if _, err := time.Parse(time.RFC3339Nano, str(t, m, "response.createTime")); err != nil {
		t.Errorf("createTime: %v", err)
	}

	resp, err := googleDo(guard(t), s, "POST", assistStreamPath, loginToken, body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	evs := events(t, resp.Body)
	if len(evs) != 4 {
		t.Fatalf("%d events", len(evs))
	}
	var text strings.Builder
	trace := str(t, decode(t, evs[0].Data), "traceId")
	for _, ev := range evs {
		m := decode(t, ev.Data)
		text.WriteString(str(t, m, "response.candidates.0.content.parts.0.text"))
		if str(t, m, "traceId") != trace {
			t.Error("traceId changed within the stream")
		}
	}
	last := decode(t, evs[3].Data)
	if text.String() != "ok ok ok " || str(t, last, "response.candidates.0.finishReason") != "STOP" ||
		num(t, last, "response.usageMetadata.candidatesTokenCount") < 1 {
		t.Errorf("stream %q, last %s", text.String(), evs[3].Data)
	}

	// countTokens carries no project; its model is inside the request.
	status, _, b = gcall(t, s, "POST", "/v1internal:countTokens", loginToken,
		`{"request":{"model":"models/gemini-2.5-pro","contents":[{"role":"user","parts":[{"text":"hi"}]}]}}`)
	if status != 200 || num(t, decode(t, b), "totalTokens") < 1 {
		t.Errorf("countTokens %d %s", status, b)
	}
	recs := s.Requests()
	if len(recs) != 3 || recs[0].Model != "gemini-2.5-flash" || recs[0].Stream || !recs[1].Stream || recs[2].Model != "gemini-2.5-pro" ||
		recs[0].Credential != loginToken {
		t.Errorf("records %+v", recs)
	}
}

func TestCodeAssistToolCall(t *testing.T) {
	s, project := googleStart(t, Options{}, GoogleLogin{})
	req := geminiToolBody(`{"role":"user","parts":[{"text":"use the tool"}]}`, "parametersJsonSchema")
	_, _, b := gcall(t, s, "POST", assistPath, loginToken, assistBody(project, "gemini-2.5-pro", req))
	m := decode(t, b)
	if str(t, m, "response.candidates.0.content.parts.0.functionCall.name") != "weather" {
		t.Fatalf("no call: %s", b)
	}
	args, _ := json.Marshal(get(t, m, "response.candidates.0.content.parts.0.functionCall.args"))
	checkArgs(t, string(args))
}

// Who may call: a login's token, with the login's project.
func TestCodeAssistRefusals(t *testing.T) {
	s, project := googleStart(t, Options{}, GoogleLogin{})
	for _, tc := range []struct {
		name, path, token, body string
		status                  int
		rpcStatus, reason       string
	}{
		{"no token", assistPath, "", assistBody(project, "gemini-2.5-pro", geminiBodyHi), 401, "UNAUTHENTICATED", "CREDENTIALS_MISSING"},
		{"unknown token", assistPath, "ya29.never-issued", assistBody(project, "gemini-2.5-pro", geminiBodyHi), 401, "UNAUTHENTICATED", "ACCESS_TOKEN_TYPE_UNSUPPORTED"},
		{"a key is no token", "/v1internal:loadCodeAssist", geminiKey, `{}`, 401, "UNAUTHENTICATED", "ACCESS_TOKEN_TYPE_UNSUPPORTED"},
		{"another project", assistPath, loginToken, assistBody("someone-elses", "gemini-2.5-pro", geminiBodyHi), 403, "PERMISSION_DENIED", "IAM_PERMISSION_DENIED"},
		{"no project", assistPath, loginToken, assistBody("", "gemini-2.5-pro", geminiBodyHi), 403, "PERMISSION_DENIED", "IAM_PERMISSION_DENIED"},
		{"another project, streaming", assistStreamPath, loginToken, assistBody("someone-elses", "gemini-2.5-pro", geminiBodyHi), 403, "PERMISSION_DENIED", "IAM_PERMISSION_DENIED"},
		{"quota of another project", "/v1internal:retrieveUserQuota", loginToken, `{"project":"someone-elses"}`, 403, "PERMISSION_DENIED", "IAM_PERMISSION_DENIED"},
		{"metrics of another project", "/v1internal:recordCodeAssistMetrics", loginToken, `{"project":"someone-elses","metrics":[]}`, 403, "PERMISSION_DENIED", "IAM_PERMISSION_DENIED"},
		{"unknown method", "/v1internal:doNothing", loginToken, `{}`, 404, "NOT_FOUND", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := gcall(t, s, "POST", tc.path, tc.token, tc.body)
			if streaming := strings.Contains(tc.path, "stream"); streaming != (body[0] == '[') {
				t.Errorf("array form %v on %s: %s", !streaming, tc.path, body)
			}
			e := googleError(t, body)
			if status != tc.status || e.Error.Status != tc.rpcStatus {
				t.Fatalf("got %d %s", status, body)
			}
			if len(e.Error.Errors) != 1 || e.Error.Errors[0].Domain != "global" {
				t.Errorf("Code Assist's legacy errors list: %+v", e.Error.Errors)
			}
			if tc.reason == "" {
				return
			}
			reason, _, md := e.errorInfo(t)
			if reason != tc.reason {
				t.Errorf("reason %q", reason)
			}
			if tc.status == 403 {
				want := "projects/" + map[bool]string{true: "someone-elses", false: ""}[strings.Contains(tc.body, "someone-elses")] + "/locations/global"
				if md["resource"] != want || md["permission"] != "cloudaicompanion.companions.generateChat" || !strings.Contains(e.Error.Message, want) {
					t.Errorf("403 names %v: %s", md, e.Error.Message)
				}
			}
			if tc.status == 401 && (md["service"] != "cloudcode-pa.googleapis.com" || !strings.HasPrefix(md["method"].(string), "google.internal.cloud.code.v1internal.CloudCode.")) {
				t.Errorf("401 metadata %v", md)
			}
		})
	}
	// Refused before any script: a scripted step is still there.
	s.Script(loginToken, ServerError(500))
	gcall(t, s, "POST", assistPath, loginToken, assistBody("someone-elses", "gemini-2.5-pro", geminiBodyHi))
	if status, _, _ := gcall(t, s, "POST", assistPath, loginToken, assistBody(project, "gemini-2.5-pro", geminiBodyHi)); status != 500 {
		t.Errorf("the step went to a refused request: %d", status)
	}
}

// Gemini CLI's bookkeeping never eats a step meant for a request, and the
// quota poll has a script of its own.
func TestCodeAssistBookkeepingTakesNoStep(t *testing.T) {
	s, project := googleStart(t, Options{}, GoogleLogin{})
	s.Script(loginToken, ServerError(500))
	s.ScriptUsage(loginToken, Step{Status: 429})
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1internal:loadCodeAssist", `{}`},
		{"POST", "/v1internal:listExperiments", `{"project":"` + project + `"}`},
		{"POST", "/v1internal:recordCodeAssistMetrics", `{"project":"` + project + `","metrics":[]}`},
		{"POST", "/v1internal:fetchAdminControls", `{"project":"` + project + `"}`},
		{"GET", "/v1internal:getCodeAssistGlobalUserSetting", ""},
	} {
		if status, _, body := gcall(t, s, c.method, c.path, loginToken, c.body); status != 200 {
			t.Errorf("%s: %d %s", c.path, status, body)
		}
	}
	if status, _, body := gcall(t, s, "POST", "/v1internal:retrieveUserQuota", loginToken, `{"project":"`+project+`"}`); status != 429 || googleError(t, body).Error.Status != "RESOURCE_EXHAUSTED" {
		t.Errorf("scripted poll: %d %s", status, body)
	}
	if status, _, _ := gcall(t, s, "POST", assistPath, loginToken, assistBody(project, "gemini-2.5-pro", geminiBodyHi)); status != 500 {
		t.Errorf("request: %d, want the scripted 500", status)
	}
}

func TestCodeAssistSmallMethods(t *testing.T) {
	s, project := googleStart(t, Options{}, GoogleLogin{})
	_, _, b := gcall(t, s, "POST", "/v1internal:listExperiments", loginToken, `{"project":"`+project+`","metadata":{}}`)
	if m := decode(t, b); len(get(t, m, "flags").([]any)) != 0 || len(get(t, m, "experimentIds").([]any)) != 0 {
		t.Errorf("listExperiments %s", b)
	}
	for _, path := range []string{"/v1internal:recordCodeAssistMetrics", "/v1internal:fetchAdminControls"} {
		if _, _, b := gcall(t, s, "POST", path, loginToken, `{"project":"`+project+`"}`); string(b) != "{}" {
			t.Errorf("%s: %s", path, b)
		}
	}
	_, _, b = gcall(t, s, "GET", "/v1internal:getCodeAssistGlobalUserSetting", loginToken, "")
	if m := decode(t, b); m["freeTierDataCollectionOptin"] != true || str(t, m, "cloudaicompanionProject") != project {
		t.Errorf("get setting %s", b)
	}
	gcall(t, s, "POST", "/v1internal:setCodeAssistGlobalUserSetting", loginToken, `{"cloudaicompanionProject":"`+project+`","freeTierDataCollectionOptin":false}`)
	if _, _, b = gcall(t, s, "GET", "/v1internal:getCodeAssistGlobalUserSetting", loginToken, ""); decode(t, b)["freeTierDataCollectionOptin"] != false {
		t.Errorf("setting not kept: %s", b)
	}
}

// bucket is one model's entry of retrieveUserQuota.
type bucket struct {
	ModelID           string  `json:"modelId"`
	TokenType         string  `json:"tokenType"`
	RemainingFraction float64 `json:"remainingFraction"`
	RemainingAmount   string  `json:"remainingAmount"`
	ResetTime         string  `json:"resetTime"`
}

func quota(t *testing.T, s *Server, token, project string) map[string]bucket {
	t.Helper()
	return quotaAt(t, s.URL(), token, project)
}

func quotaAt(t *testing.T, base, token, project string) map[string]bucket {
	t.Helper()
	status, _, b := gcallAt(t, base, "POST", "/v1internal:retrieveUserQuota", token, `{"project":"`+project+`"}`)
	var q struct{ Buckets []bucket }
	if err := json.Unmarshal(b, &q); status != 200 || err != nil {
		t.Fatalf("retrieveUserQuota %d %v %s", status, err, b)
	}
	out := map[string]bucket{}
	for _, bk := range q.Buckets {
		if bk.TokenType != "REQUESTS" {
			t.Errorf("bucket %+v", bk)
		}
		out[bk.ModelID] = bk
	}
	return out
}

// A login's day moves with use, refuses when spent, and comes back whole
// when it ends, on the injected clock.
func TestCodeAssistDailyQuota(t *testing.T) {
	s, clk := startFake(t, Options{})
	project := s.AddGoogleLogin(loginToken, GoogleLogin{DailyRequests: 4})
	generate := func(model string) (int, []byte) {
		status, _, b := gcall(t, s, "POST", assistPath, loginToken, assistBody(project, model, geminiBodyHi))
		return status, b
	}

	q := quota(t, s, loginToken, project)
	pro := q["gemini-2.5-pro"]
	if len(q) < 3 || pro.RemainingFraction != 1 || pro.RemainingAmount != "4" || pro.ResetTime != epoch.Add(24*time.Hour).Format(time.RFC3339) {
		t.Fatalf("fresh quota %+v", q)
	}
	clk.Advance(time.Hour) // the day opens with the first request, not the poll
	for range 3 {
		if status, b := generate("gemini-2.5-pro"); status != 200 {
			t.Fatalf("%d %s", status, b)
		}
	}
	// countTokens and bookkeeping spend none of the day.
	gcall(t, s, "POST", "/v1internal:countTokens", loginToken, `{"request":{"model":"models/gemini-2.5-pro","contents":[]}}`)
	gcall(t, s, "POST", "/v1internal:loadCodeAssist", loginToken, `{}`)
	q = quota(t, s, loginToken, project)
	dayEnd := epoch.Add(25 * time.Hour)
	if p := q["gemini-2.5-pro"]; p.RemainingFraction != 0.25 || p.RemainingAmount != "1" || p.ResetTime != dayEnd.Format(time.RFC3339) {
		t.Errorf("after 3 of 4: %+v", p)
	}
	if f := q["gemini-2.5-flash"]; f.RemainingFraction != 1 {
		t.Errorf("flash spent by pro's requests: %+v", f)
	}
	generate("gemini-2.5-pro")
	clk.Advance(2 * time.Hour)
	status, b := generate("gemini-2.5-pro")
	e := googleError(t, b)
	reason, domain, md := e.errorInfo(t)
	if status != 429 || reason != "QUOTA_EXHAUSTED" || domain != "cloudcode-pa.googleapis.com" ||
		md["quotaResetTimeStamp"] != dayEnd.Format(time.RFC3339) || md["model"] != "gemini-2.5-pro" ||
		!strings.Contains(e.Error.Message, "Your quota will reset after 22h0m0s.") || e.retryDelay() != "79200s" {
		t.Errorf("spent day: %d %s", status, b)
	}
	if status, _ := generate("gemini-2.5-flash"); status != 200 {
		t.Errorf("another model refused: %d", status)
	}
	if p := quota(t, s, loginToken, project)["gemini-2.5-pro"]; p.RemainingFraction != 0 || p.RemainingAmount != "0" {
		t.Errorf("spent bucket %+v", p)
	}
	clk.Advance(22 * time.Hour)
	if status, b := generate("gemini-2.5-pro"); status != 200 {
		t.Errorf("after the day: %d %s", status, b)
	}
	if p := quota(t, s, loginToken, project)["gemini-2.5-pro"]; p.RemainingAmount != "3" {
		t.Errorf("new day %+v", p)
	}
	// A model outside the default list gets a bucket once used.
	generate("gemini-9-custom")
	if c, ok := quota(t, s, loginToken, project)["gemini-9-custom"]; !ok || c.RemainingAmount != "3" {
		t.Errorf("custom model bucket %+v", c)
	}
	s.Reset()
	if p := quota(t, s, loginToken, project)["gemini-2.5-pro"]; p.RemainingAmount != "4" {
		t.Errorf("Reset kept the day: %+v", p)
	}
	if status, _ := generate("gemini-2.5-pro"); status != http.StatusOK {
		t.Errorf("Reset forgot the login: %d", status)
	}
}
