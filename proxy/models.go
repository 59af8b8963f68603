package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/auth"
	"github.com/subpool/subpool/proxy/pool"
)

// GET /v1/models is answered by subpool: a client asking which models it
// may use wants the pool's answer (every provider behind the key, and the
// aliases), not one upstream's. Each provider's list is asked of its
// upstream with one of its credentials when a client first wants it and
// kept for modelsFresh; a failed ask is tried again after modelsRetry.

const (
	modelsFresh = time.Hour
	modelsRetry = 5 * time.Minute
	// modelsTimeout bounds one ask of an upstream; the client waiting for
	// the list should not wait longer.
	modelsTimeout = 15 * time.Second
)

// modelLists caches each provider's model ids. The zero value is ready.
type modelLists struct {
	mu sync.Mutex
	m  map[string]*modelList
}

type modelList struct {
	ids   []upstreamModel
	until time.Time     // fresh until
	busy  chan struct{} // an ask under way: closed when it ends
}

// upstreamModel is one model as its upstream lists it. Its name and date
// are passed on as they came: a client shows display_name, and sorts or
// picks by date.
type upstreamModel struct {
	ID          string
	DisplayName string    // Anthropic's display_name; "" when not given
	Created     time.Time // Anthropic's created_at or OpenAI's created; zero when not given
	OwnedBy     string    // OpenAI's owned_by; "" when not given
}

// get returns provider's models, asking its upstream when the list is
// missing or stale. Concurrent callers share one ask.
func (p *Proxy) providerModels(ctx context.Context, prov *Provider) []upstreamModel {
	ml := &p.models
	for {
		ml.mu.Lock()
		if ml.m == nil {
			ml.m = map[string]*modelList{}
		}
		e := ml.m[prov.Name]
		if e == nil {
			e = &modelList{}
			ml.m[prov.Name] = e
		}
		now := p.o.Clock.Now()
		if e.busy == nil && (now.Before(e.until)) {
			ids := e.ids
			ml.mu.Unlock()
			return ids
		}
		if busy := e.busy; busy != nil {
			ml.mu.Unlock()
			select {
			case <-busy:
				continue
			case <-ctx.Done():
				return nil
			}
		}
		busy := make(chan struct{})
		e.busy = busy
		ml.mu.Unlock()

		ids, err := p.askModels(prov)
		ml.mu.Lock()
		now = p.o.Clock.Now()
		switch {
		case err == nil:
			e.ids, e.until = ids, now.Add(modelsFresh)
		case errors.Is(err, errNoCredential):
			// Nothing asked: a credential added later is asked at once.
		default:
			p.o.Logf("model list of %s: %v", prov.Name, err)
			e.until = now.Add(modelsRetry)
		}
		e.busy = nil
		close(busy)
		ids = e.ids
		ml.mu.Unlock()
		return ids
	}
}

var errNoCredential = errors.New("no ready credential")

// codexWireVersion is the Codex CLI release whose Responses requests
// subpool's translations follow (internal/realclients pins it).
const codexWireVersion = "0.171.0"

// askModels asks prov's upstream for its model list with one of its
// credentials, and in a pool that mixes API keys and logins with one of
// each kind: an OpenAI key and a ChatGPT login list different models (the
// API's, the Codex backend's), and the pool serves both. A lease is held
// for its ask only; it counts neither as a success nor as a failure of
// the credential.
func (p *Proxy) askModels(prov *Provider) ([]upstreamModel, error) {
	leases := p.modelLeases(prov)
	if len(leases) == 0 {
		return nil, errNoCredential
	}
	var out []upstreamModel
	var first error
	for _, l := range leases {
		ids, err := p.askModelsWith(prov, l)
		l.Release()
		out = append(out, ids...)
		if err != nil && first == nil {
			first = err
		}
	}
	if out == nil && first != nil {
		return nil, first
	}
	return out, nil
}

