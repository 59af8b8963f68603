package config

import "net/url"

// DefaultFeed is where a release's news comes from unless [update] feed
// says otherwise: GitHub's latest-release answer for the project's
// repository. The repository's name is a placeholder until the project
// is published under its final name (README.md, "Updates", says so).
const DefaultFeed = "https://api.github.com/repos/subpool/subpool/releases/latest"

// Update is [update]: where `subpool update` and the tray's notice learn
// of a newer release.
type Update struct {
	// Feed is the latest release in GitHub's releases/latest JSON shape.
	// The check sends only a GET of this URL.
	Feed string
	// Check lets the tray ask the feed by itself; off, only an explicit
	// `subpool update [--check]` asks.
	Check bool
}

type updateFile struct {
	Feed  *string `toml:"feed"`
	Check *bool   `toml:"check"`
}

func parseUpdate(uf *updateFile, u *Update, bad badKey) error {
	if uf == nil {
		return nil
	}
	if uf.Check != nil {
		u.Check = *uf.Check
	}
	if uf.Feed != nil {
		// https only, except on loopback (a local mirror, the tests): the
		// feed names the files an update installs.
		p, err := url.Parse(*uf.Feed)
		loopback := err == nil && p.Scheme == "http" && (p.Hostname() == "127.0.0.1" || p.Hostname() == "localhost" || p.Hostname() == "::1")
		if err != nil || p.Host == "" || (p.Scheme != "https" && !loopback) || p.RawQuery != "" {
			return bad("update.feed", "%q: want an https:// URL without a query, e.g. %q", *uf.Feed, DefaultFeed)
		}
		u.Feed = *uf.Feed
	}
	return nil
}
