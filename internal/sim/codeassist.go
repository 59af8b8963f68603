package sim

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Code Assist (cloudcode-pa.googleapis.com/v1internal), what Gemini CLI's
// "Login with Google" calls, every method it has (packages/core/src/
// code_assist/server.ts in 0.61.0):
//
//	POST /v1internal:loadCodeAssist        tiers and the login's project
//	POST /v1internal:onboardUser           an operation creating the project
//	GET  /v1internal/{operation}           that operation, done on its first poll
//	POST /v1internal:generateContent       {"response":{…},"traceId"}
//	POST /v1internal:streamGenerateContent?alt=sse   data: {"response":{…},"traceId"}
//	POST /v1internal:countTokens           {"totalTokens":N}
//	POST /v1internal:retrieveUserQuota     per-model buckets, counted per login
//	POST /v1internal:listExperiments       no experiments
//	POST /v1internal:recordCodeAssistMetrics, :fetchAdminControls   {}
//	GET  /v1internal:getCodeAssistGlobalUserSetting, POST :setCodeAssistGlobalUserSetting
//
// The requests carry {"model","project","user_prompt_id","request":{…}};
// a project other than the login's is refused 403 PERMISSION_DENIED.

// codeAssistRoutes are the fixed Code Assist paths (the operation poll is
// matched by prefix).
var codeAssistRoutes = map[string]func(*exchange){
	"POST /v1internal:loadCodeAssist":                 (*exchange).loadCodeAssist,
	"POST /v1internal:onboardUser":                    (*exchange).onboardUser,
	"POST /v1internal:generateContent":                (*exchange).geminiGenerate,
	"POST /v1internal:streamGenerateContent":          (*exchange).geminiGenerate,
	"POST /v1internal:countTokens":                    (*exchange).geminiCountTokens,
	"POST /v1internal:retrieveUserQuota":              (*exchange).retrieveUserQuota,
	"POST /v1internal:listExperiments":                (*exchange).listExperiments,
	"POST /v1internal:recordCodeAssistMetrics":        (*exchange).emptyObject,
	"POST /v1internal:fetchAdminControls":             (*exchange).emptyObject,
	"GET /v1internal:getCodeAssistGlobalUserSetting":  (*exchange).userSetting,
	"POST /v1internal:setCodeAssistGlobalUserSetting": (*exchange).userSetting,
}

// Tier ids (code_assist/types.ts UserTierId).
const (
	tierFree     = "free-tier"
	tierLegacy   = "legacy-tier"
	tierStandard = "standard-tier"
)

func tier(id string, isDefault bool) obj {
	t := obj{"id": id, "userDefinedCloudaicompanionProject": id != tierFree}
	switch id {
	case tierFree:
		t["name"], t["description"] = "Gemini Code Assist for individuals", "Gemini Code Assist for individuals, at no cost."
	case tierStandard:
		t["name"], t["description"] = "Gemini Code Assist Standard", "Gemini Code Assist Standard, billed to a Google Cloud project."
	default:
		t["name"], t["description"] = "Gemini Code Assist (legacy)", "Gemini Code Assist for a user-defined Google Cloud project."
	}
	if isDefault {
		t["isDefault"] = true
	}
	return t
}

// loadCodeAssist answers what setup.ts reads: an onboarded login's
// currentTier and cloudaicompanionProject; a new one's allowedTiers only,
// its own tier the default, so Gemini CLI onboards it.
func (x *exchange) loadCodeAssist() {
	s := x.s
	s.mu.Lock()
	cfg, onboarded := x.login.cfg, x.login.onboarded
	s.mu.Unlock()
	allowed := []obj{tier(tierFree, cfg.Tier == tierFree), tier(tierStandard, cfg.Tier == tierStandard)}
	if cfg.Tier == tierLegacy {
		allowed = append(allowed, tier(tierLegacy, true))
	}
	body := obj{"allowedTiers": allowed, "gcpManaged": false}
	if onboarded {
		body["currentTier"] = tier(cfg.Tier, false)
		body["cloudaicompanionProject"] = cfg.Project
	}
	x.writeJSON(body)
}

const onboardResponseType = "type.googleapis.com/google.internal.cloud.code.v1internal.OnboardUserResponse"

func onboarded(project string) obj {
	return obj{"@type": onboardResponseType, "cloudaicompanionProject": obj{"id": project, "name": project}}
}

