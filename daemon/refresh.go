package daemon

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/oauth"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/auth"
	"github.com/subpool/subpool/proxy/clock"
	"github.com/subpool/subpool/proxy/pool"
)

// loginRefreshEvery is how often the logins are looked over. The manager
// renews an access token once it is within its skew (5 min) of expiry, so
// a look a minute renews each with minutes to spare.
const loginRefreshEvery = time.Minute

// refresher keeps subscription logins usable while nothing uses them:
//
//   - an access token about to run out is renewed before a request has to
//     wait for the token endpoint;
//   - a login whose refresh token has died is parked when it dies, so the
//     tray asks for a new login then, not when the next request fails;
//   - a Claude Code or Codex login parked that way comes back by itself
//     once its CLI holds a good login again (`claude /login`): the manager
//     re-reads the CLI's file on each look.
//
// Renewing is the manager's: one refresh per credential at a time, shared
// with requests, saved before it is used, backing off after a failure. A
// look at a login that is not due costs a map lookup.
type refresher struct {
	clk       clock.Clock
	every     time.Duration
	m         *oauth.Manager
	pool      *pool.Pool
	providers map[string]config.Provider

	// noted is the reason a temporary failure put on each credential, to
	// take it off again once a renewal works, unless something else has
	// written its own reason since. Only the loop touches it.
	noted map[string]string
}

// run looks over the logins until ctx ends.
func (r *refresher) run(ctx context.Context) {
	for {
		r.sweep(ctx)
		if clock.Sleep(ctx, r.clk, r.every) != nil {
			return
		}
	}
}

func (r *refresher) sweep(ctx context.Context) {
	if r.noted == nil {
		r.noted = map[string]string{}
	}
	for _, c := range r.pool.Status("") {
		if ctx.Err() != nil {
			return
		}
		if c.Kind != api.KindOAuth || c.State == api.StatePaused {
			continue
		}
		parked := slices.ContainsFunc(c.Parks, func(p api.Park) bool { return p.Kind == api.ParkRelogin })
		if parked && c.Source == "" {
			continue // only a new login mends it
		}
		p, ok := OAuthProvider(r.providers[c.Provider])
		if !ok {
			continue
		}
		_, err := r.m.Token(ctx, c.ID, p, false)
		switch {
		case err == nil:
			if parked {
				r.pool.Unpark(c.ID, api.ParkRelogin)
			}
			if why, ok := r.noted[c.ID]; ok {
				if c.Reason == why {
					r.pool.SetReason(c.ID, "")
				}
				delete(r.noted, c.ID)
			}
		case errors.Is(err, auth.ErrRelogin) || errors.Is(err, auth.ErrNoRefresh):
			r.pool.Park(c.ID, "", api.ParkRelogin, err.Error())
		case ctx.Err() == nil && !parked:
			// The endpoint is down or limiting, or the keychain locked:
			// the manager backs off and the tray shows why.
			r.pool.SetReason(c.ID, err.Error())
			r.noted[c.ID] = err.Error()
		}
	}
}
