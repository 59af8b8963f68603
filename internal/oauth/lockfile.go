package oauth

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Claude Code serialises its refreshes and its credential writes across
// processes with the npm package proper-lockfile, and subpool takes the
// same locks with the same semantics around a refresh of an imported
// Claude Code login and around writing it back, so the two never spend one
// refresh token at once. What Claude Code 2.1.197 does (read in its bundle):
//
//   - A lock is a directory, created with mkdir: whoever creates it holds
//     it. Its holder touches its mtime every `update` (stale/2 by default,
//     at least 1 s); one whose mtime is older than `stale` belongs to a
//     process that died, and may be removed and taken.
//   - Refresh: `<dir>/.oauth_refresh.lock` (stale 10 s), then the legacy
//     `<realpath dir>.lock` (same options). When the legacy one is held it
//     lets the first go and tries again later; any other failure on the
//     legacy one is ignored. No retries inside the lock call: the refresh
//     tries again up to 5 times, 1–2 s apart.
//   - Writes of the credentials: `<dir>/.storage-write.lock` (stale 15 s,
//     10 retries from 100 ms to 1 s apart).
//
// <dir> is CLAUDE_SECURESTORAGE_CONFIG_DIR when set, else CLAUDE_CONFIG_DIR,
// else ~/.claude.
const (
	claudeRefreshLock  = ".oauth_refresh.lock"
	claudeStorageLock  = ".storage-write"
	claudeRefreshStale = 10 * time.Second
	claudeStorageStale = 15 * time.Second
)

// errLocked: another process holds the lock.
var errLocked = errors.New("lock is held by another process")

// dirLock is one held proper-lockfile lock.
type dirLock struct {
	path string
	stop chan struct{}
	done chan struct{}

	mu    sync.Mutex
	mtime time.Time
	lost  error // the lock was taken from us (its mtime changed, or it is gone)
}

// tryDirLock takes the lock directory path once: errLocked when a live
// holder has it. A lock whose mtime is older than stale is removed and
// taken, as proper-lockfile does (one more attempt, which fails if another
// process took it over first).
func tryDirLock(path string, stale time.Duration, logf func(string, ...any)) (*dirLock, error) {
	for attempt := 0; ; attempt++ {
		err := os.Mkdir(path, 0o777)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		if attempt > 0 {
			return nil, errLocked
		}
		fi, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // released between our mkdir and stat
		}
		if err != nil {
			return nil, err
		}
		if !fi.ModTime().Before(time.Now().Add(-stale)) {
			return nil, errLocked
		}
		// Its holder stopped touching it: it died. Take it over.
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	now := time.Now()
	if err := os.Chtimes(path, now, now); err != nil {
		os.Remove(path)
		return nil, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	l := &dirLock{path: path, stop: make(chan struct{}), done: make(chan struct{}), mtime: fi.ModTime()}
	go l.keepFresh(max(stale/2, time.Second), logf)
	return l, nil
}

// keepFresh touches the lock's mtime every update, so that nobody takes it
// over while we hold it; if the mtime changed under us, someone did.
func (l *dirLock) keepFresh(update time.Duration, logf func(string, ...any)) {
	defer close(l.done)
	t := time.NewTicker(update)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		fi, err := os.Stat(l.path)
		l.mu.Lock()
		switch {
		case err != nil:
			l.lost = err
		case !fi.ModTime().Equal(l.mtime):
			l.lost = errors.New("another process took the lock over")
		default:
			now := time.Now()
			if err := os.Chtimes(l.path, now, now); err == nil {
				if fi, err := os.Stat(l.path); err == nil {
					l.mtime = fi.ModTime()
				}
			}
		}
		lost := l.lost
		l.mu.Unlock()
		if lost != nil {
			logf("oauth: lost the lock %s: %v", l.path, lost)
			return
		}
	}
}

// release stops touching the lock and removes it, unless it was lost (then
// it is another process's now).
func (l *dirLock) release() {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	lost := l.lost
	l.mu.Unlock()
	if lost == nil {
		os.Remove(l.path)
	}
}

// lockWait takes the lock at path, trying again every wait until ctx ends.
// onWait, when set, is told each time the lock was found held.
func lockWait(ctx context.Context, path string, stale, wait time.Duration, onWait func(), logf func(string, ...any)) (*dirLock, error) {
	for {
		l, err := tryDirLock(path, stale, logf)
		if !errors.Is(err, errLocked) {
			return l, err
		}
		if onWait != nil {
			onWait()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s stayed held by another process: %w", path, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// claudeLocks takes Claude Code's refresh locks in dir, as Claude Code
// does: the new one, then the legacy one; when the legacy one is held, the
// new one is let go and both are tried again. It waits while Claude Code
// refreshes (its locks stay fresh) and until ctx ends.
func claudeLocks(ctx context.Context, dir string, onWait func(), logf func(string, ...any)) (func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	legacyBase := dir
	if p, err := filepath.EvalSymlinks(dir); err == nil {
		legacyBase = p
	}
	legacy := filepath.Clean(legacyBase) + ".lock"
	for {
		l, err := lockWait(ctx, filepath.Join(dir, claudeRefreshLock), claudeRefreshStale, lockRetry, onWait, logf)
		if err != nil {
			return nil, err
		}
		ll, err := tryDirLock(legacy, claudeRefreshStale, logf)
		switch {
		case err == nil:
			return func() { ll.release(); l.release() }, nil
		case errors.Is(err, errLocked):
			l.release()
			if onWait != nil {
				onWait()
			}
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("%s stayed held by another process: %w", legacy, ctx.Err())
			case <-time.After(lockRetry):
			}
		default:
			// As Claude Code: a legacy lock that cannot be made (a
			// read-only parent) does not stop the refresh.
			logf("oauth: cannot take the legacy lock %s (%v); going on without it", legacy, err)
			return l.release, nil
		}
	}
}

// claudeStorageLocked runs write under Claude Code's credential-write lock
// in dir, with its retries (10, from 100 ms doubling to 1 s apart).
func claudeStorageLocked(dir string, logf func(string, ...any), write func() error) error {
	path := filepath.Join(dir, claudeStorageLock+".lock")
	wait := 100 * time.Millisecond
	for try := 0; ; try++ {
		l, err := tryDirLock(path, claudeStorageStale, logf)
		if err == nil {
			defer l.release()
			return write()
		}
		if !errors.Is(err, errLocked) || try == 10 {
			return fmt.Errorf("cannot take Claude Code's write lock %s: %v", path, err)
		}
		time.Sleep(wait)
		wait = min(wait*2, time.Second)
	}
}

// lockRetry is how long subpool waits before it looks at a held refresh
// lock again; Claude Code waits 1–2 s.
var lockRetry = time.Second
