package admin

import (
	"fmt"
	"net/http"
)

// ReserveRequest is the body of POST /subpool/v1/credentials/{id}/reserve.
// Percent nil (or negative) returns the credential to [usage] reserve.
type ReserveRequest struct {
	Percent *int `json:"percent"`
}

func (h *Handler) serveReserve(w http.ResponseWriter, r *http.Request) {
	var req ReserveRequest
	if !decodeBody(w, r, &req, `{"percent": 15}`) {
		return
	}
	p := -1
	if req.Percent != nil {
		p = *req.Percent
	}
	if p > 99 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("a reserve of %d%% keeps the whole subscription back; use 0 to 99, or pause it", p))
		return
	}
	h.writeDone(w, r, h.backend.Reserve(r.Context(), r.PathValue("id"), p))
}