// onboardUser starts the operation that creates the login's project. The
// first call of a new login answers it not done yet, as Code Assist does
// while it provisions; a login already onboarded gets it done at once.
func (x *exchange) onboardUser() {
	s := x.s
	s.mu.Lock()
	gl := x.login
	project, done := gl.cfg.Project, gl.onboarded
	name := "operations/" + strings.ToLower(newID(24))
	if !done {
		gl.ops[name] = false
	}
	s.mu.Unlock()
	if done {
		x.writeJSON(obj{"name": name, "done": true, "response": onboarded(project)})
		return
	}
	x.writeJSON(obj{"name": name, "done": false})
}

// codeAssistGetOperation answers GET /v1internal/{name}: done, with the
// project, once polled; an operation the login never started is a 404.
func (x *exchange) codeAssistGetOperation() {
	name := strings.TrimPrefix(x.r.URL.Path, codeAssistPrefix+"/")
	s := x.s
	s.mu.Lock()
	gl := x.login
	_, ok := gl.ops[name]
	if ok {
		gl.ops[name] = true
		gl.onboarded = true
	}
	project := gl.cfg.Project
	s.mu.Unlock()
	if !ok {
		x.writeGoogleError(http.StatusNotFound, googleErr{code: 404, status: "NOT_FOUND", message: "Operation not found: " + name})
		return
	}
	x.writeJSON(obj{"name": name, "done": true, "response": onboarded(project)})
}

// writeGoogleError is an error a handler finds after the record was made:
// it corrects the record's status.
func (x *exchange) writeGoogleError(status int, e googleErr) {
	x.s.mu.Lock()
	if x.recorded && x.gen == x.s.gen {
		x.s.records[x.idx].Status = status
	}
	x.s.mu.Unlock()
	x.w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	x.w.WriteHeader(status)
	x.write(x.googleBody(e))
	x.done = true
}

// retrieveUserQuota reports the login's day: one REQUESTS bucket per model
// with what is left of DailyRequests and when the day ends.
func (x *exchange) retrieveUserQuota() {
	s := x.s
	s.mu.Lock()
	gl := x.login
	used, end := gl.peekDay(s.clk.Now())
	limit := gl.cfg.DailyRequests
	models := slices.Clone(gl.cfg.Models)
	for m := range used {
		if !slices.Contains(models, m) {
			models = append(models, m)
		}
	}
	counts := make([]int, len(models))
	for i, m := range models {
		counts[i] = used[m]
	}
	s.mu.Unlock()

	reset := end.UTC().Format(time.RFC3339)
	buckets := make([]obj, 0, len(models))
	for i, m := range models {
		b := obj{"resetTime": reset, "tokenType": "REQUESTS", "modelId": m, "remainingFraction": 1}
		if limit > 0 {
			left := max(limit-counts[i], 0)
			b["remainingAmount"] = strconv.Itoa(left)
			b["remainingFraction"] = float64(left) / float64(limit)
		}
		buckets = append(buckets, b)
	}
	x.writeJSON(obj{"buckets": buckets})
}

// listExperiments answers no experiments, so Gemini CLI keeps its defaults
// (admin controls off, Pro models allowed).
func (x *exchange) listExperiments() {
	x.writeJSON(obj{"experimentIds": []int{}, "flags": []obj{}, "debugString": ""})
}

func (x *exchange) emptyObject() { x.writeJSON(obj{}) }

// userSetting answers get/setCodeAssistGlobalUserSetting: the login's data
// collection opt-in, which the set call changes.
func (x *exchange) userSetting() {
	var req struct {
		OptIn *bool `json:"freeTierDataCollectionOptin"`
	}
	_ = json.Unmarshal(x.body, &req)
	s := x.s
	s.mu.Lock()
	gl := x.login
	if x.r.Method == http.MethodPost && req.OptIn != nil {
		gl.optIn = *req.OptIn
	}
	body := obj{"cloudaicompanionProject": gl.cfg.Project, "freeTierDataCollectionOptin": gl.optIn}
	s.mu.Unlock()
	x.writeJSON(body)
}

// chargeDay spends one of the login's requests for model, or refuses when
// its day is spent. It requires s.mu.
func (x *exchange) chargeDayLocked(now time.Time) (charge func(), r *refusal) {
	gl := x.login
	if gl == nil || !x.googleCharged() {
		return func() {}, nil
	}
	end := gl.day(now)
	model := x.model("gemini-2.5-pro")
	if limit := gl.cfg.DailyRequests; limit > 0 && gl.used[model] >= limit {
		return nil, &refusal{kind: "day", limit: limit, reset: end, announce: true, window: googleDay}
	}
	return func() { gl.used[model]++ }, nil
}
