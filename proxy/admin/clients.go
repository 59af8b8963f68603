package admin

import (
	"net/http"

	"github.com/subpool/subpool/proxy/api"
)

func (h *Handler) serveClients(w http.ResponseWriter, r *http.Request) {
	list, err := h.backend.Clients(r.Context())
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
	var req api.AddClient
	if !decodeBody(w, r, &req, `{"name":…,"providers":[…],"models":[…]}`) {
		return
	}
	added, err := h.backend.AddClient(r.Context(), req)
	if err != nil {
		h.writeBackendError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, added)
}

func (h *Handler) serveRevokeClient(w http.ResponseWriter, r *http.Request) {
	h.writeDone(w, r, h.backend.RevokeClient(r.Context(), r.PathValue("name")))
}

func (h *Handler) serveReload(w http.ResponseWriter, r *http.Request) {
	res, err := h.backend.Reload(r.Context())
	if err != nil {
		h.writeBackendError(w, r, err)
		return
	}
	code := http.StatusOK
	if res.Error != "" {
		// Refused: the running config stays. The body still says why.
		code = http.StatusUnprocessableEntity
	}
	writeJSON(w, code, res)
}
