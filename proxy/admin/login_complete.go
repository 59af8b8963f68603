package admin

import (
	"context"
	"fmt"
	"net/http"

	"github.com/subpool/subpool/proxy/api"
)

// LoginCompleter is a Backend that can finish a browser login it started
// from the address the browser ended on: for when the login's callback
// could not reach the proxy (another machine's browser, a port a firewall
// closes), as `subpool login` takes a pasted address in a terminal.
// A Backend without it answers 501.
type LoginCompleter interface {
	// CompleteLogin finishes provider's login in progress with pasted:
	// the whole address, its query, Claude's "code#state" or the bare
	// code. The credential arrives as credential_added, as from the
	// callback. No login in progress is api.ErrNotFound.
	CompleteLogin(ctx context.Context, provider, pasted string) error
}

// CompleteLoginRequest is the body of POST /admin/login/complete. Pasted
// carries a one-time code: it is never logged.
type CompleteLoginRequest struct {
	Provider string `json:"provider"`
	Pasted   string `json:"pasted"`
}

func (h *Handler) serveCompleteLogin(w http.ResponseWriter, r *http.Request) {
	var req CompleteLoginRequest
	if !decodeBody(w, r, &req, `{"provider":"anthropic"|"openai"|"google","pasted":…}`) {
		return
	}
	lc, ok := h.backend.(LoginCompleter)
	if !ok {
		h.writeBackendError(w, r, fmt.Errorf("%w: this proxy cannot finish a login from a pasted address; run `subpool login %s` in a terminal", api.ErrUnsupported, req.Provider))
		return
	}
	h.writeDone(w, r, lc.CompleteLogin(r.Context(), req.Provider, req.Pasted))
}
