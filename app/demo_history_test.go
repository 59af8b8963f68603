package app

import (
	"context"
	"github.com/subpool/subpool/internal/freeport"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/admin/client"
	"github.com/subpool/subpool/proxy/api"
)

// The demo keeps a history of its own: a made-up past month to show at
// once, then every request it serves, in a temp folder that goes when the
// demo stops.
func TestDemoKeepsHistory(t *testing.T) {
	d, err := startDemo(freeport.Addr(t), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	dir := d.home.dir
	if !strings.HasPrefix(dir, os.TempDir()) {
		d.Close()
		t.Fatalf("the demo's history is in %s, not a temp folder", dir)
	}
	c := &client.Client{Addr: d.srv.Addr(), Token: d.srv.AdminToken()}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // hang guard
	defer cancel()

	month, err := c.Usage(ctx, "30d", api.ByDay+","+api.ByCredential)
	if err != nil {
		t.Fatal(err)
	}
	days := map[string]bool{}
	creds := map[string]bool{}
	for _, r := range month.Rows {
		days[r.Key], creds[r.Label] = true, true
	}
	if len(days) < 25 || len(creds) != len(demoCreds) || month.Total.Requests < 500 {
		t.Errorf("the past month: %d days, credentials %v, %d requests", len(days), creds, month.Total.Requests)
	}

	// One request through the proxy lands in the history as it finishes.
	before, err := c.History(ctx, api.HistoryQuery{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := d.srv.Hub().Subscribe(d.srv.Hub().LastID(), 64)
	defer sub.Close()
	tctx, stop := context.WithCancel(ctx)
	go d.traffic(tctx, time.Hour) // the first request goes at once
	for ev := range sub.C() {
		if ev.Type == api.EventRequestFinished {
			break
		}
	}
	stop()
	if err := d.srv.History().Sync(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := c.History(ctx, api.HistoryQuery{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Entries) != 1 || len(before.Entries) != 1 || after.Entries[0].ID <= before.Entries[0].ID {
		t.Errorf("no new row: before %+v after %+v", before.Entries, after.Entries)
	}

	d.Close()
	if _, err := os.Stat(filepath.Join(dir, "history.db")); !os.IsNotExist(err) {
		t.Errorf("the demo's history outlived it: %v", err)
	}
}
