package admin

import (
	"context"
	"net/http"
)

// ToolSetter is the optional part of Backend behind
// POST credentials/{id}/tools: a backend without it answers 501.
type ToolSetter interface {
	// SetOtherTools opens a subscription login to every tool (on) or
	// keeps it for the tool it belongs to (off): a Claude login serves
	// Claude Code, a Google login Gemini CLI (api.SubscriptionTool). A
	// credential that serves every tool anyway (an API key, a ChatGPT
	// login) is a bad request.
	SetOtherTools(ctx context.Context, id string, on bool) error
}

// ToolsRequest is the body of POST /subpool/v1/credentials/{id}/tools.
type ToolsRequest struct {
	OtherTools *bool `json:"other_tools"`
}

func (h *Handler) serveTools(w http.ResponseWriter, r *http.Request) {
	tb, ok := h.backend.(ToolSetter)
	if !ok {
		writeError(w, http.StatusNotImplemented, "this proxy cannot change which tools a login serves")
		return
	}
	var req ToolsRequest
	if !decodeBody(w, r, &req, `{"other_tools": true}`) {
		return
	}
	if req.OtherTools == nil {
		writeError(w, http.StatusBadRequest, `say which tools the login serves: {"other_tools": true} for every tool, false for its own only`)
		return
	}
	h.writeDone(w, r, tb.SetOtherTools(r.Context(), r.PathValue("id"), *req.OtherTools))
}
