package proxy

// Final answers: the last word of a request, in the shape each client's
// retry loop acts on (docs/providers.md, "What subpool's own refusals tell
// the client's retry loop").

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/policy"
	"github.com/subpool/subpool/proxy/pool"
)

// eventWire is the shape of an error event on this run's stream: the
// provider's wire, told apart for OpenAI's two stream APIs (a Chat
// Completions stream has no event names).
func (rn *run) eventWire() Wire {
	path := rn.upath
	if d := rn.via; d != nil && d.up != "" {
		path = d.pathFor(d.up, d.clientPath) // the attempt's, in its credential's wire
	}
	if rn.wire == WireOpenAI && strings.HasSuffix(path, "/chat/completions") {
		return wireOpenAIChat
	}
	return rn.wire
}

// midwayError is the event that ends a stream that failed after bytes of
// it reached the client. A stall goes out as what each client retries at
// once: Anthropic's overloaded_error (Claude Code retries it whatever else
// it is told), a 504 elsewhere (a 5xx, which Codex and Gemini CLI retry).
func (rn *run) midwayError(msg string, stalled bool) []byte {
	wire := rn.eventWire()
	if !stalled {
		return statusEvent(wire, http.StatusBadGateway, "upstream_error", msg)
	}
	if wire == WireAnthropic {
		return statusEvent(wire, 529, "", msg)
	}
	return statusEvent(wire, http.StatusGatewayTimeout, "upstream_stalled", msg)
}

// failOutOf answers the policy's Fail on an attempt of cred. A request
// whose attempts ran out on rate limits gets its 429 with the earliest
// time the pool knows a credential of the provider is ready again (the
// refusing upstream's own time when the pool knows none).
func (rn *run) failOutOf(cred pool.Credential, act policy.Action) outcome {
	if act.Status != http.StatusTooManyRequests {
		return rn.fail(cred.ID, act.Status, act.Message, 0, retryHint(act.Final))
	}
	after := act.RetryAfter
	if u := rn.p.o.Pool.Explain(pool.PickRequest{Provider: rn.prov.Name, Model: rn.model, Tool: rn.tool}); u != nil && u.HasNext && u.NextReady > 0 {
		after = u.NextReady
	}
	msg := act.Message
	if after > 0 {
		msg += fmt.Sprintf("; the first is ready again in %s", time.Duration(math.Ceil(after.Seconds()))*time.Second)
	}
	return rn.fail(cred.ID, http.StatusTooManyRequests, msg, after, retryHint(act.Final))
}

// exhausted answers a request no target could serve (serve.go), as
// refuse does, and returns the status sent.
func (rn *run) exhausted(w http.ResponseWriter, ex *policy.Action, note string) (status int) {
	rn.setHeaders(w.Header(), "")
	return rn.refuse(w, ex.Status, ex.Message+note, ex.RetryAfter, retryHint(ex.Final))
}

// refuse writes subpool's own refusal as writeError does, except where
// the client would not take it as meant, and returns the status sent.
// On the OpenAI wire, a 429 for Codex or from a ChatGPT pool is Codex's
// own usage_limit_reached; and a final 5xx for Codex is a 400, which it
// shows at once with the body (Codex 0.171.0 retried subpool's final 503
// of a spent overload wait 30 times in 86 s, each a new wait, and shows
// a 503 server_is_overloaded in its own words after 5).
func (rn *run) refuse(w http.ResponseWriter, status int, msg string, retryAfter time.Duration, hint retryHint) int {
	if rn.wire == WireOpenAI {
		codex := rn.tool == api.ToolCodex
		if status == http.StatusTooManyRequests && (codex || rn.chatGPTPool()) {
			writeUsageLimit(w, msg, retryAfter, rn.p.o.Clock.Now())
			return status
		}
		if codex && hint == noRetry && status >= 500 {
			status = http.StatusBadRequest
		}
	}
	writeError(w, rn.wire, status, msg, retryAfter, hint)
	return status
}

// chatGPTPool reports a pool of ChatGPT logins: an OpenAI-wire provider
// holding an OAuth credential.
func (rn *run) chatGPTPool() bool {
	if rn.wire != WireOpenAI {
		return false
	}
	for _, c := range rn.p.o.Pool.Status(rn.prov.Name) {
		if c.Kind == api.KindOAuth {
			return true
		}
	}
	return false
}

// writeUsageLimit is a spent pool's 429 as the ChatGPT backend words a
// spent plan: Codex shows usage_limit_reached with its resets_at as "try
// again at <time>" and stops, where any other 429 it retries and then
// shows as "exceeded retry limit, last status: 429", dropping the body
// (Codex 0.171.0).
func writeUsageLimit(w http.ResponseWriter, msg string, after time.Duration, now time.Time) {
	type ue struct {
		Type            string `json:"type"`
		Message         string `json:"message"`
		ResetsAt        int64  `json:"resets_at,omitempty"`
		ResetsInSeconds int64  `json:"resets_in_seconds,omitempty"`
	}
	e := ue{Type: "usage_limit_reached", Message: ownWords(msg)}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("x-subpool-error", "1")
	h.Set("X-Should-Retry", "false")
	if after > 0 {
		secs := int64(math.Ceil(after.Seconds()))
		e.ResetsAt, e.ResetsInSeconds = now.Add(time.Duration(secs)*time.Second).Unix(), secs
		h.Set("Retry-After", strconv.FormatInt(secs, 10))
	}
	b, _ := json.Marshal(struct {
		Error ue `json:"error"`
	}{e})
	w.WriteHeader(http.StatusTooManyRequests)
	w.Write(b)
}
