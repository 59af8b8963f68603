// Package admintest provides a fake admin.Backend for tests of the admin
// API, its client, and the programs built on them (CLI verbs, the tray).
package admintest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/subpool/subpool/proxy/admin"
	"github.com/subpool/subpool/proxy/api"
)

var _ admin.Backend = (*Backend)(nil)

// Backend is an in-memory admin.Backend. It records each call as one
// string ("Pause a1", "AddCredential anthropic work api_key") and answers
// from its fields. Methods on credentials answer api.ErrNotFound for ids
// not in Status. The zero value is ready to use.
type Backend struct {
	mu sync.Mutex
	// St is what Status returns; credential methods look ids up in it.
	St api.Status
	// Err, keyed by method name ("AddCredential", "Pause", …), is
	// returned instead of doing the call.
	Err map[string]error
	// Login is what StartLogin returns.
	Login api.LoginStart

	calls []string
	added []api.AddCredential
	next  int
}

// SetStatus replaces the status under the lock.
func (b *Backend) SetStatus(st api.Status) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.St = st
}

// Calls returns the calls made so far.
func (b *Backend) Calls() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.calls)
}

// Added returns the AddCredential requests received, secrets included, so
// a test can check the secret arrived intact.
func (b *Backend) Added() []api.AddCredential {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.added)
}

func (b *Backend) record(method, args string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, method+" "+args)
	return b.Err[method]
}

func (b *Backend) Status(ctx context.Context) (api.Status, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.St, nil
}

func (b *Backend) AddCredential(ctx context.Context, req api.AddCredential) (string, error) {
	if err := b.record("AddCredential", req.Provider+" "+req.Label+" "+req.Kind); err != nil {
		return "", err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.added = append(b.added, req)
	b.next++
	return fmt.Sprintf("%s-%d", req.Provider, b.next), nil
}

func (b *Backend) RemoveCredential(ctx context.Context, id string) error {
	return b.onCredential("RemoveCredential", id)
}

func (b *Backend) Pause(ctx context.Context, id string) error { return b.onCredential("Pause", id) }

func (b *Backend) Resume(ctx context.Context, id string) error { return b.onCredential("Resume", id) }

func (b *Backend) Reset(ctx context.Context, id string) error { return b.onCredential("Reset", id) }

func (b *Backend) StartLogin(ctx context.Context, provider, label string) (api.LoginStart, error) {
	if err := b.record("StartLogin", provider+" "+label); err != nil {
		return api.LoginStart{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Login, nil
}

func (b *Backend) onCredential(method, id string) error {
	if err := b.record(method, id); err != nil {
		return err
	}
	return b.known(id)
}

// known returns nil for a credential St lists and, like the real backend,
// api.ErrNotFound for any other.
func (b *Backend) known(id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.St.Providers {
		for _, c := range p.Credentials {
			if c.ID == id {
				return nil
			}
		}
	}
	return fmt.Errorf("%w %q: run subpool list to see the ids", api.ErrNotFound, id)
}

// SetOtherTools records "SetOtherTools ID true|false" and answers like
// the other credential methods.
func (b *Backend) SetOtherTools(ctx context.Context, id string, on bool) error {
	if err := b.record("SetOtherTools", fmt.Sprint(id, " ", on)); err != nil {
		return err
	}
	return b.known(id)
}

// This fake keeps no reserve, no client keys and no config file: those
// calls answer api.ErrUnsupported (501), as a proxy without them would.
// A test that needs them embeds Backend and adds its own.

func (b *Backend) Reserve(ctx context.Context, id string, percent int) error {
	return fmt.Errorf("%w: this proxy keeps no reserve", api.ErrUnsupported)
}

func (b *Backend) Clients(ctx context.Context) ([]api.ClientStatus, error) {
	return nil, errNoClients
}

func (b *Backend) AddClient(ctx context.Context, req api.AddClient) (api.ClientAdded, error) {
	return api.ClientAdded{}, errNoClients
}

func (b *Backend) RevokeClient(ctx context.Context, name string) error { return errNoClients }

func (b *Backend) Reload(ctx context.Context) (api.ReloadResult, error) {
	return api.ReloadResult{}, fmt.Errorf("%w: this proxy has no config file to reload", api.ErrUnsupported)
}

var errNoClients = fmt.Errorf("%w: this proxy has no client keys to manage", api.ErrUnsupported)
