// Package codeassist talks to Google's Code Assist API (cloudcode-pa),
// the service behind Gemini CLI's "Login with Google", for what subpool
// needs beside the model calls the proxy relays: the project discovery
// Gemini CLI runs at login (SetupUser: loadCodeAssist, then onboardUser
// for a new account) and the quota buckets of a login
// (RetrieveUserQuota). It is plain net/http with the endpoint injected;
// every fact in it was read in Gemini CLI 0.61.0's bundle
// (packages/core/src/code_assist/setup.ts, server.ts, types.ts), and
// fidelity_test.go checks them against the installed package.
package codeassist

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/subpool/subpool/proxy/clock"
)

// DefaultEndpoint and APIVersion are Gemini CLI's CODE_ASSIST_ENDPOINT and
// CODE_ASSIST_API_VERSION defaults. Gemini CLI reads both from its
// environment; subpool does not, because CODE_ASSIST_ENDPOINT is how
// Gemini CLI is pointed at subpool, and a subpool that read it would call
// itself.
const (
	DefaultEndpoint = "https://cloudcode-pa.googleapis.com"
	APIVersion      = "v1internal"
)

// pollInterval is how long Gemini CLI waits between looks at an
// onboarding operation (setup.ts: setTimeout 5e3).
const pollInterval = 5 * time.Second

// retryWaits are the waits before the 1st, 2nd and 3rd retry of a call
// that got no answer, a 429 or a 5xx: Gemini CLI's requestPost retries
// three times from 100 ms, and gaxios doubles the wait each time.
var retryWaits = []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}

// Client calls one Code Assist endpoint. The zero value calls Google's
// with a 30 s timeout per request.
type Client struct {
	// HTTP sends the requests. Default: 30 s timeout.
	HTTP *http.Client
	// Endpoint is the base without the version, as CODE_ASSIST_ENDPOINT
	// is; "" means DefaultEndpoint.
	Endpoint string
	// Version is the API version; "" means APIVersion.
	Version string
	// Clock times the waits between onboarding polls and retries.
	// Default clock.Real{}.
	Clock clock.Clock
	// PollInterval is the wait between looks at an onboarding operation;
	// 0 means Gemini CLI's 5 s.
	PollInterval time.Duration
}

// APIError is a Code Assist refusal: the HTTP status and what Google's
// error body says (google.rpc.Status). It never carries the token.
type APIError struct {
	Method  string // loadCodeAssist, onboardUser, retrieveUserQuota, or the operation's name
	Status  int    // 0 when no answer came
	Code    string // the google.rpc status, e.g. PERMISSION_DENIED
	Reason  string // the first ErrorInfo reason, e.g. SECURITY_POLICY_VIOLATED
	Message string // Google's message, on one line and clipped
	reasons []string
	cause   error // the transport error when Status is 0
}

func (e *APIError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("code assist %s: no answer: %v", e.Method, e.cause)
	}
	s := fmt.Sprintf("code assist %s answered %d", e.Method, e.Status)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Reason != "" {
		s += " (" + e.Reason + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

func (e *APIError) Unwrap() error { return e.cause }

// temporary reports a failure worth trying again, as Gemini CLI's retry
// config counts them: no answer, 429, 499 and 5xx.
func (e *APIError) temporary() bool {
	return e.Status == 0 || e.Status == http.StatusTooManyRequests || e.Status == 499 || e.Status >= 500
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 30 * time.Second}
}

func (c *Client) clock() clock.Clock {
	if c.Clock != nil {
		return c.Clock
	}
	return clock.Real{}
}

func (c *Client) base() string {
	ep, v := strings.TrimRight(c.Endpoint, "/"), c.Version
	if ep == "" {
		ep = DefaultEndpoint
	}
	if v == "" {
		v = APIVersion
	}
	return ep + "/" + v
}

// post calls {base}:method with req as JSON and decodes the answer into
// out.
func (c *Client) post(ctx context.Context, token, method string, req, out any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	return c.do(ctx, token, http.MethodPost, c.base()+":"+method, method, body, out)
}

// do is the one funnel every call goes through: the bearer token, JSON,
// retries of temporary failures on the clock, and Google's error shape
// turned into an *APIError.
func (c *Client) do(ctx context.Context, token, verb, url, method string, body []byte, out any) error {
	for attempt := 0; ; attempt++ {
		err := c.once(ctx, token, verb, url, method, body, out)
		var ae *APIError
		if err == nil || !errors.As(err, &ae) || !ae.temporary() || attempt >= len(retryWaits) || ctx.Err() != nil {
			return err
		}
		if werr := clock.Sleep(ctx, c.clock(), retryWaits[attempt]); werr != nil {
			return err
		}
	}
}

func (c *Client) once(ctx context.Context, token, verb, url, method string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, verb, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	// An honest name; the endpoint needs no other client's.
	req.Header.Set("User-Agent", "subpool")
	resp, err := c.http().Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &APIError{Method: method, cause: transportCause(err)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return &APIError{Method: method, cause: err}
	}
	if resp.StatusCode/100 != 2 {
		return apiError(method, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return &APIError{Method: method, Status: resp.StatusCode, Message: "the answer is not the JSON expected"}
	}
	return nil
}

// transportCause drops the URL from a transport error: it is ours and
// only lengthens the message.
func transportCause(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

// rpcStatus is Google's error body: {"error": google.rpc.Status}.
type rpcStatus struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
		Details []struct {
			Type   string `json:"@type"`
			Reason string `json:"reason"`
		} `json:"details"`
	} `json:"error"`
}

func apiError(method string, status int, b []byte) *APIError {
	e := &APIError{Method: method, Status: status}
	var v rpcStatus
	if json.Unmarshal(b, &v) == nil {
		e.Code, e.Message = ident(v.Error.Status), oneLine(v.Error.Message)
		for _, d := range v.Error.Details {
			if r := ident(d.Reason); r != "" {
				if e.Reason == "" {
					e.Reason = r
				}
				e.reasons = append(e.reasons, r)
			}
		}
	}
	return e
}

// has reports whether the refusal's details carry reason, where Gemini
// CLI looks for it: in any detail, not only the first.
func (e *APIError) has(reason string) bool { return slices.Contains(e.reasons, reason) }

// ident keeps an enum-like code fit for a message.
func ident(s string) string {
	if len(s) > 64 || strings.ContainsAny(s, " \n\t\"") {
		return ""
	}
	return s
}

// oneLine makes Google's prose fit a one-line error.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return s
}

// int64String reads a proto int64, which JSON carries as a string.
func int64String(s string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return n, err == nil
}
