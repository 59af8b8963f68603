package codeassist

import (
	"errors"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/clock"
)

// retrieveUserQuota's answer as the service gives it: a partly used
// bucket without remainingAmount (gemini-cli#14883), a full one, which
// never carries it (gemini-cli#27363), one with the amount as the proto
// int64 string it is, and one without a fraction, which Gemini CLI skips.
const quotaAnswerSample = `{
  "buckets": [
    {"modelId": "gemini-3-pro-preview", "tokenType": "REQUESTS", "remainingFraction": 0.76175, "resetTime": "2025-12-10T22:19:52Z"},
    {"resetTime": "2026-05-23T02:48:06Z", "tokenType": "REQUESTS", "modelId": "gemini-3.1-pro-preview", "remainingFraction": 1},
    {"modelId": "gemini-2.5-flash", "tokenType": "REQUESTS", "remainingAmount": "37", "remainingFraction": 0.37, "resetTime": "2026-05-23T02:48:06.512Z"},
    {"modelId": "gemini-2.5-flash-lite", "tokenType": "REQUESTS", "resetTime": "2026-05-23T02:48:06Z"}
  ]
}`

func TestRetrieveUserQuota(t *testing.T) {
	f := newFake(t).on("retrieveUserQuota", answer{200, quotaAnswerSample})
	got, err := RetrieveUserQuota(guard(t), f.srv.Client(), f.srv.URL, token, "wise-vortex-4k2q9")
	if err != nil {
		t.Fatal(err)
	}
	want := []Bucket{
		{ModelID: "gemini-3-pro-preview", TokenType: "REQUESTS", RemainingFraction: 0.76175, ResetTime: time.Date(2025, 12, 10, 22, 19, 52, 0, time.UTC)},
		{ModelID: "gemini-3.1-pro-preview", TokenType: "REQUESTS", RemainingFraction: 1, ResetTime: time.Date(2026, 5, 23, 2, 48, 6, 0, time.UTC)},
		{ModelID: "gemini-2.5-flash", TokenType: "REQUESTS", RemainingFraction: 0.37, RemainingAmount: 37, AmountKnown: true, ResetTime: time.Date(2026, 5, 23, 2, 48, 6, 512e6, time.UTC)},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("bucket %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if n, ok := got[2].Limit(); !ok || n != 100 {
		t.Fatalf("limit %d %v", n, ok)
	}
	if _, ok := got[1].Limit(); ok {
		t.Fatal("a limit without an amount")
	}
	seen := f.seen()
	if len(seen) != 1 || seen[0].Path != "/v1internal:retrieveUserQuota" || seen[0].Auth != "Bearer "+token {
		t.Fatalf("%+v", seen)
	}
	sameJSON(t, "request", seen[0].Body, `{"project":"wise-vortex-4k2q9"}`)

	// No buckets is an empty list, not nil: meters show "none known".
	f = newFake(t).on("retrieveUserQuota", answer{200, `{}`})
	if got, err := f.client(nil).RetrieveUserQuota(guard(t), token, "p"); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("%v %v", got, err)
	}
}

// A refused token is an *APIError with the status, for the caller to
// refresh on; the token is in no message.
func TestQuotaRefusal(t *testing.T) {
	f := newFake(t).on("retrieveUserQuota", answer{401, `{"error":{"code":401,"message":"Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.","status":"UNAUTHENTICATED"}}`})
	_, err := f.client(clock.NewFake(epoch)).RetrieveUserQuota(guard(t), token, "p")
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 401 || ae.Code != "UNAUTHENTICATED" || len(f.seen()) != 1 {
		t.Fatalf("%v", err)
	}
	if want := "code assist retrieveUserQuota answered 401 UNAUTHENTICATED: Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential."; err.Error() != want {
		t.Fatalf("message %q", err)
	}
}
