package admin

import (
	"net/http"
)

// ToolsRequest is the body of POST /subpool/v1/credentials/{id}/tools.
type ToolsRequest struct {
	OtherTools *bool `json:"other_tools"`
}

func (h *Handler) serveTools(w http.ResponseWriter, r *http.Request) {
	var req ToolsRequest
	if !decodeBody(w, r, &req, `{"other_tools": true}`) {
		return
	}
	if req.OtherTools == nil {
		writeError(w, http.StatusBadRequest, `say which tools the login serves: {"other_tools": true} for every tool, false for its own only`)
		return
	}
	h.writeDone(w, r, h.backend.SetOtherTools(r.Context(), r.PathValue("id"), *req.OtherTools))
}
