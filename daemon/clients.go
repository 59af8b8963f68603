package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/keychain"
	"github.com/subpool/subpool/proxy"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// Client keys, one per tool. Which clients exist and what each may use is
// clients.json in the home (no secret); each key is in the keychain. The
// single key of earlier versions ("client-key" in the keychain) is the
// client "default", read where it always was, so a home made by an
// earlier version keeps working as it is.

const (
	clientsFile    = "clients.json"
	defaultClient  = "default"
	clientKeyLabel = "client:" // keychain name of a client's key, before its name
)

type clientRecord struct {
	Name      string    `json:"name"`
	Providers []string  `json:"providers,omitempty"`
	Models    []string  `json:"models,omitempty"`
	Added     time.Time `json:"added"`
}

// ClientKeyName is the keychain name of the key of the client called name.
func ClientKeyName(name string) string { return clientRecord{Name: name}.keyName() }

func (r clientRecord) keyName() string {
	if r.Name == defaultClient {
		return clientKeyName
	}
	return clientKeyLabel + r.Name
}

// clientStore is the client keys of one home (or, for the demo, of
// memory only). Lookups are by a hash of the key, so the table of keys in
// memory never holds one in the clear beyond loading.
type clientStore struct {
	home      string // "" keeps nothing on disk (the demo)
	keys      func() (keychain.Store, error)
	clk       clock.Clock
	events    api.Emitter
	providers func() []string // configured providers, for checking limits
	logf      func(string, ...any)

	mu    sync.Mutex
	recs  []clientRecord
	byKey map[[32]byte]string // sha256(key) → name
	// open lets unknown keys (and none) through: require_client_key = false.
	open bool
	// inFlight reports requests in flight by client name (the proxy's).
	inFlight func() map[string]int
}

// errNoClient is api.ErrNotFound with its own words.
type errNoClient string

func (e errNoClient) Error() string {
	return fmt.Sprintf("no client key named %q; `subpool client list` shows them", string(e))
}
func (e errNoClient) Unwrap() error { return api.ErrNotFound }

// loadClients reads the home's clients and their keys. A home without
// clients.json (new, or made by an earlier version) gets the client
// "default", whose key is the one earlier versions made, or a new one.
func loadClients(s *clientStore) error {
	recs, found, err := s.read()
	if err != nil {
		return err
	}
	if !found {
		recs = []clientRecord{{Name: defaultClient, Added: s.clk.Now().UTC()}}
	}
	keys, err := s.keys()
	if err != nil {
		return err
	}
	if !found {
		if _, err := EnsureClientKey(keys); err != nil {
			return err
		}
		if err := s.write(recs); err != nil {
			return err
		}
	}
	byKey := map[[32]byte]string{}
	for _, r := range recs {
		k, err := keys.Get(r.keyName())
		if err != nil {
			// The keychain lost it (or was reset): the tool gets 401 and
			// `subpool env` or `client add` makes a new one.
			s.logf("warning: the key of client %q is missing from the %s keychain (%v); revoke it and add it again", r.Name, keys.Name(), err)
			continue
		}
		byKey[sha256.Sum256([]byte(k))] = r.Name
	}
	s.mu.Lock()
	s.recs, s.byKey = recs, byKey
	s.mu.Unlock()
	return nil
}

func (s *clientStore) read() ([]clientRecord, bool, error) {
	if s.home == "" {
		s.mu.Lock()
		defer s.mu.Unlock()
		return slices.Clone(s.recs), s.recs != nil, nil
	}
	p := filepath.Join(s.home, clientsFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("cannot read %s: %v", p, err)
	}
	var recs []clientRecord
	if err := json.Unmarshal(b, &recs); err != nil {
		return nil, false, fmt.Errorf("%s is damaged (%v); fix it or move it aside (the default key then comes back)", p, err)
	}
	return recs, true, nil
}

func (s *clientStore) write(recs []clientRecord) error {
	if s.home == "" {
		return nil
	}
	if recs == nil {
		recs = []clientRecord{}
	}
	b, _ := json.MarshalIndent(recs, "", "  ")
	return writeFileAtomic(filepath.Join(s.home, clientsFile), append(b, '\n'), 0o600)
}

