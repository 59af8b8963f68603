package admin

import (
	"context"
	"fmt"
	"net/http"

	"github.com/subpool/subpool/proxy/api"
)

// ClientBackend is what the client-key routes drive: one key per tool,
// listed by name, revoked by name. A Backend without it answers those
// routes 501. Errors follow Backend's rules.
type ClientBackend interface {
	Clients(ctx context.Context) ([]api.ClientStatus, error)
	// AddClient makes a key and returns it: the only answer that ever
	// carries one.
	AddClient(ctx context.Context, req api.AddClient) (api.ClientAdded, error)
	RevokeClient(ctx context.Context, name string) error
}

// Reloader reads config.toml again and applies what can change live
// (POST /subpool/v1/reload). A Backend without it answers 501.
type Reloader interface {
	Reload(ctx context.Context) api.ReloadResult
}

func (h *Handler) clientBackend(w http.ResponseWriter, r *http.Request) ClientBackend {
	cb, ok := h.backend.(ClientBackend)
	if !ok {
		h.writeBackendError(w, r, fmt.Errorf("%w: this proxy has no client keys to manage", api.ErrUnsupported))
	}
	return cb
}

func (h *Handler) serveClients(w http.ResponseWriter, r *http.Request) {
	cb := h.clientBackend(w, r)
	if cb == nil {
		return
	}
	list, err := cb.Clients(r.Context())
	if err != nil {
		h.writeBackendError(w, r, err)
		return
	}
	if list == nil {
		list = []api.ClientStatus{}
	}
	writeJSON(w, http.StatusOK, list)
}

func (h *Handler) serveAddClient(w http.ResponseWriter, r *http.Request) {
	cb := h.clientBackend(w, r)
	if cb == nil {
		return
	}
	var req api.AddClient
	if !decodeBody(w, r, &req, `{"name":…,"providers":[…],"models":[…]}`) {
		return
	}
	added, err := cb.AddClient(r.Context(), req)
	if err != nil {
		h.writeBackendError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, added)
}

func (h *Handler) serveRevokeClient(w http.ResponseWriter, r *http.Request) {
	cb := h.clientBackend(w, r)
	if cb == nil {
		return
	}
	h.writeDone(w, r, cb.RevokeClient(r.Context(), r.PathValue("name")))
}

func (h *Handler) serveReload(w http.ResponseWriter, r *http.Request) {
	rl, ok := h.backend.(Reloader)
	if !ok {
		h.writeBackendError(w, r, fmt.Errorf("%w: this proxy has no config file to reload", api.ErrUnsupported))
		return
	}
	res := rl.Reload(r.Context())
	code := http.StatusOK
	if res.Error != "" {
		// Refused: the running config stays. The body still says why.
		code = http.StatusUnprocessableEntity
	}
	writeJSON(w, code, res)
}
