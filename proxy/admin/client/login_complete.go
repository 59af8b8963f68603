package client

import (
	"context"

	"github.com/subpool/subpool/proxy/admin"
)

// CompleteLogin finishes provider's login in progress from the address the
// browser ended on (admin.LoginCompleter).
func (c *Client) CompleteLogin(ctx context.Context, provider, pasted string) error {
	return c.send(ctx, "POST", "login/complete", admin.CompleteLoginRequest{Provider: provider, Pasted: pasted}, nil)
}

var _ admin.LoginCompleter = (*Client)(nil)
