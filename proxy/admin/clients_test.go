package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/subpool/subpool/proxy/admin"
	"github.com/subpool/subpool/proxy/admin/admintest"
	"github.com/subpool/subpool/proxy/admin/client"
	"github.com/subpool/subpool/proxy/api"
)

// clientsBackend is the test backend with client keys and reloads.
type clientsBackend struct {
	*admintest.Backend
	clients []api.ClientStatus
	reload  api.ReloadResult
}

func (b *clientsBackend) Clients(context.Context) ([]api.ClientStatus, error) { return b.clients, nil }

func (b *clientsBackend) AddClient(_ context.Context, req api.AddClient) (api.ClientAdded, error) {
	for _, c := range b.clients {
		if c.Name == req.Name {
			return api.ClientAdded{}, fmt.Errorf("%w: %q exists", api.ErrBadRequest, req.Name)
		}
	}
	b.clients = append(b.clients, api.ClientStatus{Name: req.Name, Providers: req.Providers})
	return api.ClientAdded{Name: req.Name, Key: "sp-new"}, nil
}

func (b *clientsBackend) RevokeClient(_ context.Context, name string) error {
	for i, c := range b.clients {
		if c.Name == name {
			b.clients = append(b.clients[:i], b.clients[i+1:]...)
			return nil
		}
	}
	return api.ErrNotFound
}

func (b *clientsBackend) Reload(context.Context) (api.ReloadResult, error) { return b.reload, nil }

func TestClientRoutesThroughTheClient(t *testing.T) {
	b := &clientsBackend{Backend: &admintest.Backend{}, clients: []api.ClientStatus{{Name: "default", InFlight: 2}}}
	e := newEnv(t, 16, func(o *admin.Options) { o.Backend = b })
	c := &client.Client{Addr: e.srv.URL, Token: token}
	ctx := context.Background()

	added, err := c.AddClient(ctx, api.AddClient{Name: "aider", Providers: []string{"anthropic"}})
	if err != nil || added.Key != "sp-new" {
		t.Fatalf("add: %+v %v", added, err)
	}
	if _, err := c.AddClient(ctx, api.AddClient{Name: "aider"}); !strings.Contains(fmt.Sprint(err), "exists") {
		t.Errorf("second add: %v", err)
	}
	list, err := c.Clients(ctx)
	if err != nil || len(list) != 2 || list[0].InFlight != 2 || list[1].Name != "aider" {
		t.Fatalf("list: %+v %v", list, err)
	}
	if err := c.RevokeClient(ctx, "aider"); err != nil {
		t.Fatal(err)
	}
	if err := c.RevokeClient(ctx, "aider"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("revoke twice: %v", err)
	}

	b.reload = api.ReloadResult{Error: "config.toml: cooldown.ladder[0]: bad"}
	res, err := c.Reload(ctx)
	if err != nil || res.Error != b.reload.Error {
		t.Errorf("refused reload: %+v %v", res, err)
	}
	b.reload = api.ReloadResult{Live: []string{"models"}, Restart: []string{"listen"}}
	if res, err := c.Reload(ctx); err != nil || len(res.Live) != 1 || res.Restart[0] != "listen" {
		t.Errorf("reload: %+v %v", res, err)
	}
}

// A backend without client keys or reloads says so: 501, not a crash.
func TestClientRoutesWithoutSupport(t *testing.T) {
	e := newEnv(t, 16, nil)
	for _, rq := range []struct{ method, path string }{{"GET", "clients"}, {"POST", "reload"}, {"DELETE", "clients/x"}} {
		res := e.request(t, rq.method, rq.path, "", nil)
		body, _ := io.ReadAll(res.Body)
		var ae api.Error
		if res.StatusCode != http.StatusNotImplemented || json.Unmarshal(body, &ae) != nil || ae.Error == "" {
			t.Errorf("%s %s: %d %s", rq.method, rq.path, res.StatusCode, body)
		}
	}
}
