package app

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/subpool/subpool/daemon"
	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/internal/update"
)

// updateFeed serves a releases/latest answer for tag on loopback and
// returns a home whose [update] feed points at it, and the request count.
func updateFeed(t *testing.T, tag string) (string, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		fmt.Fprintf(w, `{"tag_name":%q,"html_url":"https://example.invalid/releases/tag/%s","assets":[]}`, tag, tag)
	}))
	t.Cleanup(srv.Close)
	home := t.TempDir()
	cfg := fmt.Sprintf("[update]\nfeed = %q\ncheck = false\n", srv.URL+"/releases/latest")
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return home, &n
}

func TestUpdateCheckVerb(t *testing.T) {
	saved := daemon.Version
	t.Cleanup(func() { daemon.Version = saved })
	daemon.Version = "0.1.0"
	cases := []struct{ tag, want string }{
		{"v0.2.0", "subpool 0.2.0 is out (this is 0.1.0): https://example.invalid/releases/tag/v0.2.0; `subpool update` installs it\n"},
		{"v0.1.0", "subpool 0.1.0 is the latest release\n"},
		{"v0.0.9", "this build (0.1.0) is newer than the latest release (0.0.9)\n"},
	}
	for _, c := range cases {
		home, n := updateFeed(t, c.tag)
		code, out, errs := cli(t, "", "update", "--check", "--home", home)
		if code != 0 || out != c.want || errs != "" {
			t.Errorf("feed at %s: exit %d, out %q, err %q; want %q", c.tag, code, out, errs, c.want)
		}
		if n.Load() != 1 {
			t.Errorf("feed at %s: %d requests, want the one", c.tag, n.Load())
		}
	}
}

// TestUpdateVerbRefusesDevBuild: `go test`'s binary is a dev build, which
// cannot say what a release replaces; it must stay as it is.
func TestUpdateVerbRefusesDevBuild(t *testing.T) {
	saved := daemon.Version
	t.Cleanup(func() { daemon.Version = saved })
	daemon.Version = "dev"
	exe, _ := os.Executable()
	before, _ := os.Stat(exe)
	home, _ := updateFeed(t, "v0.2.0")
	code, out, errs := cli(t, "", "update", "--home", home)
	if code != 1 || out != "" || !strings.HasPrefix(errs, "subpool update: this build (dev) is not a release") || strings.Count(errs, "\n") != 1 {
		t.Errorf("exit %d, out %q, err %q", code, out, errs)
	}
	if after, err := os.Stat(exe); err != nil || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the binary changed: %v", err)
	}
}

func TestUpdateVerbBadFeed(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("[update]\nfeed = \"http://example.com/x\"\n"), 0o600)
	code, _, errs := cli(t, "", "update", "--check", "--home", home)
	if code != 1 || !strings.Contains(errs, "update.feed") || strings.Count(errs, "\n") != 1 {
		t.Errorf("exit %d, err %q", code, errs)
	}
}

// TestUpdateNoticeOnlyWhenCheckIsOn: the tray's check sends nothing
// while [update] check is false, and one feed request when it is on.
func TestUpdateNoticeOnlyWhenCheckIsOn(t *testing.T) {
	saved := daemon.Version
	t.Cleanup(func() { daemon.Version = saved })
	daemon.Version = "0.1.0"
	home, n := updateFeed(t, "v0.2.0")
	cfg, err := config.Read(filepath.Join(home, "config.toml"))
	if err != nil || cfg.Update.Check {
		t.Fatalf("config: %+v, %v", cfg.Update, err)
	}
	if got, err := updateNotice(context.Background(), update.Client{}, cfg); err != nil || got.Newer || n.Load() != 0 {
		t.Fatalf("check = false: %+v, %v, %d requests", got, err, n.Load())
	}
	cfg.Update.Check = true
	got, err := updateNotice(context.Background(), update.Client{}, cfg)
	if err != nil || !got.Newer || got.URL != "https://example.invalid/releases/tag/v0.2.0" || n.Load() != 1 {
		t.Fatalf("check = true: %+v, %v, %d requests", got, err, n.Load())
	}
}
