package codeassist

import (
	"context"
	"math"
	"net/http"
	"time"
)

// Bucket is one quota of a login, per model and kind, as retrieveUserQuota
// tells it (types.ts BucketInfo).
type Bucket struct {
	ModelID string
	// TokenType is what the bucket counts: REQUESTS, the only kind the
	// service has been seen to send (gemini-cli#14883).
	TokenType string
	// RemainingFraction is the part left, 0 to 1.
	RemainingFraction float64
	// RemainingAmount is the count left, when AmountKnown: the service
	// leaves it out of a full bucket (gemini-cli#27363).
	RemainingAmount int64
	AmountKnown     bool
	// ResetTime is when the bucket fills again; zero when unsaid. The
	// windows are 24 h long, not calendar days (gemini-cli#14750).
	ResetTime time.Time
}

// Limit is the bucket's size as Gemini CLI works it out: the amount left
// over the fraction left, when both are known and the fraction is not 0.
func (b Bucket) Limit() (int64, bool) {
	if !b.AmountKnown || b.RemainingFraction <= 0 {
		return 0, false
	}
	return int64(math.Round(float64(b.RemainingAmount) / b.RemainingFraction)), true
}

// quotaAnswer is RetrieveUserQuotaResponse; remainingAmount is a proto
// int64, so a string.
type quotaAnswer struct {
	Buckets []struct {
		RemainingAmount   string   `json:"remainingAmount"`
		RemainingFraction *float64 `json:"remainingFraction"`
		ResetTime         string   `json:"resetTime"`
		TokenType         string   `json:"tokenType"`
		ModelID           string   `json:"modelId"`
	} `json:"buckets"`
}

// RetrieveUserQuota reads the login's quota buckets for project (the
// login's Code Assist project, from SetupUser). Buckets without a model
// or a fraction are left out, as Gemini CLI leaves them out of its
// meters.
func (c *Client) RetrieveUserQuota(ctx context.Context, token, project string) ([]Bucket, error) {
	var a quotaAnswer
	if err := c.post(ctx, token, "retrieveUserQuota", struct {
		Project string `json:"project"`
	}{project}, &a); err != nil {
		return nil, err
	}
	out := []Bucket{}
	for _, b := range a.Buckets {
		if b.ModelID == "" || b.RemainingFraction == nil {
			continue
		}
		q := Bucket{ModelID: b.ModelID, TokenType: b.TokenType, RemainingFraction: *b.RemainingFraction}
		if n, ok := int64String(b.RemainingAmount); ok {
			q.RemainingAmount, q.AmountKnown = n, true
		}
		if t, err := time.Parse(time.RFC3339Nano, b.ResetTime); err == nil {
			q.ResetTime = t.UTC()
		}
		out = append(out, q)
	}
	return out, nil
}

// RetrieveUserQuota is (&Client{HTTP: client, Endpoint:
// endpoint}).RetrieveUserQuota: client nil takes a 30 s timeout, endpoint
// "" Google's.
func RetrieveUserQuota(ctx context.Context, client *http.Client, endpoint, token, project string) ([]Bucket, error) {
	return (&Client{HTTP: client, Endpoint: endpoint}).RetrieveUserQuota(ctx, token, project)
}
