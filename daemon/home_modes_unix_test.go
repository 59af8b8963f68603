//go:build unix

package daemon

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/api"
)

// Every file a served home gets is 0600, in a home made beforehand at
// 0755 under the usual umask (issue 43: history.db-wal and -shm were
// 0644).
func TestEveryHomeFileIsPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	if err := os.Chmod(home, 0o755); err != nil {
		t.Fatal(err)
	}
	s := startHome(t, home, &logBuf{})
	if _, err := s.AddCredential(context.Background(), api.AddCredential{Provider: "anthropic", Label: "a", Kind: api.KindAPIKey,
		Secret: map[string]string{"key": "sk-ant-a"}}); err != nil {
		t.Fatal(err)
	}
	if resp, body := proxyPost(t, s, "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":8,"messages":[]}`); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if err := s.history.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	var names []string
	filepath.WalkDir(home, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(home, p)
		names = append(names, rel)
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("%s: mode %v, want 0600", rel, m)
		}
		return nil
	})
	for _, want := range []string{"history.db-wal", "history.db-shm", "admin-token"} {
		if _, err := os.Stat(filepath.Join(home, want)); err != nil {
			t.Errorf("%s: %v (files seen: %q)", want, err, names)
		}
	}
	t.Logf("files: %q", names)
}
