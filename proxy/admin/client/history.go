package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/subpool/subpool/proxy/api"
)

// Usage returns usage totals since ("24h", "7d", "2026-11-01"; "" is 24h)
// grouped by by (api.ByDay and the rest; "" is day). With history off the
// error wraps api.ErrUnsupported.
func (c *Client) Usage(ctx context.Context, since, by string) (api.UsageReport, error) {
	q := url.Values{}
	if since != "" {
		q.Set("since", since)
	}
	if by != "" {
		q.Set("by", by)
	}
	var rep api.UsageReport
	err := c.send(ctx, "GET", "usage"+query(q), nil, &rep)
	return rep, err
}

// History returns recent requests, newest first; pass the page's Next as
// Before for the one after.
func (c *Client) History(ctx context.Context, hq api.HistoryQuery) (api.HistoryPage, error) {
	q := url.Values{}
	if hq.Limit > 0 {
		q.Set("limit", strconv.Itoa(hq.Limit))
	}
	if hq.Before > 0 {
		q.Set("before", strconv.FormatInt(hq.Before, 10))
	}
	if hq.Class != "" {
		q.Set("class", hq.Class)
	}
	var page api.HistoryPage
	err := c.send(ctx, "GET", "history"+query(q), nil, &page)
	return page, err
}

func query(q url.Values) string {
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}
