package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/subpool/subpool/proxy/admin"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/pool"
)

// The admin API's Backend, in one place. The Daemon is the Backend
// itself, served or opened in place: the client keys, status and reload
// are its own, and the credentials are its core's (core.go), whose
// methods it promotes.
var _ admin.Backend = (*Daemon)(nil)

// Status implements admin.Backend: the core's, with the client keys (their
// requests in flight) and the rows the history had to drop.
func (d *Daemon) Status(ctx context.Context) (api.Status, error) {
	st := d.core.Status(ctx)
	if d.clientsLoad == nil { // loaded: a started daemon, or a client verb's
		st.Clients, _ = d.clients.Clients(ctx)
	}
	if d.history != nil {
		st.History = &api.HistoryStatus{Dropped: d.history.Dropped(), Failed: d.history.Failed(), Held: d.history.Held(), Problem: d.history.Problem()}
	}
	if d.mode.reloads() {
		st.ConfigProblem = d.reloader.Problem()
	}
	return st, nil
}

// clientStore returns the client keys, loading them on first use.
func (d *Daemon) clientStore() (*clientStore, error) {
	d.clientsMu.Lock()
	defer d.clientsMu.Unlock()
	if d.clientsLoad != nil {
		if err := d.clientsLoad(); err != nil {
			return nil, err
		}
		d.clientsLoad = nil
	}
	return d.clients, nil
}

// Clients implements admin.Backend.
func (d *Daemon) Clients(ctx context.Context) ([]api.ClientStatus, error) {
	cs, err := d.clientStore()
	if err != nil {
		return nil, err
	}
	return cs.Clients(ctx)
}

// AddClient implements admin.Backend.
func (d *Daemon) AddClient(ctx context.Context, req api.AddClient) (api.ClientAdded, error) {
	cs, err := d.clientStore()
	if err != nil {
		return api.ClientAdded{}, err
	}
	return cs.AddClient(ctx, req)
}

// RevokeClient implements admin.Backend.
func (d *Daemon) RevokeClient(ctx context.Context, name string) error {
	cs, err := d.clientStore()
	if err != nil {
		return err
	}
	return cs.RevokeClient(ctx, name)
}

// Reload implements admin.Backend. The demo has no file to read, and a
// home opened in place reads it when its proxy starts.
func (d *Daemon) Reload(ctx context.Context) (api.ReloadResult, error) {
	switch d.mode {
	case inPlace:
		return api.ReloadResult{}, fmt.Errorf("%w: no proxy is running; config.toml is read when one starts", api.ErrUnsupported)
	case demo:
		return api.ReloadResult{Error: "the demo has no config file to reload"}, nil
	}
	return d.reloader.reload("admin API"), nil
}

// Status implements admin.Backend.
func (c *core) Status(ctx context.Context) api.Status {
	b := Build()
	st := api.Status{Version: b.Version, Commit: b.Commit, Built: b.Date, Listen: c.listen, StartedAt: c.start.UTC(), Now: c.clk.Now().UTC()}
	for _, name := range c.cfg.ProviderNames() {
		p := c.cfg.Providers[name]
		creds := c.pool.Status(name)
		if creds == nil {
			creds = []api.CredentialStatus{}
		}
		st.Providers = append(st.Providers, api.ProviderStatus{
			Name: name, Wire: p.Wire, LimitScope: p.LimitScope,
			Cooldown: c.pool.ProviderCooldown(name), Credentials: creds,
		})
	}
	return st
}

