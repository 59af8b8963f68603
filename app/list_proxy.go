package app

import "github.com/subpool/subpool/proxy/api"

// proxyColumn is list's PROXY column, there only when some credential
// has a proxy of its own: the header's cell for nil, else the
// credential's proxy, which status already carries without user:password.
func proxyColumn(st api.Status) func(*api.CredentialStatus) string {
	shown := false
	for _, p := range st.Providers {
		for _, c := range p.Credentials {
			shown = shown || c.Proxy != ""
		}
	}
	return func(c *api.CredentialStatus) string {
		switch {
		case !shown:
			return ""
		case c == nil:
			return "\tPROXY"
		case c.Proxy == "":
			return "\t-"
		}
		return "\t" + c.Proxy
	}
}
