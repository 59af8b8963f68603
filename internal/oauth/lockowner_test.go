package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
)

// A refresh lock 30 s untouched is a live Claude Code's under 2.1.337's
// 60 s staleness (it was stale under the old 10 s): subpool waits for it
// and refreshes nothing.
func TestRefreshLockIsLiveForSixtySeconds(t *testing.T) {
	e := newEnv(t, sim.OAuthOptions{})
	dir, _ := claudeImport(t, e)
	lock := filepath.Join(dir, claudeRefreshLock)
	if err := os.Mkdir(lock, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-30 * time.Second)
	os.Chtimes(lock, old, old)
	waited := make(chan struct{})
	ctx, cancel := context.WithCancel(guard(t))
	e.m.onLockWait = func() {
		select {
		case <-waited:
		default:
			close(waited)
		}
		cancel()
	}
	if _, err := e.m.Token(ctx, "imp", e.anth, false); err == nil {
		t.Fatal("refreshed through a 30 s old lock")
	}
	<-waited
	if n := e.oa.Stats().Refreshes; n != 0 {
		t.Fatalf("%d refreshes under a live lock", n)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("the live lock was removed: %v", err)
	}
}

// While subpool refreshes it holds both locks and its owner record names
// it, with the locks' birth times, in Claude Code's shape; after, the
// record is gone with the locks.
func TestOwnerRecordWhileSubpoolHoldsTheLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".claude")
	release, err := claudeLocks(guard(t), dir, nil, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, claudeRefreshLock)
	if birthtimeMs(lock) <= 0 {
		release()
		t.Skip("this filesystem keeps no birth times; Claude Code writes no record on it either")
	}
	b, err := os.ReadFile(filepath.Join(dir, claudeLockOwner))
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if rec["pid"] != float64(os.Getpid()) || rec["lockBirthtimeMs"] != birthtimeMs(lock) ||
		rec["legacyLockBirthtimeMs"] != birthtimeMs(dir+".lock") || rec["pidDomain"] != pidDomain() || rec["pidSpace"] != pidSpace() {
		t.Fatalf("owner record %s", b)
	}
	release()
	for _, p := range []string{lock, dir + ".lock", filepath.Join(dir, claudeLockOwner)} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s left behind (%v)", p, err)
		}
	}
}

// A fresh lock whose owner record names a process that has exited is a
// dead Claude Code's: once its mtime has stood still for the watch,
// subpool takes it over without waiting 60 s. The same record naming a
// live process keeps subpool waiting.
func TestDeadHolderOfFreshLockIsTakenOver(t *testing.T) {
	holderWatch, lockRetry = 0, 5*time.Millisecond
	t.Cleanup(func() { holderWatch, lockRetry = 7500*time.Millisecond, time.Second })
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		pid  int
		take bool
	}{{"dead holder", dead.Process.Pid, true}, {"live holder", os.Getppid(), false}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, sim.OAuthOptions{})
			dir, _ := claudeImport(t, e)
			lock := filepath.Join(dir, claudeRefreshLock)
			if err := os.Mkdir(lock, 0o755); err != nil {
				t.Fatal(err)
			}
			if birthtimeMs(lock) <= 0 || !pidViewTrusted() {
				t.Skip("no birth times or no trusted /proc here: Claude Code takes over nothing either")
			}
			rec := ownerRecord{PID: c.pid, ProcStart: procStart(c.pid), PIDDomain: pidDomain(), PIDSpace: pidSpace(), LockBirth: birthtimeMs(lock)}
			b, _ := json.Marshal(rec)
			if err := os.WriteFile(filepath.Join(dir, claudeLockOwner), b, 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(guard(t), 300*time.Millisecond)
			defer cancel()
			_, err := e.m.Token(ctx, "imp", e.anth, false)
			if c.take {
				if err != nil || e.oa.Stats().Refreshes != 1 {
					t.Fatalf("dead holder's lock not taken over: %v, stats %+v", err, e.oa.Stats())
				}
				if _, err := os.Stat(filepath.Join(dir, claudeLockOwner)); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("dead holder's record stays (%v)", err)
				}
				return
			}
			if err == nil || e.oa.Stats().Refreshes != 0 {
				t.Fatalf("a live holder's lock was taken: %v, stats %+v", err, e.oa.Stats())
			}
			// The holder lets go; the waiting refresh goes on and ends.
			os.Remove(filepath.Join(dir, claudeLockOwner))
			os.Remove(lock)
			if _, err := e.m.Token(guard(t), "imp", e.anth, false); err != nil {
				t.Fatal(err)
			}
		})
	}
}
