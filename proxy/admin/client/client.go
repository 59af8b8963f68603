// Package client is the typed Go client of the admin API, used by the CLI
// verbs and the tray. Like Tailscale's local client: the zero value is
// usable once Addr and Token are set, every request goes through one funnel
// (send) that turns statuses into typed errors, and the event stream comes
// as a Watcher with Next and Close, or as a self-healing channel (Events).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"github.com/gorilla/websocket"

	"github.com/subpool/subpool/proxy/admin"
	"github.com/subpool/subpool/proxy/api"
)

// Client talks to one proxy's admin API.
type Client struct {
	// Addr is the proxy's listen address, "127.0.0.1:8787".
	Addr string
	// Token is the admin token (the home's admin-token file).
	Token string
	// Transport carries REST calls; nil is http.DefaultTransport. It exists
	// primarily for tests.
	Transport http.RoundTripper
	// Dialer opens event websockets; nil is a copy of
	// websocket.DefaultDialer.
	Dialer *websocket.Dialer
}

// Errors the funnel returns, wrapped in an *Error that carries the proxy's
// own one-line message. Test with errors.Is or the IsXxx functions.
var (
	// ErrUnauthorized: the admin token is missing or wrong.
	ErrUnauthorized = errors.New("admin token rejected")
	// ErrForbidden: the proxy's localhost guard refused the request.
	ErrForbidden = errors.New("refused by the proxy")
	// ErrNotFound is api.ErrNotFound, so a caller can test for either.
	ErrNotFound = api.ErrNotFound
	// ErrConflict is api.ErrConflict: the proxy already holds that key or
	// label.
	ErrConflict = api.ErrConflict
)

// Error is a non-2xx answer from the proxy.
type Error struct {
	Status  int    // HTTP status
	Message string // the proxy's message, one line
	kind    error  // ErrUnauthorized, ErrForbidden, ErrNotFound, ErrConflict, api.ErrBadRequest, api.ErrUnsupported or nil
}

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("subpool proxy answered %d %s", e.Status, http.StatusText(e.Status))
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.kind }

// IsUnauthorized reports whether err is a rejected admin token.
func IsUnauthorized(err error) bool { return errors.Is(err, ErrUnauthorized) }

// IsConflict reports whether the proxy refused to add what it already
// holds (a key, a label).
func IsConflict(err error) bool { return errors.Is(err, ErrConflict) }

// IsForbidden reports whether the proxy's localhost guard refused the call.
func IsForbidden(err error) bool { return errors.Is(err, ErrForbidden) }

// IsNotRunning reports whether err means no proxy answers at Addr: the
// connection could not be made at all.
func IsNotRunning(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	// Windows reports a refused connection with its own errno, and the
	// message varies; any failed dial other than a name lookup means the
	// same thing for a loopback address.
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		var dns *net.DNSError
		return !errors.As(err, &dns)
	}
	return false
}

// The client is the admin API's Backend, spoken over HTTP.
var _ admin.Backend = (*Client)(nil)

// Status returns every provider and credential.
func (c *Client) Status(ctx context.Context) (api.Status, error) {
	var st api.Status
	err := c.send(ctx, "GET", "status", nil, &st)
	return st, err
}

// AddCredential stores a credential and returns its id.
func (c *Client) AddCredential(ctx context.Context, req api.AddCredential) (string, error) {
	var added api.Added
	if err := c.send(ctx, "POST", "credentials", req, &added); err != nil {
		return "", err
	}
	return added.ID, nil
}

// RemoveCredential deletes a credential.
func (c *Client) RemoveCredential(ctx context.Context, id string) error {
	return c.send(ctx, "DELETE", "credentials/"+url.PathEscape(id), nil, nil)
}

// Pause takes a credential out of rotation until Resume.
func (c *Client) Pause(ctx context.Context, id string) error {
	return c.send(ctx, "POST", "credentials/"+url.PathEscape(id)+"/pause", nil, nil)
}

// Resume puts a paused credential back into rotation.
func (c *Client) Resume(ctx context.Context, id string) error {
	return c.send(ctx, "POST", "credentials/"+url.PathEscape(id)+"/resume", nil, nil)
}

// Reset clears a credential's cooldowns.
func (c *Client) Reset(ctx context.Context, id string) error {
	return c.send(ctx, "POST", "credentials/"+url.PathEscape(id)+"/reset", nil, nil)
}

// StartLogin begins an OAuth login in the proxy and returns the URL for the
// user to open; the proxy emits credential_added when it completes. A
// provider without OAuth login gives an error wrapping api.ErrUnsupported.
func (c *Client) StartLogin(ctx context.Context, provider, label string) (api.LoginStart, error) {
	var ls api.LoginStart
	err := c.send(ctx, "POST", "login", admin.LoginRequest{Provider: provider, Label: label}, &ls)
	return ls, err
}

// send is the one funnel: it makes the request, and maps a non-2xx answer
// to an *Error. out, when not nil, receives the JSON answer.
func (c *Client) send(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base("http")+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	// No client-wide timeout: the caller's context bounds the call.
	hc := &http.Client{Transport: c.Transport}
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		return errorFrom(res)
	}
	if out == nil || res.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		return fmt.Errorf("reading the proxy's answer to %s %s: %w", method, path, err)
	}
	return nil
}

// errorFrom turns a non-2xx response into an *Error, reading the proxy's
// {"error": …} body when there is one.
func errorFrom(res *http.Response) error {
	e := &Error{Status: res.StatusCode}
	var body api.Error
	if json.NewDecoder(io.LimitReader(res.Body, 64<<10)).Decode(&body) == nil {
		e.Message = body.Error
	}
	switch res.StatusCode {
	case http.StatusUnauthorized:
		e.kind = ErrUnauthorized
	case http.StatusForbidden:
		e.kind = ErrForbidden
	case http.StatusNotFound:
		e.kind = ErrNotFound
	case http.StatusBadRequest:
		e.kind = api.ErrBadRequest
	case http.StatusConflict:
		e.kind = ErrConflict
	case http.StatusNotImplemented:
		e.kind = api.ErrUnsupported
	}
	return e
}

// base is the admin API's root URL for scheme ("http" or "ws"). Addr may
// also be given as a URL ("http://127.0.0.1:8787").
func (c *Client) base(scheme string) string {
	addr := strings.TrimSuffix(c.Addr, "/")
	if rest, ok := strings.CutPrefix(addr, "https://"); ok {
		addr, scheme = rest, scheme+"s"
	} else {
		addr = strings.TrimPrefix(addr, "http://")
	}
	return scheme + "://" + addr + admin.Prefix
}
