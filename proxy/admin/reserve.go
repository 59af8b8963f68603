package admin

import (
	"context"
	"fmt"
	"net/http"
)

// Reserver is the optional part of Backend behind
// POST credentials/{id}/reserve: a backend without it answers 501.
type Reserver interface {
	// Reserve sets a subscription's reserve in percent (0..99); a
	// negative percent returns it to [usage] reserve.
	Reserve(ctx context.Context, id string, percent int) error
}

// ReserveRequest is the body of POST /subpool/v1/credentials/{id}/reserve.
// Percent nil (or negative) returns the credential to [usage] reserve.
type ReserveRequest struct {
	Percent *int `json:"percent"`
}

func (h *Handler) serveReserve(w http.ResponseWriter, r *http.Request) {
	rb, ok := h.backend.(Reserver)
	if !ok {
		writeError(w, http.StatusNotImplemented, "this proxy keeps no reserve")
		return
	}
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
	h.writeDone(w, r, rb.Reserve(r.Context(), r.PathValue("id"), p))
}
