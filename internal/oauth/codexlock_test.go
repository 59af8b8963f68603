package oauth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
)

// codexImport is an imported Codex login in a CODEX_HOME of its own,
// and the tokens of a newer login to write back.
func codexImport(t *testing.T, e *env) (src Source, next Tokens) {
	t.Helper()
	dir := t.TempDir()
	src = Source{Kind: SourceCodex, Path: writeCodexFile(t, dir, e.oa.Grant(sim.OpenAI))}
	tok, err := src.Read()
	if err != nil {
		t.Fatal(err)
	}
	g := e.oa.Grant(sim.OpenAI)
	next = tok
	next.Access, next.Refresh, next.IDToken = g.Access, g.Refresh, g.IDToken
	return src, next
}

// holdFlock plays Codex holding one of its locks; the returned func lets
// it go.
func holdFlock(t *testing.T, path string) func() {
	t.Helper()
	release, err := flockWait(guard(t), path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return release
}

// While Codex holds its commit lock (auth.json.lock) subpool's write-back
// waits, and writes once Codex lets it go.
func TestCodexCommitLockIsWaitedFor(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{})
	src, next := codexImport(t, e)
	release := holdFlock(t, src.Path+".lock")
	waited := make(chan struct{}, 1)
	onCodexCommitWait = func() {
		select {
		case waited <- struct{}{}:
		default:
		}
	}
	t.Cleanup(func() { onCodexCommitWait = nil })
	done := make(chan error, 1)
	go func() { done <- src.Write(next) }()
	select {
	case <-waited:
	case err := <-done:
		t.Fatalf("wrote while Codex held its commit lock (%v)", err)
	}
	if got, _ := src.Read(); got.Refresh == next.Refresh {
		t.Fatal("the file changed under Codex's lock")
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, _ := src.Read(); got.Refresh != next.Refresh {
		t.Fatal("not written after the lock was let go")
	}
}

// A commit lock Codex keeps past its own 5 s ends the write-back with a
// one-line reason that names the lock, and leaves the file alone.
func TestCodexCommitLockTimesOut(t *testing.T) {
	codexCommitWait = 30 * time.Millisecond
	t.Cleanup(func() { codexCommitWait = 5 * time.Second })
	e := newEnv(t, sim.OAuthOptions{})
	src, next := codexImport(t, e)
	holdFlock(t, src.Path+".lock")
	before, _ := os.ReadFile(src.Path)
	err := src.Write(next)
	if err == nil || !strings.Contains(err.Error(), "credential commit lock timed out") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("want a one-line timeout, got %v", err)
	}
	noSecret(t, "the error", err.Error(), next.Access, next.Refresh, next.IDToken)
	if after, _ := os.ReadFile(src.Path); string(after) != string(before) {
		t.Fatal("the file changed")
	}
}

// While Codex changes its login (it holds auth.lock), subpool's renewal
// of the imported login waits and spends nothing; it goes on once Codex
// is done.
func TestRefreshWaitsForCodexsAuthLock(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{})
	src, _ := codexImport(t, e)
	tok, _ := src.Read()
	e.store.toks["cx"] = tok
	release := holdFlock(t, filepath.Join(filepath.Dir(src.Path), codexStateLock))
	waited := make(chan struct{}, 1)
	e.m.onLockWait = func() {
		select {
		case waited <- struct{}{}:
		default:
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := e.m.Token(guard(t), "cx", e.oai, true)
		done <- err
	}()
	select {
	case <-waited:
	case err := <-done:
		t.Fatalf("renewed while Codex held auth.lock (%v)", err)
	}
	if n := e.oa.Stats().Refreshes; n != 0 {
		t.Fatalf("%d refreshes under Codex's lock", n)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, _ := src.Read(); got.Refresh == tok.Refresh || e.oa.Stats().Refreshes != 1 {
		t.Fatalf("not renewed and written back after the lock (stats %+v)", e.oa.Stats())
	}
}
