package admin_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/subpool/subpool/proxy/admin"
	"github.com/subpool/subpool/proxy/admin/admintest"
	"github.com/subpool/subpool/proxy/api"
)

// completer is the test backend that can also finish a login from a
// pasted address.
type completer struct {
	*admintest.Backend
	got chan [2]string
	err error
}

func (c completer) CompleteLogin(_ context.Context, provider, pasted string) error {
	c.got <- [2]string{provider, pasted}
	return c.err
}

func TestCompleteLogin(t *testing.T) {
	body := `{"provider":"anthropic","pasted":"http://localhost:54545/callback?code=abc&state=s"}`
	// A backend that cannot: 501, with what to do instead.
	e := newEnv(t, 0, nil)
	if res := e.request(t, "POST", "login/complete", body, nil); res.StatusCode != 501 {
		t.Errorf("without a completer: %d", res.StatusCode)
	}

	c := completer{Backend: &admintest.Backend{}, got: make(chan [2]string, 1)}
	e = newEnv(t, 0, func(o *admin.Options) { o.Backend = c })
	if res := e.request(t, "POST", "login/complete", body, nil); res.StatusCode != 204 {
		t.Fatalf("complete: %d %s", res.StatusCode, errorBody(t, res))
	}
	if got := <-c.got; got != [2]string{"anthropic", "http://localhost:54545/callback?code=abc&state=s"} {
		t.Errorf("backend got %q", got)
	}
	c.err = fmt.Errorf("%w: no anthropic login is in progress", api.ErrNotFound)
	e = newEnv(t, 0, func(o *admin.Options) { o.Backend = c })
	if res := e.request(t, "POST", "login/complete", body, nil); res.StatusCode != 404 {
		t.Errorf("no login in progress: %d", res.StatusCode)
	}
	<-c.got
	if res := e.request(t, "POST", "login/complete", `{"provider":`, nil); res.StatusCode != 400 {
		t.Errorf("bad body: %d", res.StatusCode)
	}
}