// modelLeases is one lease per kind of credential prov has ready, the
// pool's pick first.
func (p *Proxy) modelLeases(prov *Provider) []*pool.Lease {
	lease, err := p.o.Pool.Pick(pool.PickRequest{Provider: prov.Name})
	if err != nil {
		return nil
	}
	leases := []*pool.Lease{lease}
	for _, c := range p.o.Pool.Status(prov.Name) {
		if c.Kind != lease.Credential.Kind && c.State == api.StateReady {
			if l, err := p.o.Pool.Acquire(c.ID, ""); err == nil {
				return append(leases, l)
			}
		}
	}
	return leases
}

// askModelsWith asks prov's upstream with lease's credential.
func (p *Proxy) askModelsWith(prov *Provider, lease *pool.Lease) ([]upstreamModel, error) {
	ctx, cancel := context.WithTimeout(context.Background(), modelsTimeout)
	defer cancel()
	au, err := p.o.Auth.Auth(ctx, lease.Credential, false)
	if err != nil {
		return nil, err
	}
	base, path := prov.BaseURL, "/v1/models"
	if au.BaseURL != "" {
		base = au.BaseURL
	}
	if au.StripV1 {
		// The Codex backend lists the models a client of a version can
		// run (codex-rs ModelsClient adds client_version); subpool speaks
		// the Responses wire of the Codex release its real-client suite
		// pins, and names no client (no originator, no user-agent).
		path = "/models?client_version=" + codexWireVersion
	}
	req, err := http.NewRequestWithContext(auth.WithProxy(ctx, au.Proxy), http.MethodGet, strings.TrimRight(base, "/")+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header = outboundHeader(http.Header{}, au.Header)
	if prov.wire() == WireAnthropic && req.Header.Get("anthropic-version") == "" {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	resp, err := p.o.Transport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s answered %d", lease.Credential.ID, resp.StatusCode)
	}
	// Both APIs list {"data":[{"id":…}]}; the ChatGPT backend lists
	// {"models":[{"slug":…}]}.
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			DisplayName string `json:"display_name"`
			CreatedAt   string `json:"created_at"`
			Created     int64  `json:"created"`
			OwnedBy     string `json:"owned_by"`
		} `json:"data"`
		Models []struct {
			Slug        string `json:"slug"`
			DisplayName string `json:"display_name"`
		} `json:"models"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&list); err != nil {
		return nil, fmt.Errorf("unreadable list: %v", err)
	}
	var out []upstreamModel
	for _, d := range list.Data {
		m := upstreamModel{ID: d.ID, DisplayName: d.DisplayName, OwnedBy: d.OwnedBy}
		if t, err := time.Parse(time.RFC3339, d.CreatedAt); err == nil {
			m.Created = t.UTC()
		} else if d.Created > 0 {
			m.Created = time.Unix(d.Created, 0).UTC()
		}
		out = append(out, m)
	}
	for _, m := range list.Models {
		out = append(out, upstreamModel{ID: m.Slug, DisplayName: m.DisplayName})
	}
	return out, nil
}

// listedModel is one row of the answer, before its wire's shape: an
// upstream's model as it came, or an alias (owner "subpool") carrying its
// first target's name and date where known.
type listedModel struct {
	upstreamModel
	owner string
}

// serveModels answers GET /v1/models in the shape of the client's wire:
// the models of every provider the key may use (or, under /NAME/, of that
// provider) and the aliases, filtered by the key's limits.
func (p *Proxy) serveModels(w http.ResponseWriter, r *http.Request, prov *Provider) {
	c := clientOf(r)
	provs := []*Provider{prov}
	wire := prov.wire()
	if strings.HasPrefix(r.URL.Path, "/v1/") {
		provs = provs[:0]
		for _, pr := range p.o.Providers {
			provs = append(provs, pr)
		}
		sort.Slice(provs, func(i, j int) bool { return provs[i].Name < provs[j].Name })
		// Unprefixed, the path says nothing of the wire; the Anthropic
		// SDKs always send their version header.
		wire = WireOpenAI
		if r.Header.Get("anthropic-version") != "" {
			wire = WireAnthropic
		}
	}
	var rows []listedModel
	seen := map[string]bool{}
	add := func(m upstreamModel, owner string) {
		if m.ID != "" && !seen[m.ID] {
			seen[m.ID] = true
			rows = append(rows, listedModel{m, owner})
		}
	}
	if p.o.Aliases != nil {
		aliases := p.o.Aliases()
		names := make([]string, 0, len(aliases))
		for n := range aliases {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if p.aliasVisible(c, n, aliases[n], provs) {
				add(upstreamModel{ID: n}, "subpool")
			}
		}
	}
	for _, pr := range provs {
		if !c.AllowsProvider(pr.Name) {
			continue
		}
		for _, m := range p.providerModels(r.Context(), pr) {
			if c.AllowsModel(m.ID) {
				add(m, pr.Name)
			}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(modelsBody(wire, rows))
}

// aliasVisible: the key may use at least one of the alias's targets, on
// one of the providers listed.
func (p *Proxy) aliasVisible(c Client, name string, targets []FallbackTarget, provs []*Provider) bool {
	for _, t := range targets {
		if t.Provider == "" {
			// The client's own provider: any of those listed.
			for _, pr := range provs {
				if c.AllowsProvider(pr.Name) && (c.AllowsModel(name) || c.AllowsModel(t.Model)) {
					return true
				}
			}
			continue
		}
		if c.AllowsProvider(t.Provider) && (c.AllowsModel(name) || c.AllowsModel(t.Model)) &&
			(len(provs) > 1 || slices.ContainsFunc(provs, func(pr *Provider) bool { return pr.Name == t.Provider })) {
			return true
		}
	}
	return false
}

// modelsBody is the list in the wire's shape: Anthropic's
// {"data":[{"type":"model","id":…}],"has_more":false,…} or OpenAI's
// {"object":"list","data":[{"id":…,"object":"model",…}]}.
func modelsBody(wire Wire, rows []listedModel) []byte {
	if wire == WireAnthropic {
		type am struct {
			Type        string `json:"type"`
			ID          string `json:"id"`
			DisplayName string `json:"display_name"`
			CreatedAt   string `json:"created_at"`
		}
		data := make([]am, 0, len(rows))
		for _, m := range rows {
			// Anthropic's SDKs require both fields: what the upstream did
			// not say (an alias, a model listed in the other wire) gets
			// the id as its name and the epoch as its date.
			name := m.DisplayName
			if name == "" {
				name = m.ID
			}
			created := m.Created
			if created.IsZero() {
				created = time.Unix(0, 0)
			}
			data = append(data, am{Type: "model", ID: m.ID, DisplayName: name, CreatedAt: created.UTC().Format(time.RFC3339)})
		}
		v := struct {
			Data    []am    `json:"data"`
			HasMore bool    `json:"has_more"`
			FirstID *string `json:"first_id"`
			LastID  *string `json:"last_id"`
		}{Data: data}
		if len(rows) > 0 {
			v.FirstID, v.LastID = &rows[0].ID, &rows[len(rows)-1].ID
		}
		b, _ := json.Marshal(v)
		return b
	}
	type om struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	data := make([]om, 0, len(rows))
	for _, m := range rows {
		o := om{ID: m.ID, Object: "model", OwnedBy: m.OwnedBy}
		if o.OwnedBy == "" {
			o.OwnedBy = m.owner
		}
		if !m.Created.IsZero() {
			o.Created = m.Created.Unix()
		}
		data = append(data, o)
	}
	b, _ := json.Marshal(struct {
		Object string `json:"object"`
		Data   []om   `json:"data"`
	}{"list", data})
	return b
}
