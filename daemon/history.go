package daemon

import (
	"path/filepath"
	"strings"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/history"
	"github.com/subpool/subpool/proxy/admin"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// openHistory opens the home's history.db for the server, or returns
// (nil History, nil) when [history] turns it off.
func (d *Daemon) openHistory(home string, cfg config.Config, clk clock.Clock) (admin.History, error) {
	if !cfg.History.Enabled {
		return nil, nil
	}
	prices := make(map[string]history.Price, len(cfg.Prices))
	for m, p := range cfg.Prices {
		prices[m] = history.Price(p)
	}
	db, err := history.Open(filepath.Join(home, history.FileName), history.Options{
		Days: cfg.History.Days, Prices: prices, Clock: clk, Logf: d.logf,
		// A person must act on a full disk or a read-only file: the tray
		// says so, as for any other problem.
		Problem: func(p string) { d.hub.Emit(api.Event{Type: api.EventHistoryProblem, Reason: p}) },
		Lookup: func(id string) (string, string) {
			r, _ := d.core.record(id)
			return r.Label, r.Kind
		},
	})
	if err != nil {
		return nil, err
	}
	d.history = db
	return db, nil
}

func oneLineErr(err error) string {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}
