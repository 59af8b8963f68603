package client

import (
	"context"
	"net/url"
)

// SetOtherTools opens a subscription login to every tool (on) or keeps it
// for the tool it belongs to (off: a Claude login serves Claude Code
// only). The change arrives as credential_updated with reason
// api.ReasonOtherToolsOn or api.ReasonOtherToolsOff.
func (c *Client) SetOtherTools(ctx context.Context, id string, on bool) error {
	return c.send(ctx, "POST", "credentials/"+url.PathEscape(id)+"/tools", map[string]bool{"other_tools": on}, nil)
}
