package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/subpool/subpool/internal/codeassist"
	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/oauth"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/auth"
	"github.com/subpool/subpool/proxy/classify"
)

// A Google login is served under a Cloud project that Code Assist names
// (codeassist.SetupUser), and every call of it must name that project.
// Gemini CLI asks at every start; subpool asks at login, and for a login
// that came without one (an import: Gemini CLI keeps none on disk) once
// per run, at its first use, as the CLI would.

// setupTimeout bounds a discovery: onboarding a new account polls an
// operation that Google usually finishes in seconds.
const setupTimeout = 2 * time.Minute

// projects caches the discovered project of each Google login, one
// discovery per login at a time.
type projects struct {
	client *http.Client
	mu     sync.Mutex
	of     map[string]string
	busy   map[string]chan struct{}
}

// project returns the project of login id, discovering it with a's token
// when not known yet.
func (ps *projects) project(ctx context.Context, id string, cp config.Provider, a auth.Auth) (string, error) {
	for {
		ps.mu.Lock()
		if p, ok := ps.of[id]; ok {
			ps.mu.Unlock()
			return p, nil
		}
		if ch, ok := ps.busy[id]; ok {
			ps.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		if ps.busy == nil {
			ps.busy, ps.of = map[string]chan struct{}{}, map[string]string{}
		}
		ch := make(chan struct{})
		ps.busy[id] = ch
		ps.mu.Unlock()

		p, err := discoverProject(ctx, ps.client, cp, bearer(a))
		ps.mu.Lock()
		if err == nil {
			ps.of[id] = p
		}
		delete(ps.busy, id)
		close(ch)
		ps.mu.Unlock()
		return p, err
	}
}

func (ps *projects) forget(id string) {
	ps.mu.Lock()
	delete(ps.of, id)
	ps.mu.Unlock()
}

// discoverProject runs Gemini CLI's setup for the login whose access token
// is token. What only the person can fix (no project for a Workspace
// account, an ineligible account, a verification Google asks for) parks
// the login with Code Assist's own words.
func discoverProject(ctx context.Context, c *http.Client, cp config.Provider, token string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	u, err := (&codeassist.Client{HTTP: c, Endpoint: cp.CodeAssistURL}).SetupUser(ctx, token, codeassist.ProjectFromEnv())
	if err == nil {
		return u.ProjectID, nil
	}
	var inel *codeassist.IneligibleError
	var val *codeassist.ValidationError
	if errors.Is(err, codeassist.ErrProjectRequired) || errors.Is(err, codeassist.ErrCloudShellProject) || errors.As(err, &inel) || errors.As(err, &val) {
		return "", fmt.Errorf("%w: %w", auth.ErrRelogin, err)
	}
	return "", fmt.Errorf("finding the Code Assist project of this Google login: %w", err)
}

func bearer(a auth.Auth) string {
	v := a.Header.Get("Authorization")
	if len(v) > 7 {
		return v[7:]
	}
	return ""
}

// CompleteGoogleLogin finds the Code Assist project of a Google login just
// made or imported, as Gemini CLI does right after its own, so that the
// login is stored with it; the tier names the plan. A token that has
// expired (an import of a CLI left idle) is left for the first use, which
// refreshes it and asks then. hc carries the calls (nil: a default
// client); pass the login's egress client (LoginClient).
func CompleteGoogleLogin(ctx context.Context, hc *http.Client, cp config.Provider, tok *oauth.Tokens, now time.Time) error {
	if tok.Project != "" || tok.Access == "" || (!tok.ExpiresAt.IsZero() && !now.Before(tok.ExpiresAt)) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	u, err := (&codeassist.Client{HTTP: hc, Endpoint: cp.CodeAssistURL}).SetupUser(ctx, tok.Access, codeassist.ProjectFromEnv())
	if err != nil {
		return err
	}
	tok.Project = u.ProjectID
	if tok.Plan == "" {
		tok.Plan = u.TierID
	}
	return nil
}

// fetchGoogle reads a Google login's quota: Code Assist's buckets, one per
// model, each a fraction left of a 24-hour window (retrieveUserQuota, what
// Gemini CLI's /stats shows). cp.UsageURL is that method's address.
func (u *usagePoller) fetchGoogle(ctx context.Context, cp config.Provider, a auth.Auth) (classify.Quota, time.Duration, error) {
	endpoint := strings.TrimSuffix(cp.UsageURL, "/"+codeassist.APIVersion+":retrieveUserQuota")
	buckets, err := codeassist.RetrieveUserQuota(ctx, u.client, endpoint, bearer(a), a.Project)
	if err != nil {
		return classify.Quota{}, 0, err
	}
	q := googleQuota(buckets)
	if len(q.Windows) == 0 {
		return classify.Quota{}, 0, errors.New("retrieveUserQuota named no bucket")
	}
	return q, 0, nil
}

// googleWindow is the length of Code Assist's quota windows: 24 hours
// from the first request, not calendar days (gemini-cli#14750).
const googleWindow = 24 * time.Hour

// googleQuota turns Code Assist's buckets into windows named like the
// other providers' per-model ones ("1d_gemini-2.5-pro"); the fullest is
// the binding one, as for windows that each count one model.
func googleQuota(buckets []codeassist.Bucket) classify.Quota {
	var q classify.Quota
	bind := -1
	for _, b := range buckets {
		if b.TokenType != "" && b.TokenType != "REQUESTS" {
			continue
		}
		w := api.QuotaWindow{Window: api.Window{Name: "1d_" + b.ModelID, Used: min(max(1-b.RemainingFraction, 0), 1)},
			Model: b.ModelID, Length: googleWindow}
		if !b.ResetTime.IsZero() {
			t := b.ResetTime
			w.ResetsAt = &t
		}
		if w.Used >= 1 {
			w.Status = "rejected"
		}
		q.Windows = append(q.Windows, w)
		if bind < 0 || w.Used > q.Windows[bind].Used {
			bind = len(q.Windows) - 1
		}
	}
	if bind >= 0 {
		q.Windows[bind].Binding = true
	}
	return q
}