// AddCredential implements admin.Backend: the secret goes to the keychain
// first, so a credential is never listed without one.
func (c *core) AddCredential(ctx context.Context, req api.AddCredential) (string, error) {
	rec, secret, err := c.validateAdd(req)
	if err != nil {
		return "", err
	}
	keys, err := c.keys()
	if err != nil {
		return "", err
	}
	if id := c.awaitingRelogin(rec); id != "" {
		// "Log in again" on a parked login: same row, fresh tokens.
		if err := keys.Set(SecretKey(id), secret); err != nil {
			return "", fmt.Errorf("cannot store the secret in the %s keychain: %w", keys.Name(), err)
		}
		if c.onRemove != nil {
			c.onRemove(id) // drop cached tokens of the dead login
		}
		if rec.Proxy != "" {
			if err := c.setProxy(id, rec.Proxy); err != nil {
				return "", err
			}
		}
		c.pool.Unpark(id)
		return id, c.saveState()
	}
	c.addMu.Lock() // one check-then-add at a time
	defer c.addMu.Unlock()
	if err := c.duplicateOf(rec, secret, keys); err != nil {
		return "", err
	}
	if err := keys.Set(SecretKey(rec.ID), secret); err != nil {
		return "", fmt.Errorf("cannot store the secret in the %s keychain: %w", keys.Name(), err)
	}
	c.mu.Lock()
	c.creds = append(c.creds, rec)
	recs := slices.Clone(c.creds)
	c.mu.Unlock()
	if err := c.store.saveCreds(recs); err != nil {
		c.mu.Lock()
		c.creds = slices.DeleteFunc(c.creds, func(r CredentialRecord) bool { return r.ID == rec.ID })
		c.mu.Unlock()
		keys.Delete(SecretKey(rec.ID))
		return "", err
	}
	c.proxies.set(rec.ID, rec.Proxy)
	c.pool.Add(c.poolCred(rec))
	return rec.ID, nil
}

// RemoveCredential implements admin.Backend.
func (c *core) RemoveCredential(ctx context.Context, id string) error {
	if _, ok := c.record(id); !ok {
		return api.ErrNotFound
	}
	c.mu.Lock()
	c.creds = slices.DeleteFunc(c.creds, func(r CredentialRecord) bool { return r.ID == id })
	recs := slices.Clone(c.creds)
	c.mu.Unlock()
	if err := c.store.saveCreds(recs); err != nil {
		return err
	}
	c.pool.Remove(id)
	c.proxies.set(id, "")
	if c.onRemove != nil {
		c.onRemove(id)
	}
	if keys, err := c.keys(); err == nil {
		if err := keys.Delete(SecretKey(id)); err != nil && !isNotFound(err) {
			c.logf("warning: credential %s removed, but its secret could not be deleted from the keychain: %v", id, err)
		}
	}
	return c.saveState()
}

// Pause, Resume and Reset implement admin.Backend.
func (c *core) Pause(ctx context.Context, id string) error  { return c.poolOp(id, c.pool.Pause) }
func (c *core) Resume(ctx context.Context, id string) error { return c.resume(id) }
func (c *core) Reset(ctx context.Context, id string) error  { return c.poolOp(id, c.pool.Reset) }

// StartLogin implements admin.Backend.
func (c *core) StartLogin(ctx context.Context, provider, label string) (api.LoginStart, error) {
	return startBrowserLogin(c.cfg, provider, label, c.AddCredential, c.logf, c.loginClient, &c.logins)
}

// Reserve implements admin.Backend.
func (c *core) Reserve(ctx context.Context, id string, percent int) error {
	if err := c.pool.SetReserve(id, percent); err != nil {
		if errors.Is(err, pool.ErrUnknown) {
			return api.ErrNotFound
		}
		return fmt.Errorf("%w: %v", api.ErrBadRequest, err)
	}
	return c.saveState()
}

// SetOtherTools implements admin.Backend: on opens a subscription login
// to every tool, off keeps it for its own tool again. The choice is
// written to credentials.json before the pool acts on it, so it survives
// a restart or is not made at all.
func (c *core) SetOtherTools(ctx context.Context, id string, on bool) error {
	rec, ok := c.record(id)
	if !ok {
		return api.ErrNotFound
	}
	if own := api.SubscriptionTool(rec.Provider, rec.Kind); own == "" {
		return fmt.Errorf("%w: %s is %s, which serves every tool already", api.ErrBadRequest, id, KindWords(api.CredentialStatus{Provider: rec.Provider, Kind: rec.Kind}))
	}
	rec, changed, err := c.editRecord(id, func(r *CredentialRecord) { r.OtherTools = on })
	if changed {
		c.readd(rec)
	}
	return err
}
