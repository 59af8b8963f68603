package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Google's errors are google.rpc.Status in JSON: {"error":{"code",
// "message","status","details":[…]}}, pretty-printed, the details typed
// by "@type". Code Assist adds the legacy "errors" list, and on
// streamGenerateContent sends the whole body as a one-element JSON array:
// the shapes Gemini CLI users paste from both backends (gemini-cli issues
// #25052, #13004, #2865; generativelanguage samples in issues of clients
// of the Gemini API).

const (
	typeErrorInfo    = "type.googleapis.com/google.rpc.ErrorInfo"
	typeRetryInfo    = "type.googleapis.com/google.rpc.RetryInfo"
	typeQuotaFailure = "type.googleapis.com/google.rpc.QuotaFailure"
	typeHelp         = "type.googleapis.com/google.rpc.Help"
	typeLocalized    = "type.googleapis.com/google.rpc.LocalizedMessage"
	typeBadRequest   = "type.googleapis.com/google.rpc.BadRequest"

	cloudCodeDomain = "cloudcode-pa.googleapis.com"
	geminiService   = "generativelanguage.googleapis.com"

	// geminiCLIProject is the project number of Gemini CLI's OAuth client,
	// the consumer Code Assist names in its per-minute refusals.
	geminiCLIProject = "681255809395"

	msgOverloaded    = "The model is overloaded. Please try again later."
	msgBadCredential = "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."
	msgNoCredential  = "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."
	msgKeyInvalid    = "API key not valid. Please pass a valid API key."
	msgUnregistered  = "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."
	msgQuotaExceeded = "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your current usage, head to: https://ai.dev/rate-limit. "
	msgCapacity      = "You have exhausted your capacity on this model. Your quota will reset after %s."
)

// legacyError is one entry of the "errors" list Code Assist still sends.
type legacyError struct {
	Message      string `json:"message"`
	Domain       string `json:"domain"`
	Reason       string `json:"reason"`
	Location     string `json:"location,omitempty"`
	LocationType string `json:"locationType,omitempty"`
}

type googleStatus struct {
	Code    int           `json:"code"`
	Message string        `json:"message"`
	Errors  []legacyError `json:"errors,omitempty"`
	Status  string        `json:"status"`
	Details []obj         `json:"details,omitempty"`
}

// googleErr is an error body before it is given a wire: the Gemini API's
// bare Status, or Code Assist's with the legacy list.
type googleErr struct {
	code    int
	status  string
	message string
	legacy  *legacyError // Code Assist only; nil: one derived from code
	details []obj
}

