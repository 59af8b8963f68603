package admin_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/subpool/subpool/internal/history"
	"github.com/subpool/subpool/proxy/admin"
	"github.com/subpool/subpool/proxy/admin/client"
	"github.com/subpool/subpool/proxy/api"
)

func historyEnv(t *testing.T, h admin.History) (*env, *client.Client) {
	t.Helper()
	e := newEnv(t, 0, func(o *admin.Options) { o.History = h })
	return e, &client.Client{Addr: e.srv.URL, Token: token}
}

func TestUsageAndHistoryRoutes(t *testing.T) {
	db, err := history.Open(filepath.Join(t.TempDir(), history.FileName), history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i, class := range []string{"ok", "rate_limit", "ok"} {
		db.Emit(api.Event{Type: api.EventRequestFinished, Provider: "anthropic", Model: "claude-haiku-4-5",
			CredentialID: "a1", CredentialKind: api.KindAPIKey, Class: class, InputTokens: int64(1000 * (i + 1))})
	}
	if err := db.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, c := historyEnv(t, db)
	ctx := context.Background()

	rep, err := c.Usage(ctx, "7d", api.ByModel)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 1 || rep.Rows[0].Key != "claude-haiku-4-5" || rep.Rows[0].Requests != 3 ||
		rep.Rows[0].InputTokens != 6000 || rep.Rows[0].Refusals["rate_limit"] != 1 {
		t.Fatalf("usage = %+v", rep)
	}

	page, err := c.History(ctx, api.HistoryQuery{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 2 || page.Entries[0].ID != 3 || page.Next != 2 {
		t.Fatalf("page 1 = %+v", page)
	}
	page, err = c.History(ctx, api.HistoryQuery{Before: page.Next, Class: "ok"})
	if err != nil || len(page.Entries) != 1 || page.Entries[0].ID != 1 || page.Next != 0 {
		t.Fatalf("page 2 = %+v, %v", page, err)
	}

	if _, err := c.Usage(ctx, "last tuesday", ""); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("bad since: %v, want 400", err)
	}
	if _, err := c.Usage(ctx, "", "week"); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("bad by: %v, want 400", err)
	}
}

func TestHistoryRoutesWhenOff(t *testing.T) {
	for name, h := range map[string]admin.History{
		"not configured": nil,
		"refused file":   admin.HistoryOff{Reason: "history.db has schema version 9"},
	} {
		e, c := historyEnv(t, h)
		_, err := c.Usage(context.Background(), "", "")
		if !errors.Is(err, api.ErrUnsupported) {
			t.Fatalf("%s: usage = %v, want 501", name, err)
		}
		_, err = c.History(context.Background(), api.HistoryQuery{})
		if !errors.Is(err, api.ErrUnsupported) {
			t.Fatalf("%s: history = %v, want 501", name, err)
		}
		if res := e.request(t, "GET", "history?limit=x", "", nil); res.StatusCode != 400 {
			t.Fatalf("%s: limit=x answered %d", name, res.StatusCode)
		}
	}
	// The token guard covers the new routes like every other.
	e, _ := historyEnv(t, nil)
	if res := e.request(t, "GET", "usage", "", map[string]string{"Authorization": "Bearer wrong"}); res.StatusCode != 401 {
		t.Fatalf("wrong token answered %d", res.StatusCode)
	}
}
