package update

import (
	"context"
	"fmt"
)

// Notice is what a check found, for `subpool update --check` and the
// tray's one-time notice.
type Notice struct {
	Current, Latest string
	// Newer is true when Latest is a later release than Current.
	Newer bool
	// URL is the release's page (html_url), for a link.
	URL string
}

// String is the one line `subpool update --check` prints.
func (n Notice) String() string {
	cur, latest := Plain(n.Current), Plain(n.Latest)
	if n.Newer {
		return fmt.Sprintf("subpool %s is out (this is %s): %s; `subpool update` installs it", latest, cur, n.URL)
	}
	c, err := Compare(n.Current, n.Latest)
	switch {
	case err != nil:
		return fmt.Sprintf("this build (%s) is not a release; the latest release is %s: %s", n.Current, latest, n.URL)
	case c == 0:
		return fmt.Sprintf("subpool %s is the latest release", cur)
	}
	return fmt.Sprintf("this build (%s) is newer than the latest release (%s)", cur, latest)
}

// Check reads the feed and compares its release with current. A build
// whose version is not a release (dev, a bare commit) is never told of a
// newer one: it cannot say what it holds.
func (c Client) Check(ctx context.Context, feed, current string) (Notice, Release, error) {
	r, err := c.Latest(ctx, feed)
	if err != nil {
		return Notice{}, Release{}, err
	}
	n := Notice{Current: current, Latest: r.TagName, URL: r.HTMLURL}
	if _, err := parseSemver(r.TagName); err != nil {
		return Notice{}, Release{}, fmt.Errorf("the release feed's tag %q is not a version (want v1.2.3)", r.TagName)
	}
	if d, err := Compare(current, r.TagName); err == nil && d < 0 {
		n.Newer = true
	}
	return n, r, nil
}
