package oauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/auth"
	"github.com/subpool/subpool/proxy/clock"
)

// TokenStore keeps logins between runs. The app backs it with the
// keychain; its Save must be durable when it returns, because a rotated
// refresh token that is lost cannot be had again.
type TokenStore interface {
	// Load returns id's tokens, or an error wrapping auth.ErrRelogin
	// when there are none or they are unreadable.
	Load(id string) (Tokens, error)
	// Save replaces id's tokens.
	Save(id string, t Tokens) error
}

// ManagerOptions configures a Manager. Zero values take the defaults noted.
type ManagerOptions struct {
	Clock  clock.Clock  // default clock.Real{}
	Client *http.Client // token requests; default a client with a 30 s timeout
	Store  TokenStore   // required
	// Skew is how long before expiry an access token is renewed, so that
	// a long request does not outlive it. Default 5m.
	Skew time.Duration
	Emit api.Emitter // token_refreshed; default api.Discard
	Logf func(format string, args ...any)
	// OnExpiry is told each credential's access token expiry as it
	// becomes known (the pool's SetExpiry, for status).
	OnExpiry func(id string, expiresAt time.Time)
	// Backoff is the wait after the 1st, 2nd, … temporary refresh
	// failure in a row (429, 5xx, no answer); the last step repeats. A
	// longer retry-after from the endpoint wins. Default 30s, 1m, 2m, 5m,
	// 10m.
	Backoff []time.Duration
	// Timeout bounds one refresh, source re-read and write-back included.
	// Default 1m.
	Timeout time.Duration
	// WithCredential, when set, gives the context of credential id's
	// token requests: the app routes them through the credential's own
	// egress proxy, so a refresh leaves from where its requests do.
	WithCredential func(ctx context.Context, id string) context.Context
}

// recentRenewal is how long after a new token a forced refresh reuses it
// instead of spending the refresh token again: every request that was
// refused with the old token asks for a refresh, and one is enough.
const recentRenewal = 30 * time.Second

// spentMemory is how many spent refresh tokens a credential remembers, so
// that a source still holding one (its write-back failed) is never
// adopted.
const spentMemory = 8

// Manager hands out access tokens and renews them: ahead of expiry, and
// when forced after an upstream refused one. There is at most one renewal
// per credential at a time; concurrent callers wait for it and share its
// result. A renewal runs on its own context, so a client that goes away
// cannot cut a refresh whose rotated token the endpoint has already
// issued. Its methods are safe for concurrent use.
type Manager struct {
	o ManagerOptions

	mu    sync.Mutex
	ents  map[string]*entry
	srcMu map[string]*sync.Mutex

	// onLockWait, when set (by tests), is told each time a refresh finds
	// Claude Code's refresh lock held.
	onLockWait func()
}

// entry is one credential's login. Guarded by Manager.mu.
type entry struct {
	loaded  bool
	tok     Tokens
	dirty   bool // tok is newer than the store: a Save failed
	removed bool // Forget ran; nothing more is saved for it
	flight  *flight

	renewedAt time.Time // when tok last became new (refresh or adoption)
	failures  int       // temporary refresh failures in a row
	retryAt   time.Time // no refresh before this, after a temporary failure
	lastErr   error     // the temporary failure behind retryAt
	dead      error     // the endpoint said: log in again
	spent     [][32]byte
}

// flight is one load-or-renew in progress.
type flight struct {
	done    chan struct{}
	force   bool
	tok     Tokens
	err     error
	renewed bool // tok is new: refreshed or adopted from the source
}

// NewManager returns a Manager; it starts nothing.
func NewManager(o ManagerOptions) *Manager {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if o.Skew <= 0 {
		o.Skew = 5 * time.Minute
	}
	if o.Emit == nil {
		o.Emit = api.Discard
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if len(o.Backoff) == 0 {
		o.Backoff = []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute}
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Minute
	}
	return &Manager{o: o, ents: map[string]*entry{}, srcMu: map[string]*sync.Mutex{}}
}

// Auth is what one attempt with credential id sends: Token, then
// p.Auth. It is the oauth half of the app's auth.Authenticator.
func (m *Manager) Auth(ctx context.Context, id string, p Provider, refresh bool) (auth.Auth, error) {
	t, err := m.Token(ctx, id, p, refresh)
	if err != nil {
		return auth.Auth{}, err
	}
	return p.Auth(t), nil
}

