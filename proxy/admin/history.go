package admin

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/subpool/subpool/proxy/api"
)

// History is the request history the usage and history routes read
// (*history.DB). Errors follow Backend's rules: api.ErrBadRequest is a
// 400, api.ErrUnsupported a 501.
type History interface {
	Usage(ctx context.Context, since, by string) (api.UsageReport, error)
	List(ctx context.Context, q api.HistoryQuery) (api.HistoryPage, error)
}

// HistoryOff is a History that answers every call with why there is none
// (turned off in config, or a database this build cannot open).
type HistoryOff struct{ Reason string }

func (h HistoryOff) err() error {
	reason := h.Reason
	if reason == "" {
		reason = "history is off ([history] enabled = false in config.toml)"
	}
	return fmt.Errorf("%w: %s", api.ErrUnsupported, reason)
}

func (h HistoryOff) Usage(context.Context, string, string) (api.UsageReport, error) {
	return api.UsageReport{}, h.err()
}

func (h HistoryOff) List(context.Context, api.HistoryQuery) (api.HistoryPage, error) {
	return api.HistoryPage{}, h.err()
}

func (h *Handler) historyOrOff() History {
	if h.history == nil {
		return HistoryOff{}
	}
	return h.history
}

func (h *Handler) serveUsage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	rep, err := h.historyOrOff().Usage(r.Context(), q.Get("since"), q.Get("by"))
	if err != nil {
		h.writeBackendError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

func (h *Handler) serveHistory(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var hq api.HistoryQuery
	for _, p := range []struct {
		name string
		dst  *int64
	}{{"limit", nil}, {"before", &hq.Before}} {
		v := q.Get(p.name)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, p.name+" must be a whole number")
			return
		}
		if p.dst != nil {
			*p.dst = n
		} else {
			hq.Limit = int(min(n, 1000))
		}
	}
	hq.Class = q.Get("class")
	page, err := h.historyOrOff().List(r.Context(), hq)
	if err != nil {
		h.writeBackendError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}
