package client

import (
	"context"
	"net/url"
)

// Reserve sets a subscription's reserve in percent (0..99); a negative
// percent returns it to [usage] reserve.
func (c *Client) Reserve(ctx context.Context, id string, percent int) error {
	body := map[string]any{"percent": nil}
	if percent >= 0 {
		body["percent"] = percent
	}
	return c.send(ctx, "POST", "credentials/"+url.PathEscape(id)+"/reserve", body, nil)
}