// Token returns id's tokens with an access token good for at least Skew,
// renewing it first when needed. With force (an upstream refused the
// token) it renews unless a renewal finished in the last 30 s.
//
// Errors: one wrapping auth.ErrRelogin when the login is dead (the proxy
// parks the credential); any other is temporary (the token endpoint is
// down or limiting, the keychain is locked), and the proxy skips the
// credential for that request. After a temporary failure, refreshes wait
// out a backoff; meanwhile a token that has not yet expired is still
// handed out.
func (m *Manager) Token(ctx context.Context, id string, p Provider, force bool) (Tokens, error) {
	for {
		m.mu.Lock()
		e := m.ents[id]
		if e == nil {
			e = &entry{}
			m.ents[id] = e
		}
		f := e.flight
		if f == nil {
			if t, err, ok := m.quickLocked(e, force); ok {
				m.mu.Unlock()
				return t, err
			}
			f = &flight{done: make(chan struct{}), force: force}
			e.flight = f
			go m.fly(e, id, p, f)
		}
		m.mu.Unlock()

		select {
		case <-ctx.Done():
			return Tokens{}, ctx.Err()
		case <-f.done:
		}
		// A forced caller that joined a flight which only loaded (or
		// found the token fresh) still needs its renewal.
		if force && !f.force && !f.renewed && f.err == nil {
			continue
		}
		return f.tok, f.err
	}
}

// quickLocked answers from memory when no I/O is needed; ok is false when
// a flight must run. It requires m.mu.
func (m *Manager) quickLocked(e *entry, force bool) (t Tokens, err error, ok bool) {
	if !e.loaded || e.dirty {
		return Tokens{}, nil, false
	}
	if e.dead != nil {
		if e.tok.Source.IsZero() {
			return Tokens{}, e.dead, true
		}
		return Tokens{}, nil, false // the CLI may hold a good login again
	}
	now := m.o.Clock.Now()
	if !m.dueLocked(e, force, now) {
		return e.tok, nil, true
	}
	if now.Before(e.retryAt) {
		t, err := m.backingOffLocked(e, force, now)
		return t, err, true
	}
	return Tokens{}, nil, false
}

// dueLocked reports whether e needs renewing. It requires m.mu.
func (m *Manager) dueLocked(e *entry, force bool, now time.Time) bool {
	if force {
		return e.renewedAt.IsZero() || now.Sub(e.renewedAt) >= recentRenewal
	}
	if e.tok.Access == "" {
		return true
	}
	if e.tok.ExpiresAt.IsZero() || now.Before(e.tok.ExpiresAt.Add(-m.o.Skew)) {
		return false
	}
	// A token issued for less than Skew is due the moment it arrives;
	// renewing it on every request (or every look of the refresher) would
	// spend a refresh each time, so a fresh one serves until it expires.
	return e.renewedAt.IsZero() || now.Sub(e.renewedAt) >= recentRenewal || !now.Before(e.tok.ExpiresAt)
}

// backingOffLocked answers while refreshes wait after a temporary
// failure: the current token while it is still good, else the failure.
func (m *Manager) backingOffLocked(e *entry, force bool, now time.Time) (Tokens, error) {
	if !force && e.tok.Access != "" && (e.tok.ExpiresAt.IsZero() || now.Before(e.tok.ExpiresAt)) {
		return e.tok, nil
	}
	return Tokens{}, fmt.Errorf("%w (next try in %s)", e.lastErr, e.retryAt.Sub(now).Round(time.Second))
}

// fly runs one flight and wakes everyone waiting on it.
func (m *Manager) fly(e *entry, id string, p Provider, f *flight) {
	defer func() {
		if r := recover(); r != nil {
			f.err = fmt.Errorf("token renewal of %s failed: %v", id, r)
			m.o.Logf("oauth: panic renewing %s: %v", id, r)
		}
		m.mu.Lock()
		e.flight = nil
		m.mu.Unlock()
		close(f.done)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), m.o.Timeout)
	defer cancel()
	if m.o.WithCredential != nil {
		ctx = m.o.WithCredential(ctx, id)
	}

	m.mu.Lock()
	loaded, dirty, tok := e.loaded, e.dirty, e.tok
	m.mu.Unlock()
	if !loaded {
		t, err := m.o.Store.Load(id)
		if err != nil {
			if !errors.Is(err, auth.ErrRelogin) {
				err = fmt.Errorf("cannot read the login of %s: %w", id, err)
			}
			f.err = err
			return
		}
		m.mu.Lock()
		e.tok, e.loaded, tok = t, true, t
		m.mu.Unlock()
		m.expiry(id, t)
	}
	if dirty {
		if err := m.save(e, id, tok); err != nil {
			f.err = err
			return
		}
	}

	m.mu.Lock()
	now := m.o.Clock.Now()
	due := e.dead != nil || m.dueLocked(e, f.force, now)
	if due && e.dead == nil && now.Before(e.retryAt) {
		f.tok, f.err = m.backingOffLocked(e, f.force, now)
		m.mu.Unlock()
		return
	}
	m.mu.Unlock()
	if !due {
		f.tok = tok
		return
	}
	unlock := m.lockSource(tok.Source)
	defer unlock()
	if dir := tok.Source.lockDir(); dir != "" {
		// Claude Code refreshes under these locks: holding them, subpool
		// re-reads its file, refreshes and writes back while Claude Code
		// waits, and the other way round. A refresh that could not have
		// them would race Claude Code for the single-use refresh token.
		release, err := claudeLocks(ctx, dir, m.onLockWait, m.o.Logf)
		if err != nil {
			f.err = fmt.Errorf("the login of %s is being refreshed by Claude Code, which still holds its lock in %s; will try again (%v)", id, dir, err)
			return
		}
		defer release()
	}
	if tok.Source.Kind == SourceCodex {
		// Codex changes its login under auth.lock; subpool too, so the
		// two never refresh one token at once.
		release, err := codexStateLocked(ctx, tok.Source.Path, m.onLockWait)
		if err != nil {
			f.err = fmt.Errorf("the login of %s is being changed by Codex; will try again: %v", id, err)
			return
		}
		defer release()
	}
	f.tok, f.renewed, f.err = m.renew(ctx, e, id, p, tok, f.force)
}

