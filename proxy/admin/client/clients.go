package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"github.com/subpool/subpool/proxy/api"
)

// Clients lists the client keys by name, with their limits and requests
// in flight; never a key.
func (c *Client) Clients(ctx context.Context) ([]api.ClientStatus, error) {
	var list []api.ClientStatus
	err := c.send(ctx, "GET", "clients", nil, &list)
	return list, err
}

// AddClient makes a client key; the answer carries the key, this once.
func (c *Client) AddClient(ctx context.Context, req api.AddClient) (api.ClientAdded, error) {
	var added api.ClientAdded
	err := c.send(ctx, "POST", "clients", req, &added)
	return added, err
}

// RevokeClient deletes the key named name; the proxy refuses it from its
// next request. Unknown names wrap ErrNotFound.
func (c *Client) RevokeClient(ctx context.Context, name string) error {
	return c.send(ctx, "DELETE", "clients/"+url.PathEscape(name), nil, nil)
}

// Reload has the proxy read config.toml again. An edit the proxy refused
// is not an error of the call: the result's Error says why, naming the
// key, and the running config stays.
func (c *Client) Reload(ctx context.Context) (api.ReloadResult, error) {
	var res api.ReloadResult
	err := c.send(ctx, "POST", "reload", nil, &res)
	var e *Error
	if errors.As(err, &e) && e.Status == http.StatusUnprocessableEntity {
		return api.ReloadResult{Error: e.Message}, nil
	}
	return res, err
}
