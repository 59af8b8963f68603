package daemon

import (
	"context"
	"fmt"
	"sync"

	"github.com/subpool/subpool/internal/oauth"
	"github.com/subpool/subpool/proxy/admin"
	"github.com/subpool/subpool/proxy/api"
)

// browserLogins are the tray's logins in progress, the newest of each
// provider's: a login whose callback could not reach the proxy (the
// browser on another machine, a firewalled port) is finished by the
// address the browser ended on, pasted in the panel (admin.LoginCompleter).
type browserLogins struct {
	mu sync.Mutex
	by map[string]*browserLogin
}

// browserLogin is one login in progress. finish adds its credential once,
// whichever of the callback and the paste comes first.
type browserLogin struct {
	l      *oauth.Login
	cancel context.CancelFunc // ends the wait for the callback
	once   sync.Once
	finish func(context.Context, oauth.Tokens)
}

func (b *browserLogins) put(provider string, bl *browserLogin) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.by == nil {
		b.by = map[string]*browserLogin{}
	}
	b.by[provider] = bl
}

// drop forgets bl when it is still provider's newest login.
func (b *browserLogins) drop(provider string, bl *browserLogin) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.by[provider] == bl {
		delete(b.by, provider)
	}
}

func (b *browserLogins) complete(ctx context.Context, provider, pasted string) error {
	b.mu.Lock()
	bl := b.by[provider]
	b.mu.Unlock()
	if bl == nil {
		return fmt.Errorf("%w: no %s login is in progress; start it again from Add", api.ErrNotFound, provider)
	}
	tok, err := bl.l.Complete(ctx, pasted)
	if err != nil {
		return fmt.Errorf("%w: %v", api.ErrBadRequest, err)
	}
	bl.once.Do(func() { bl.finish(ctx, tok) })
	bl.cancel()
	return nil
}

// CompleteLogin implements admin.LoginCompleter.
func (c *core) CompleteLogin(ctx context.Context, provider, pasted string) error {
	return c.logins.complete(ctx, provider, pasted)
}

var _ admin.LoginCompleter = (*Daemon)(nil)
