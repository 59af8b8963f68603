package daemon

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/oauth"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/auth"
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/clock"
	"github.com/subpool/subpool/proxy/pool"
)

// usageLookEvery is how often the poller looks over the logins: a login
// whose usage is not known yet (just added, imported, or after a start)
// is asked within this long.
const usageLookEvery = 5 * time.Second

// usagePollBackoff is the first wait after a failed poll; it doubles with
// each failure in a row, up to the poll interval (never less than it).
const usagePollBackoff = 30 * time.Second

// usagePoller asks the usage endpoint of each OAuth login that nothing
// has reported usage for in a poll interval, so an idle subscription
// still shows its windows (and its reserve and warnings work) before a
// request passes. It only reads: a refused poll neither cools nor parks
// a login, whatever the answer, because a limit on the usage endpoint
// says nothing about the login's quota. Paused and parked logins are left
// alone; the refresher deals with their tokens.
type usagePoller struct {
	clk clock.Clock
	// every is [usage] poll, read on each look so that a reload of
	// config.toml applies at once; 0 (never) leaves every login alone.
	every     func() time.Duration
	pool      *pool.Pool
	auth      auth.Authenticator
	providers map[string]config.Provider
	client    *http.Client
	proxies   *credProxies // each poll leaves through its login's egress
	logf      func(string, ...any)

	// st is what the loop remembers per login; only the loop touches it.
	st map[string]*pollState
}

type pollState struct {
	last    time.Time // when the last poll started
	retryAt time.Time // after a failure: no poll before this
	fails   int       // failures in a row
	noScope bool      // the login cannot read its usage: never again
}

// due reports whether the login may be polled now. The interval counts
// from the last poll rather than a time fixed then, so a reload that
// shortens [usage] poll applies at once.
func (st *pollState) due(now time.Time, every time.Duration) bool {
	if st.noScope {
		return false
	}
	if st.fails > 0 {
		return !now.Before(st.retryAt)
	}
	return st.last.IsZero() || now.Sub(st.last) >= every
}

// run looks over the logins until ctx ends.
func (u *usagePoller) run(ctx context.Context) {
	for {
		u.sweep(ctx)
		wait := usageLookEvery
		if every := u.every(); every > 0 {
			wait = min(wait, every)
		}
		if clock.Sleep(ctx, u.clk, wait) != nil {
			return
		}
	}
}

// sweep polls every login that is due, one after the other.
func (u *usagePoller) sweep(ctx context.Context) {
	every := u.every()
	if every <= 0 {
		return
	}
	if u.st == nil {
		u.st = map[string]*pollState{}
	}
	seen := map[string]bool{}
	for _, c := range u.pool.Status("") {
		if ctx.Err() != nil {
			return
		}
		seen[c.ID] = true
		if c.Kind != api.KindOAuth || c.State == api.StatePaused || c.State == api.StateParked {
			continue
		}
		cp := u.providers[c.Provider]
		if !cp.Builtin || cp.UsageURL == "" {
			continue
		}
		st := u.st[c.ID]
		if st == nil {
			st = &pollState{}
			u.st[c.ID] = st
		}
		now := u.clk.Now()
		if !st.due(now, every) {
			continue
		}
		if at := u.pool.UsageAt(c.ID); !at.IsZero() && now.Sub(at) < every {
			continue // a request reported it lately
		}
		u.poll(ctx, c, cp, st, every)
	}
	for id := range u.st {
		if !seen[id] {
			delete(u.st, id) // removed
		}
	}
}

// poll asks one login's usage endpoint and hands the windows to the pool.
func (u *usagePoller) poll(ctx context.Context, c api.CredentialStatus, cp config.Provider, st *pollState, every time.Duration) {
	start := u.clk.Now()
	st.last = start
	q, retry, err := u.fetch(ctx, c, cp)
	switch {
	case err == nil:
		st.fails = 0
		u.pool.SetQuota(c.ID, q)
	case err == errNoScope:
		st.noScope = true
		msg := fmt.Sprintf("%s cannot read its usage (the login lacks the user:profile scope); its windows show once a request passes. Log in again with `subpool login anthropic` to see them while idle", labelOr(c))
		u.logf("%s", msg)
		u.pool.SetReason(c.ID, msg)
	case ctx.Err() != nil:
	default:
		st.fails++
		wait := min(usagePollBackoff<<min(st.fails-1, 10), max(every, usagePollBackoff))
		st.retryAt = start.Add(max(wait, retry))
		if st.fails == 1 {
			u.logf("usage of %s: %v; trying again in %s", labelOr(c), err, st.retryAt.Sub(start))
		}
	}
}

var errNoScope = fmt.Errorf("no user:profile scope")

// fetch GETs the usage endpoint; retry is the upstream's Retry-After on
// a refusal.
func (u *usagePoller) fetch(ctx context.Context, c api.CredentialStatus, cp config.Provider) (classify.Quota, time.Duration, error) {
	ctx, cancel := context.WithTimeout(u.proxies.withCredential(ctx, c.ID), 30*time.Second)
	defer cancel()
	a, err := u.auth.Auth(ctx, pool.Credential{ID: c.ID, Provider: c.Provider, Label: c.Label, Kind: c.Kind, Source: c.Source}, false)
	if err != nil {
		return classify.Quota{}, 0, err
	}
	if a.CodeAssist {
		return u.fetchGoogle(ctx, cp, a)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cp.UsageURL, nil)
	if err != nil {
		return classify.Quota{}, 0, err
	}
	for k, vs := range a.Header {
		req.Header[k] = vs
	}
	if cp.Name == config.Anthropic && !strings.Contains(req.Header.Get("anthropic-beta"), oauth.OAuthBeta) {
		req.Header.Add("anthropic-beta", oauth.OAuthBeta)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := u.client.Do(req)
	if err != nil {
		return classify.Quota{}, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return classify.Quota{}, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode == http.StatusForbidden && cp.Name == config.Anthropic && strings.Contains(strings.ToLower(string(body)), "scope") {
			return classify.Quota{}, 0, errNoScope
		}
		var retry time.Duration
		if s, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && s > 0 {
			retry = time.Duration(min(s, 86400)) * time.Second
		}
		return classify.Quota{}, retry, fmt.Errorf("the usage endpoint answered %d", resp.StatusCode)
	}
	now := u.clk.Now()
	if cp.Name == config.Anthropic {
		q, err := classify.ReadClaudeUsage(body, now)
		return q, 0, err
	}
	q, err := classify.ReadCodexUsage(body, now)
	return q, 0, err
}

func labelOr(c api.CredentialStatus) string {
	if c.Label != "" {
		return c.Label + " (" + c.ID + ")"
	}
	return c.ID
}

// usageConfig is [usage] as the pool takes it.
func usageConfig(u config.Usage) pool.UsageConfig {
	return pool.UsageConfig{Reserve: u.Reserve, WarnAt: u.WarnAt, AllowExtraUsage: u.AllowExtraUsage}
}
