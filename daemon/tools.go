package daemon

import (
	"slices"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/proxy/api"
)

// setSubscriptions applies an edited [subscriptions] to the running pool:
// each login it opens or no longer opens is updated, with its
// credential_updated event.
func (c *core) setSubscriptions(s config.Subscriptions) {
	c.mu.Lock()
	c.subs = s
	recs := slices.Clone(c.creds)
	c.mu.Unlock()
	for _, r := range recs {
		if _, ok := c.cfg.Providers[r.Provider]; ok {
			c.readd(r)
		}
	}
	c.warnUnmatchedSubs()
}

// readd gives the pool r's metadata again. When that changes which tools
// the login serves, the pool's credential_updated event says so.
func (c *core) readd(r CredentialRecord) { c.pool.Add(c.poolCred(r)) }

// warnUnmatchedSubs names, once per load, an other_tools entry that is no
// credential's ID or label: most likely a typo, which would leave the
// login kept for its own tool.
func (c *core) warnUnmatchedSubs() {
	c.mu.Lock()
	names := slices.Clone(c.subs.OtherTools)
	recs := slices.Clone(c.creds)
	c.mu.Unlock()
	for _, n := range names {
		if !slices.ContainsFunc(recs, func(r CredentialRecord) bool { return r.ID == n || r.Label == n }) {
			c.logf("warning: config.toml [subscriptions] other_tools names %q, which is no credential's ID or label (`subpool list` shows them)", n)
		}
	}
}

// KindWords names what a credential is, as a sentence says it: "an API
// key", "a Claude login".
func KindWords(c api.CredentialStatus) string {
	if c.Kind == api.KindAPIKey {
		return "an API key"
	}
	return "a " + providerTitle(c.Provider) + " login"
}

func providerTitle(p string) string {
	switch p {
	case config.Anthropic:
		return "Claude"
	case config.OpenAI:
		return "ChatGPT"
	case "google":
		return "Google"
	}
	return p
}