func (e googleErr) body(codeAssist bool) string {
	st := googleStatus{Code: e.code, Message: e.message, Status: e.status, Details: e.details}
	if codeAssist {
		l := legacyError{Message: e.message, Domain: "global", Reason: legacyReason(e.code)}
		if e.legacy != nil {
			l = *e.legacy
		}
		st.Errors = []legacyError{l}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(obj{"error": st}); err != nil {
		panic(err) // only the sim's own values get here
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func legacyReason(code int) string {
	switch code {
	case 400:
		return "badRequest"
	case 401:
		return "authError"
	case 403:
		return "forbidden"
	case 404:
		return "notFound"
	case 429:
		return "rateLimitExceeded"
	}
	return "backendError"
}

func errorInfo(reason, domain string, metadata map[string]string) obj {
	return obj{"@type": typeErrorInfo, "reason": reason, "domain": domain, "metadata": metadata}
}

func retryInfo(delay string) obj { return obj{"@type": typeRetryInfo, "retryDelay": delay} }

func geminiHelp() obj {
	return obj{"@type": typeHelp, "links": []obj{{
		"description": "Learn more about Gemini API quotas",
		"url":         "https://ai.google.dev/gemini-api/docs/rate-limits",
	}}}
}

// googleSeconds is a google.protobuf.Duration in JSON ("29.654528384s").
func googleSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

// retryDelay is what RetryInfo says: whole seconds, rounded up so a client
// never retries early.
func retryDelay(d time.Duration) string { return strconv.Itoa(max(ceilSeconds(d), 1)) + "s" }

// capacityDelay is Code Assist's "reset after" wording: a Go duration to
// the second ("8h44m7s").
func capacityDelay(d time.Duration) string {
	return max(d, time.Second).Truncate(time.Second).String()
}

// geminiQuota is the Gemini API's 429 for a spent quota. limitID names
// the quota (GenerateRequestsPerMinutePerProjectPerModel-FreeTier); delay
// is "" for none.
func geminiQuota(metric, limitID string, limit int, model, delay, retry string) googleErr {
	msg := fmt.Sprintf("%s\n* Quota exceeded for metric: %s, limit: %d, model: %s", msgQuotaExceeded, metric, limit, model)
	if delay != "" {
		msg += "\nPlease retry in " + delay + "."
	}
	details := []obj{
		{"@type": typeQuotaFailure, "violations": []obj{{
			"quotaMetric": metric, "quotaId": limitID,
			"quotaDimensions": map[string]string{"location": "global", "model": model},
			"quotaValue":      strconv.Itoa(limit),
		}}},
		geminiHelp(),
	}
	if retry != "" {
		details = append(details, retryInfo(retry))
	}
	return googleErr{code: 429, status: "RESOURCE_EXHAUSTED", message: msg, details: details}
}

const (
	metricRequests  = "generativelanguage.googleapis.com/generate_content_free_tier_requests"
	metricTokens    = "generativelanguage.googleapis.com/generate_content_free_tier_input_token_count"
	quotaPerMinute  = "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"
	quotaPerDay     = "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
	quotaTokensPerM = "GenerateContentInputTokensPerModelPerMinute-FreeTier"
)

// capacityErr is Code Assist's "You have exhausted your capacity" 429:
// reason RATE_LIMIT_EXCEEDED for a short wait Gemini CLI retries itself,
// QUOTA_EXHAUSTED for the plan's allowance. stamp is the reset's RFC 3339
// time (or a placeholder for it).
func capacityErr(reason, model string, wait time.Duration, stamp string) googleErr {
	return googleErr{
		code: 429, status: "RESOURCE_EXHAUSTED",
		message: fmt.Sprintf(msgCapacity, capacityDelay(wait)),
		details: []obj{
			errorInfo(reason, cloudCodeDomain, map[string]string{
				"uiMessage": "true", "model": model,
				"quotaResetDelay": max(wait, time.Millisecond).String(), "quotaResetTimeStamp": stamp,
			}),
			retryInfo(googleSeconds(max(wait, time.Millisecond))),
		},
	}
}

// perMinuteErr is Code Assist's per-minute refusal with no time in it.
// method is the RPC ("StreamGenerateContent").
func perMinuteErr(method string) googleErr {
	return googleErr{code: 429, status: "RESOURCE_EXHAUSTED", message: fmt.Sprintf(
		"Quota exceeded for quota metric '%s Requests' and limit '%s Requests per minute per user per tier' of service '%s' for consumer 'project_number:%s'.",
		method, method, cloudCodeDomain, geminiCLIProject)}
}

func unauthenticated(reason, service, rpc string) googleErr {
	return googleErr{
		code: 401, status: "UNAUTHENTICATED", message: msgBadCredential,
		legacy:  &legacyError{Message: "Invalid Credentials", Domain: "global", Reason: "authError", Location: "Authorization", LocationType: "header"},
		details: []obj{errorInfo(reason, "googleapis.com", map[string]string{"service": service, "method": rpc})},
	}
}

func keyInvalid() googleErr {
	return googleErr{
		code: 400, status: "INVALID_ARGUMENT", message: msgKeyInvalid,
		details: []obj{
			errorInfo("API_KEY_INVALID", "googleapis.com", map[string]string{"service": geminiService}),
			{"@type": typeLocalized, "locale": "en-US", "message": msgKeyInvalid},
		},
	}
}

func permissionDenied(project string) googleErr {
	resource := "projects/" + project + "/locations/global"
	return googleErr{
		code: 403, status: "PERMISSION_DENIED",
		message: "Permission 'cloudaicompanion.companions.generateChat' denied on resource '//cloudaicompanion.googleapis.com/" + resource + "' (or it may not exist).",
		details: []obj{errorInfo("IAM_PERMISSION_DENIED", "cloudaicompanion.googleapis.com", map[string]string{
			"resource": resource, "permission": "cloudaicompanion.companions.generateChat",
		})},
	}
}

var overloaded = googleErr{code: 503, status: "UNAVAILABLE", message: msgOverloaded}

// defaultGoogleErr is the body of a scripted status with no Body.
func defaultGoogleErr(status int, codeAssist bool) googleErr {
	e := googleErr{code: status}
	switch {
	case status == 400:
		e.status, e.message = "INVALID_ARGUMENT", "Request contains an invalid argument."
	case status == 401:
		e = unauthenticated("ACCESS_TOKEN_TYPE_UNSUPPORTED", "{{service}}", "{{rpc}}")
	case status == 403:
		e.status, e.message = "PERMISSION_DENIED", "The caller does not have permission"
	case status == 404:
		e.status, e.message = "NOT_FOUND", "Requested entity was not found."
	case status == 409:
		e.status, e.message = "ABORTED", "The operation was aborted."
	case status == 429:
		e.status, e.message = "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."
	case status == 499:
		e.status, e.message = "CANCELLED", "The operation was cancelled."
	case status == 500 && codeAssist:
		e.status, e.message = "INTERNAL", "Internal error encountered."
	case status == 500:
		e.status, e.message = "INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
	case status == 501:
		e.status, e.message = "UNIMPLEMENTED", "Operation is not implemented, or supported, or enabled."
	case status == 502, status == 503:
		e.status, e.message = "UNAVAILABLE", "The service is currently unavailable."
	case status == 504:
		e.status, e.message = "DEADLINE_EXCEEDED", "Deadline expired before operation could complete."
	case status < 500:
		e.status, e.message = "FAILED_PRECONDITION", http.StatusText(status)
	default:
		e.status, e.message = "INTERNAL", http.StatusText(status)
	}
	return e
}

// googleBody renders e for x's route: the legacy list on Code Assist, the
// one-element array on its streamGenerateContent, placeholders filled.
func (x *exchange) googleBody(e googleErr) []byte {
	return x.shapeGoogle(x.render(e.body(x.codeAssist())))
}

// shapeGoogle wraps a Code Assist streaming error in the array that method
// answers with.
func (x *exchange) shapeGoogle(body []byte) []byte {
	if stream, _ := x.googleStreaming(); !stream || !x.codeAssist() || len(body) == 0 || body[0] != '{' {
		return body
	}
	out := make([]byte, 0, len(body)+2)
	out = append(out, '[')
	out = append(out, body...)
	return append(out, ']')
}

func (x *exchange) googleKeyInvalid() []byte { return x.googleBody(keyInvalid()) }

func (x *exchange) googleUnauthenticated(reason string) []byte {
	return x.googleBody(unauthenticated(reason, "{{service}}", "{{rpc}}"))
}

func (x *exchange) googlePermissionDenied(project string) []byte {
	return x.googleBody(permissionDenied(project))
}

func (x *exchange) googleMissingCredential() []byte {
	if !x.codeAssist() {
		return x.googleBody(googleErr{code: 403, status: "PERMISSION_DENIED", message: msgUnregistered})
	}
	return x.googleBody(googleErr{
		code: 401, status: "UNAUTHENTICATED", message: msgNoCredential,
		legacy:  &legacyError{Message: "Login Required.", Domain: "global", Reason: "required", Location: "Authorization", LocationType: "header"},
		details: []obj{errorInfo("CREDENTIALS_MISSING", "googleapis.com", map[string]string{"service": "{{service}}", "method": "{{rpc}}"})},
	})
}

func (x *exchange) googleNotFound() []byte {
	return x.googleBody(googleErr{code: 404, status: "NOT_FOUND", message: "Method not found."})
}

func (x *exchange) googleBadBody(tooLarge bool) []byte {
	msg := "Invalid JSON payload received. Unexpected token.\n" + firstLine(x.body) + "\n^"
	if tooLarge {
		msg = "Request payload size exceeds the limit: 33554432 bytes."
	}
	return x.googleBody(googleErr{code: 400, status: "INVALID_ARGUMENT", message: msg,
		details: []obj{{"@type": typeBadRequest, "fieldViolations": []obj{{"description": msg}}}}})
}

func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	if len(line) > 40 {
		line = line[:40]
	}
	return string(line)
}

// googleRPC is the RPC a Google route serves, as ErrorInfo names it.
func (x *exchange) googleRPC() (service, rpc string) {
	if x.codeAssist() {
		m := x.googleMethod()
		if m == "" {
			m = "GetOperation"
		}
		return cloudCodeDomain, "google.internal.cloud.code.v1internal.CloudCode." + upperFirst(m)
	}
	verb := "ListModels"
	_, rest, _ := geminiRest(x.r.URL.Path)
	if _, v, ok := strings.Cut(rest, ":"); ok {
		verb = upperFirst(v)
	} else if x.req.Model != "" {
		verb = "GetModel"
	}
	api := "GenerativeService"
	if verb == "ListModels" || verb == "GetModel" {
		api = "ModelService"
	}
	return geminiService, "google.ai.generativelanguage.v1beta." + api + "." + verb
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// refuseGoogle is a Google credential over its Quota (or a login over its
// day): the Gemini API's QuotaFailure, Code Assist's capacity 429.
func (x *exchange) refuseGoogle(r *refusal) []byte {
	wait := r.reset.Sub(x.s.clk.Now())
	model := x.model("gemini-2.5-pro")
	stamp := r.reset.UTC().Format(time.RFC3339)
	daily := r.kind == "day" || r.window >= googleDay
	if x.codeAssist() {
		switch {
		case daily:
			return x.googleBody(capacityErr("QUOTA_EXHAUSTED", model, wait, stamp))
		case r.announce:
			return x.googleBody(capacityErr("RATE_LIMIT_EXCEEDED", model, wait, stamp))
		}
		_, rpc := x.googleRPC()
		return x.googleBody(perMinuteErr(rpc[strings.LastIndexByte(rpc, '.')+1:]))
	}
	metric, id := metricRequests, quotaPerMinute
	switch {
	case r.kind == "tokens":
		metric, id = metricTokens, quotaTokensPerM
	case daily:
		id = quotaPerDay
	}
	delay, retry := "", ""
	if r.announce {
		delay, retry = googleSeconds(wait), retryDelay(wait)
	}
	return x.googleBody(geminiQuota(metric, id, r.limit, model, delay, retry))
}

// Canned Google steps. Each carries the Gemini API's body and, where Code
// Assist answers differently, that one too: the step answers in the shape
// of the route it lands on. Bodies hold placeholders ({{model}},
// {{project}}, {{rfc3339+N}} …) filled when served.

func googleStep(gemini, assist googleErr) Step {
	return Step{Status: gemini.code, Body: gemini.body(false), google: true,
		assist: &altAnswer{status: assist.code, body: assist.body(true)}}
}

// googleRateLimited is RateLimited("google", retryAfter).
func googleRateLimited(retryAfter time.Duration) Step {
	if retryAfter <= 0 {
		return googleStep(geminiQuota(metricRequests, quotaPerMinute, 5, "{{model}}", "", ""), perMinuteErr("{{method}}"))
	}
	secs := ceilSeconds(retryAfter)
	return googleStep(
		geminiQuota(metricRequests, quotaPerMinute, 5, "{{model}}", googleSeconds(retryAfter), retryDelay(retryAfter)),
		capacityErr("RATE_LIMIT_EXCEEDED", "{{model}}", retryAfter, fmt.Sprintf("{{rfc3339+%d}}", secs)))
}

// GoogleDailyLimit is a spent daily quota. On the Gemini API: a 429 whose
// QuotaFailure names GenerateRequestsPerDayPerProjectPerModel-FreeTier,
// with the short RetryInfo Google sends anyway (the seconds left in the
// current minute on Options.Clock), which a client must not take for the
// reset. On Code Assist: GoogleCapacityExhausted(resetsIn). resetsIn 0 is
// a whole day.
func GoogleDailyLimit(resetsIn time.Duration) Step {
	if resetsIn <= 0 {
		resetsIn = googleDay
	}
	gemini := geminiQuota(metricRequests, quotaPerDay, 250, "{{model}}", "{{minute_left}}s", "{{minute_left_ceil}}s")
	return Step{Status: gemini.code, Body: gemini.body(false), google: true, assist: GoogleCapacityExhausted(resetsIn).assist}
}

// GoogleCapacityExhausted is Code Assist's 429 when the login's allowance
// for the model is spent: "You have exhausted your capacity on this model.
// Your quota will reset after 8h44m7s.", ErrorInfo QUOTA_EXHAUSTED with
// quotaResetDelay and quotaResetTimeStamp (when served plus resetAfter),
// and RetryInfo. It answers so on either wire.
func GoogleCapacityExhausted(resetAfter time.Duration) Step {
	stamp := fmt.Sprintf("{{rfc3339+%d}}", ceilSeconds(resetAfter))
	e := capacityErr("QUOTA_EXHAUSTED", "{{model}}", resetAfter, stamp)
	return googleStep(e, e)
}

// GoogleNoCapacity is Code Assist's 429 when the model has no capacity
// left for anyone (ErrorInfo MODEL_CAPACITY_EXHAUSTED): not the login's
// fault, so waiting on the same credential is the cure.
func GoogleNoCapacity() Step {
	e := googleErr{code: 429, status: "RESOURCE_EXHAUSTED", message: "No capacity available for model {{model}} on the server",
		details: []obj{errorInfo("MODEL_CAPACITY_EXHAUSTED", cloudCodeDomain, map[string]string{"model": "{{model}}"})}}
	return googleStep(e, e)
}

// GoogleOverloaded is the 503 UNAVAILABLE "The model is overloaded. Please
// try again later." both wires send.
func GoogleOverloaded() Step { return googleStep(overloaded, overloaded) }

// GooglePermissionDenied is a 403 PERMISSION_DENIED: on Code Assist the
// IAM refusal of the request's project (what a wrong or missing project
// gets), on the Gemini API the bare "The caller does not have permission".
func GooglePermissionDenied() Step {
	return googleStep(defaultGoogleErr(403, false), permissionDenied("{{project}}"))
}

// googleStreamOverloaded is StreamOverloaded("google"): a 200 SSE whose
// one event is the overloaded error.
const googleStreamOverloaded = `{"error":{"code":503,"message":"` + msgOverloaded + `","status":"UNAVAILABLE"}}`

// altAnswer is the Code Assist answer of a canned Google step.
type altAnswer struct {
	status int
	body   string
}

// googleStepFor adapts a canned step to x's route: its Code Assist answer
// there, and that method's array on streamGenerateContent.
func (x *exchange) googleStepFor(st Step) Step {
	if !st.google {
		return st
	}
	if st.assist != nil && x.codeAssist() && st.assist.status != 0 {
		st.Status, st.Body = st.assist.status, st.assist.body
	}
	st.Body = string(x.shapeGoogle([]byte(st.Body)))
	return st
}

// googlePlaceholder fills the placeholders only Google bodies use.
func (x *exchange) googlePlaceholder(tok string) (string, bool) {
	switch tok {
	case "model":
		return x.model("gemini-2.5-pro"), true
	case "project":
		if p := x.envelope().Project; p != "" {
			return p, true
		}
		if x.login != nil {
			x.s.mu.Lock()
			defer x.s.mu.Unlock()
			return x.login.cfg.Project, true
		}
		return "", true
	case "method":
		_, rpc := x.googleRPC()
		return rpc[strings.LastIndexByte(rpc, '.')+1:], true
	case "service":
		service, _ := x.googleRPC()
		return service, true
	case "rpc":
		_, rpc := x.googleRPC()
		return rpc, true
	case "minute_left", "minute_left_ceil":
		now := x.s.clk.Now()
		left := now.Truncate(time.Minute).Add(time.Minute).Sub(now)
		if tok == "minute_left" {
			return strconv.FormatFloat(left.Seconds(), 'f', -1, 64), true
		}
		return strconv.Itoa(max(ceilSeconds(left), 1)), true
	}
	return "", false
}
