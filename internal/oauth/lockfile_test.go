package oauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
)

// claudeImport is an imported Claude Code login whose access token has
// run out, in a Claude Code config dir of its own.
func claudeImport(t *testing.T, e *env) (dir string, src Source) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), ".claude")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	g := e.oa.Grant(sim.Anthropic)
	src = Source{Kind: SourceClaudeCode, Path: writeClaudeFile(t, dir, g), Dir: dir}
	tok, err := src.Read()
	if err != nil {
		t.Fatal(err)
	}
	e.store.toks["imp"] = tok
	e.clk.Advance(2 * time.Hour)
	return dir, src
}

// holdLock plays Claude Code holding a proper-lockfile lock: the
// directory exists and its mtime is kept fresh. The returned func lets it go.
func holdLock(t *testing.T, path string) func() {
	t.Helper()
	l, err := tryDirLock(path, claudeRefreshStale, 0, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	once := sync.Once{}
	release := func() { once.Do(l.release) }
	t.Cleanup(release)
	return release
}

// While Claude Code holds either of its refresh locks, subpool's refresh
// of the imported login waits, spends nothing, and goes on once the lock
// is let go; it leaves no lock behind.
func TestRefreshWaitsForClaudeCodesLock(t *testing.T) {
	for _, which := range []string{"new", "legacy"} {
		t.Run(which, func(t *testing.T) {
			e := newEnv(t, sim.OAuthOptions{})
			dir, _ := claudeImport(t, e)
			lock := filepath.Join(dir, claudeRefreshLock)
			if which == "legacy" {
				lock = dir + ".lock"
			}
			release := holdLock(t, lock)
			waited := make(chan struct{}, 1)
			e.m.onLockWait = func() {
				select {
				case waited <- struct{}{}:
				default:
				}
			}
			ctx := guard(t)
			done := make(chan error, 1)
			go func() {
				_, err := e.m.Token(ctx, "imp", e.anth, false)
				done <- err
			}()
			select {
			case <-waited:
			case err := <-done:
				t.Fatalf("refreshed while Claude Code held %s (err %v, stats %+v)", lock, err, e.oa.Stats())
			}
			if n := e.oa.Stats().Refreshes; n != 0 {
				t.Fatalf("%d refreshes while the lock was held", n)
			}
			release()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if n := e.oa.Stats().Refreshes; n != 1 {
				t.Fatalf("%d refreshes, want 1", n)
			}
			for _, p := range []string{filepath.Join(dir, claudeRefreshLock), dir + ".lock", filepath.Join(dir, claudeStorageLock+".lock")} {
				if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("%s left behind (%v)", p, err)
				}
			}
		})
	}
}

// A lock whose holder stopped touching it (its mtime is older than
// proper-lockfile's stale, 60 s for Claude Code 2.1.337's refresh lock)
// belongs to a Claude Code that died:
// subpool takes it over and refreshes at once.
func TestStaleClaudeCodeLockIsTakenOver(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{})
	dir, src := claudeImport(t, e)
	lock := filepath.Join(dir, claudeRefreshLock)
	if err := os.Mkdir(lock, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Minute)
	os.Chtimes(lock, old, old)
	e.m.onLockWait = func() { t.Error("waited for a stale lock") }
	got, err := e.m.Token(guard(t), "imp", e.anth, false)
	if err != nil {
		t.Fatal(err)
	}
	if onDisk, _ := src.Read(); onDisk.Refresh != got.Refresh || e.oa.Stats().Refreshes != 1 {
		t.Fatalf("stats %+v; file and subpool agree: %v", e.oa.Stats(), onDisk.Refresh == got.Refresh)
	}
	if _, err := os.Stat(lock); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the taken-over lock stays: %v", err)
	}
}

// A Claude Code that refreshes under its locks (played by a goroutine with
// its own mkdir locking, the protocol Claude Code uses) and subpool
// refreshing the same imported login side by side never spend one refresh
// token twice: the token endpoint refuses nothing as reused.
func TestClaudeCodeAndSubpoolNeverSpendOneRefreshToken(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{})
	dir, src := claudeImport(t, e)
	lockRetry = 5 * time.Millisecond
	t.Cleanup(func() { lockRetry = time.Second })
	const rounds = 40
	ctx := guard(t)

	var wg sync.WaitGroup
	ccErr := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range rounds {
			if err := claudeCodeRefresh(e, dir, src.Path); err != nil {
				ccErr <- err
				return
			}
		}
	}()
	for round := range rounds {
		e.clk.Advance(31 * time.Second) // past the collapse of forced refreshes
		if _, err := e.m.Token(ctx, "imp", e.anth, true); err != nil {
			t.Fatalf("subpool round %d: %v", round, err)
		}
	}
	wg.Wait()
	select {
	case err := <-ccErr:
		t.Fatalf("Claude Code: %v", err)
	default:
	}
	if st := e.oa.Stats(); st.Reused != 0 || st.Rotations < rounds {
		t.Fatalf("stats %+v: a refresh token was spent twice", st)
	}
	// Whoever went last, the file holds a login that still refreshes.
	if err := claudeCodeRefresh(e, dir, src.Path); err != nil {
		t.Fatal(err)
	}
}

// claudeCodeRefresh is one refresh as Claude Code 2.1.337 does it: take
// <dir>/.oauth_refresh.lock then <dir>.lock (mkdir, waiting while held),
// read the file, refresh with its token, write the answer back under
// .storage-write.lock, let the locks go.
func claudeCodeRefresh(e *env, dir, path string) error {
	take := func(p string) error {
		for range 20000 {
			err := os.Mkdir(p, 0o755)
			if err == nil {
				return nil
			}
			if !errors.Is(err, fs.ErrExist) {
				return err
			}
			time.Sleep(time.Millisecond)
		}
		return fmt.Errorf("%s never came free", p)
	}
	for _, p := range []string{filepath.Join(dir, claudeRefreshLock), dir + ".lock"} {
		if err := take(p); err != nil {
			return err
		}
		defer os.Remove(p)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc map[string]map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return err
	}
	in := doc["claudeAiOauth"]
	body, _ := json.Marshal(map[string]string{"grant_type": "refresh_token", "refresh_token": in["refreshToken"].(string),
		"client_id": AnthropicClientID, "scope": AnthropicScope})
	resp, err := http.Post(e.anth.TokenURL, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	ans, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("Claude Code's refresh refused: %d %s", resp.StatusCode, ans)
	}
	var a map[string]any
	json.Unmarshal(ans, &a)
	in["accessToken"], in["refreshToken"] = a["access_token"], a["refresh_token"]
	in["expiresAt"] = e.clk.Now().Add(time.Hour).UnixMilli()
	out, _ := json.Marshal(doc)
	w := filepath.Join(dir, claudeStorageLock+".lock")
	if err := take(w); err != nil {
		return err
	}
	defer os.Remove(w)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