// lookup is proxy.Options.Clients.
func (s *clientStore) lookup(key string) (proxy.Client, bool) {
	// Hashed before the lock: every request asks, and 256 streams
	// starting at once queued on it (issue 27's mutex profile).
	var sum [sha256.Size]byte
	if key != "" {
		sum = sha256.Sum256([]byte(key))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if key != "" {
		if name, ok := s.byKey[sum]; ok {
			for _, r := range s.recs {
				if r.Name == name {
					return proxy.Client{Name: r.Name, Providers: r.Providers, Models: r.Models}, true
				}
			}
		}
	}
	return proxy.Client{}, s.open
}

func (s *clientStore) setOpen(open bool) {
	s.mu.Lock()
	s.open = open
	s.mu.Unlock()
}

// Clients lists the client keys (admin.Backend, through the Daemon).
func (s *clientStore) Clients(ctx context.Context) ([]api.ClientStatus, error) {
	var n map[string]int
	if s.inFlight != nil {
		n = s.inFlight()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]api.ClientStatus, 0, len(s.recs))
	for _, r := range s.recs {
		st := api.ClientStatus{Name: r.Name, Providers: r.Providers, Models: r.Models, InFlight: n[r.Name]}
		if !r.Added.IsZero() {
			t := r.Added
			st.Added = &t
		}
		out = append(out, st)
	}
	return out, nil
}

// AddClient implements admin.Backend: the key goes to the keychain
// first, so a client is never listed without one.
func (s *clientStore) AddClient(ctx context.Context, req api.AddClient) (api.ClientAdded, error) {
	rec, err := s.validate(req)
	if err != nil {
		return api.ClientAdded{}, err
	}
	keys, err := s.keys()
	if err != nil {
		return api.ClientAdded{}, err
	}
	key := "sp-" + randomToken(24)
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.ContainsFunc(s.recs, func(r clientRecord) bool { return r.Name == rec.Name }) {
		return api.ClientAdded{}, fmt.Errorf("%w: a client key named %q exists; `subpool client revoke %s` first, or choose another name", api.ErrBadRequest, rec.Name, rec.Name)
	}
	if err := keys.Set(rec.keyName(), key); err != nil {
		return api.ClientAdded{}, fmt.Errorf("cannot store the client key in the %s keychain: %w", keys.Name(), err)
	}
	recs := append(slices.Clone(s.recs), rec)
	if err := s.write(recs); err != nil {
		keys.Delete(rec.keyName())
		return api.ClientAdded{}, err
	}
	s.recs = recs
	s.byKey[sha256.Sum256([]byte(key))] = rec.Name
	s.events.Emit(api.Event{Type: api.EventClientAdded, Client: rec.Name})
	return api.ClientAdded{Name: rec.Name, Key: key}, nil
}

func (s *clientStore) validate(req api.AddClient) (clientRecord, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", api.ErrBadRequest, fmt.Sprintf(format, a...))
	}
	name := strings.TrimSpace(req.Name)
	if !config.ValidName(name) {
		return clientRecord{}, bad("a client name is one word of lower-case letters, digits, '-' and '_' (e.g. claude-code), at most 40 characters")
	}
	known := s.providers()
	for _, p := range req.Providers {
		if !slices.Contains(known, p) {
			return clientRecord{}, bad("unknown provider %q (known: %s)", p, strings.Join(known, ", "))
		}
	}
	for _, m := range req.Models {
		if strings.TrimSpace(m) == "" || strings.ContainsAny(m, " \t\r\n") {
			return clientRecord{}, bad("model patterns are names with '*' for any characters, e.g. claude-*")
		}
	}
	return clientRecord{Name: name, Providers: req.Providers, Models: req.Models, Added: s.clk.Now().UTC()}, nil
}

// RevokeClient implements admin.Backend. The key is refused from
// the next request on: the proxy asks lookup every time.
func (s *clientStore) RevokeClient(ctx context.Context, name string) error {
	keys, err := s.keys()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.recs, func(r clientRecord) bool { return r.Name == name })
	if i < 0 {
		return errNoClient(name)
	}
	rec := s.recs[i]
	recs := slices.Delete(slices.Clone(s.recs), i, i+1)
	if err := s.write(recs); err != nil {
		return err
	}
	s.recs = recs
	for h, n := range s.byKey {
		if n == name {
			delete(s.byKey, h)
		}
	}
	if err := keys.Delete(rec.keyName()); err != nil && !isNotFound(err) {
		s.logf("warning: client %q revoked, but its key could not be deleted from the keychain: %v", name, err)
	}
	s.events.Emit(api.Event{Type: api.EventClientRevoked, Client: name})
	return nil
}

// key returns the key of the client named name, from the keychain;
// errNoClient when there is none.
func (s *clientStore) key(name string) (string, error) {
	s.mu.Lock()
	i := slices.IndexFunc(s.recs, func(r clientRecord) bool { return r.Name == name })
	var rec clientRecord
	if i >= 0 {
		rec = s.recs[i]
	}
	s.mu.Unlock()
	if i < 0 {
		return "", errNoClient(name)
	}
	keys, err := s.keys()
	if err != nil {
		return "", err
	}
	k, err := keys.Get(rec.keyName())
	if err != nil {
		return "", fmt.Errorf("cannot read the key of client %q from the %s keychain: %w", name, keys.Name(), err)
	}
	return k, nil
}