// lockSource serializes renewals of every credential imported from one
// source: they share one refresh token.
func (m *Manager) lockSource(s Source) func() {
	if s.IsZero() {
		return func() {}
	}
	m.mu.Lock()
	mu := m.srcMu[s.key()]
	if mu == nil {
		mu = &sync.Mutex{}
		m.srcMu[s.key()] = mu
	}
	m.mu.Unlock()
	mu.Lock()
	return mu.Unlock
}

// renew gets tok a new access token: from the source when the CLI has
// renewed it already, else from the token endpoint.
func (m *Manager) renew(ctx context.Context, e *entry, id string, p Provider, tok Tokens, force bool) (Tokens, bool, error) {
	src := tok.Source
	if !src.IsZero() {
		cur, err := src.Read()
		if err == nil {
			tok = tok.withGrantOf(cur)
		}
		switch {
		case err != nil:
			m.o.Logf("oauth: %s: cannot re-read %s before refreshing (%v); refreshing with subpool's own token", id, src, err)
		case m.adoptable(e, cur, tok):
			adopted := tok.adopt(cur)
			if err := m.commit(e, id, p, adopted, "took the login "+src.Kind+" had renewed"); err != nil {
				return Tokens{}, false, err
			}
			now := m.o.Clock.Now()
			if adopted.ExpiresAt.IsZero() || now.Before(adopted.ExpiresAt.Add(-m.o.Skew)) {
				return adopted, true, nil
			}
			tok = adopted
		}
	}
	m.mu.Lock()
	dead := e.dead
	m.mu.Unlock()
	if dead != nil {
		return Tokens{}, false, dead
	}
	if tok.Refresh == "" {
		err := fmt.Errorf("%w: the %s login of %s has no refresh token", auth.ErrRelogin, p.Name, id)
		m.mu.Lock()
		e.dead = err
		m.mu.Unlock()
		return Tokens{}, false, err
	}

	now := m.o.Clock.Now()
	nt, err := refresh(ctx, m.o.Client, p, tok, now)
	if err != nil {
		return m.refreshFailed(e, id, p, src, tok, err, force, now)
	}

	if nt.Refresh != "" && nt.Refresh != tok.Refresh {
		m.markSpent(e, tok.Refresh)
	}
	fresh := tok.merge(nt)
	reason := "refreshed ahead of expiry"
	if force {
		reason = "refreshed after the upstream refused the token"
	}
	// Saved before anyone uses it: a rotated refresh token that only
	// lived in memory would be lost with the process.
	if err := m.commit(e, id, p, fresh, reason); err != nil {
		return Tokens{}, false, err
	}
	if !src.IsZero() {
		if err := src.write(fresh, tok.Refresh); err != nil {
			m.o.Logf("oauth: warning: %s: cannot give the renewed login back to %s (%v); %s may ask you to log in again", id, src, err, src.Kind)
		}
	}
	return fresh, true, nil
}

