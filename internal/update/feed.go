// Package update asks a release feed whether a newer subpool is out and
// installs one into a tarball or zip install, but only after SHA256SUMS's
// signature verifies against the key built into this binary and the
// archive's checksum matches it. Nothing it downloads runs before both.
//
// It sends nothing but the requests a person could type: GET on the feed
// (no query, a fixed User-Agent), and for an install the release's three
// files. It imports no Fyne and builds without cgo.
package update

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Release is what subpool reads of GitHub's releases/latest answer.
type Release struct {
	TagName string  `json:"tag_name"`
	HTMLURL string  `json:"html_url"`
	Assets  []Asset `json:"assets"`
}

// Asset is one file of a release.
type Asset struct {
	Name string `json:"name"`
	URL  string `json:"browser_download_url"`
	Size int64  `json:"size"`
}

// asset is the release's file called name.
func (r Release) asset(name string) (Asset, error) {
	for _, a := range r.Assets {
		if a.Name == name {
			return a, nil
		}
	}
	return Asset{}, fmt.Errorf("release %s has no %s", r.TagName, name)
}

// maxFeed bounds the feed's answer; GitHub's for a release with a dozen
// assets is about 30 KiB.
const maxFeed = 4 << 20

// defaultTimeout bounds a feed request or a small file's download when
// the caller's client has none.
const defaultTimeout = 30 * time.Second

// userAgent is the same for every person (GitHub's API refuses requests
// without one), so it tells the feed nothing about who asks.
const userAgent = "subpool-update"

// Client fetches the feed and the release's files. Its zero value uses
// http.DefaultTransport with a timeout on every request.
type Client struct {
	HTTP *http.Client
}

func (c Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 10 * time.Minute}
}

// get starts a GET of url and returns the body of a 200 answer.
func (c Client) get(ctx context.Context, url, accept string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("%s is not a URL: %v", url, err)
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", accept)
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return resp, nil
}

// Latest reads the feed: the latest release.
func (c Client) Latest(ctx context.Context, feed string) (Release, error) {
	ctx, cancel := context.WithTimeout(ctx, defaultTimeout)
	defer cancel()
	resp, err := c.get(ctx, feed, "application/vnd.github+json")
	if err != nil {
		return Release{}, fmt.Errorf("cannot read the release feed: %v", err)
	}
	defer resp.Body.Close()
	var r Release
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxFeed)).Decode(&r); err != nil {
		return Release{}, fmt.Errorf("the release feed %s is not a release (GitHub's releases/latest JSON): %v", feed, err)
	}
	if r.TagName == "" {
		return Release{}, fmt.Errorf("the release feed %s names no tag_name", feed)
	}
	return r, nil
}