// refreshFailed handles a refused or failed refresh of tok, imported from
// src (zero when it was not). A refusal
// that calls for a new login first looks for a newer login in the source,
// since the CLI may have spent the token a moment before us; without one
// the entry is dead. Any other failure backs off.
func (m *Manager) refreshFailed(e *entry, id string, p Provider, src Source, tok Tokens, err error, force bool, now time.Time) (Tokens, bool, error) {
	var te *TokenError
	if errors.As(err, &te) && te.Relogin {
		// The CLI may have spent the token a moment before us.
		if !src.IsZero() {
			if cur, rerr := src.Read(); rerr == nil && cur.Refresh != "" && cur.Refresh != tok.Refresh && !m.spent(e, cur.Refresh) {
				adopted := tok.adopt(cur)
				if err := m.commit(e, id, p, adopted, "took the login "+src.Kind+" had renewed"); err != nil {
					return Tokens{}, false, err
				}
				return adopted, true, nil
			}
		}
		m.mu.Lock()
		e.dead = err
		m.mu.Unlock()
		m.o.Logf("oauth: %s: %v", id, err)
		return Tokens{}, false, err
	}
	m.mu.Lock()
	e.failures++
	wait := m.o.Backoff[min(e.failures, len(m.o.Backoff))-1]
	if te != nil && te.RetryAfter > wait {
		wait = min(te.RetryAfter, time.Hour)
	}
	e.retryAt, e.lastErr = now.Add(wait), err
	t, berr := m.backingOffLocked(e, force, now)
	m.mu.Unlock()
	m.o.Logf("oauth: %s: token refresh failed (%v); next try in %s", id, err, wait)
	return t, false, berr
}

// adoptable reports whether the source holds a newer login than ours:
// other tokens with another refresh token or a later expiry, and not a
// refresh token we have spent (a source whose write-back failed still
// holds that). A different refresh token with an earlier expiry is an
// older login, not a newer one. The same tokens are not newer whatever
// their expiry says: the keychain keeps seconds, Claude Code milliseconds.
func (m *Manager) adoptable(e *entry, cur, ours Tokens) bool {
	if cur.Refresh == "" || m.spent(e, cur.Refresh) || (cur.Access == ours.Access && cur.Refresh == ours.Refresh) {
		return false
	}
	if cur.ExpiresAt.After(ours.ExpiresAt) {
		return true
	}
	return cur.Refresh != ours.Refresh && !cur.ExpiresAt.Before(ours.ExpiresAt)
}

// adopt takes the source's tokens, keeping what only subpool knows.
func (t Tokens) adopt(cur Tokens) Tokens {
	out := t.merge(cur)
	out.ExpiresAt = cur.ExpiresAt
	out.Source = t.Source
	return out
}

func (m *Manager) spent(e *entry, refresh string) bool {
	sum := sha256.Sum256([]byte(refresh))
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Contains(e.spent, sum)
}

// markSpent remembers a refresh token's hash, never the token.
func (m *Manager) markSpent(e *entry, refresh string) {
	sum := sha256.Sum256([]byte(refresh))
	m.mu.Lock()
	e.spent = append(e.spent, sum)
	if len(e.spent) > spentMemory {
		e.spent = e.spent[1:]
	}
	m.mu.Unlock()
}

// commit makes t the credential's login: saved first, then handed out.
func (m *Manager) commit(e *entry, id string, p Provider, t Tokens, reason string) error {
	m.mu.Lock()
	e.tok, e.dirty = t, true
	m.mu.Unlock()
	if err := m.save(e, id, t); err != nil {
		return err
	}
	m.mu.Lock()
	e.renewedAt = m.o.Clock.Now()
	e.failures, e.retryAt, e.lastErr, e.dead = 0, time.Time{}, nil, nil
	m.mu.Unlock()
	m.expiry(id, t)
	ev := api.Event{Type: api.EventTokenRefreshed, Provider: p.Name, CredentialID: id, Reason: reason}
	if !t.ExpiresAt.IsZero() {
		at := t.ExpiresAt
		ev.Until = &at
	}
	m.o.Emit.Emit(ev)
	return nil
}

// save writes e's tokens to the store. On failure they stay in memory,
// marked dirty, and the next Token call saves them before handing them
// out.
func (m *Manager) save(e *entry, id string, t Tokens) error {
	m.mu.Lock()
	removed := e.removed
	m.mu.Unlock()
	if removed {
		// Not a relogin: the credential is gone or has a new login, and
		// parking it would be wrong either way.
		return fmt.Errorf("credential %s was removed or logged in again", id)
	}
	if err := m.o.Store.Save(id, t); err != nil {
		return fmt.Errorf("renewed the login of %s but cannot save it (%v); will save it before the next use", id, err)
	}
	m.mu.Lock()
	if e.tok.Refresh == t.Refresh && e.tok.Access == t.Access {
		e.dirty = false
	}
	m.mu.Unlock()
	return nil
}

func (m *Manager) expiry(id string, t Tokens) {
	if m.o.OnExpiry != nil && !t.ExpiresAt.IsZero() {
		m.o.OnExpiry(id, t.ExpiresAt)
	}
}

// Forget drops what the Manager holds for id: the credential was removed,
// or its secret replaced by a new login. A renewal in flight finishes
// but saves nothing.
func (m *Manager) Forget(id string) {
	m.mu.Lock()
	if e := m.ents[id]; e != nil {
		e.removed = true
		delete(m.ents, id)
	}
	m.mu.Unlock()
}
