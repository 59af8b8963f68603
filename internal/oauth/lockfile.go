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
// refresh token at once. What Claude Code 2.1.337 does (read in its bundle):
//
//   - A lock is a directory, created with mkdir: whoever creates it holds
//     it. Its holder touches its mtime every `update` (stale/2 unless set,
//     at least 1 s); one whose mtime is older than `stale` belongs to a
//     process that died, and may be removed and taken.
//   - Refresh: `<dir>/.oauth_refresh.lock` (stale 60 s, update 5 s), then
//     the legacy `<realpath dir>.lock` (same options). When the legacy one
//     is held it lets the first go and tries again later; any other failure
//     on the legacy one is ignored. No retries inside the lock call: the
//     refresh tries again up to 5 times, 1–2 s apart. Holding them it
//     writes `<dir>/.oauth_refresh.lock.owner` (lockowner.go), which lets a
//     waiter take the lock of a holder that is proven dead before 60 s.
//   - Writes of the credentials: `<dir>/.storage-write.lock` (stale 15 s,
//     10 retries from 100 ms to 1 s apart).
//
// <dir> is CLAUDE_SECURESTORAGE_CONFIG_DIR when set, else CLAUDE_CONFIG_DIR,
// else ~/.claude.
const (
	claudeRefreshLock   = ".oauth_refresh.lock"
	claudeStorageLock   = ".storage-write"
	claudeRefreshStale  = 60 * time.Second
	claudeRefreshUpdate = 5 * time.Second
	claudeStorageStale  = 15 * time.Second
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
// process took it over first). The held lock is touched every update;
// 0 means proper-lockfile's default, stale/2 and at least 1 s.
func tryDirLock(path string, stale, update time.Duration, logf func(string, ...any)) (*dirLock, error) {
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
	if update == 0 {
		update = max(stale/2, time.Second)
	}
	go l.keepFresh(update, logf)
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

// lockWait takes Claude Code's refresh lock at path, trying again every
// wait until ctx ends. onWait, when set, is told each time the lock was
// found held. A held lock whose mtime has not moved for holderWatch and
// whose owner record proves its holder dead is taken over, as Claude Code
// does, without waiting the 60 s of staleness.
func lockWait(ctx context.Context, dir, path, legacy string, wait time.Duration, onWait func(), logf func(string, ...any)) (*dirLock, error) {
	var watched time.Time // the held lock's mtime when first seen
	var since time.Time
	for {
		l, err := tryDirLock(path, claudeRefreshStale, claudeRefreshUpdate, logf)
		if !errors.Is(err, errLocked) {
			return l, err
		}
		if fi, err := os.Stat(path); err == nil {
			switch {
			case !fi.ModTime().Equal(watched):
				watched, since = fi.ModTime(), time.Now()
			case time.Since(since) >= holderWatch && takeOverDeadHolder(dir, path, legacy, watched, logf):
				continue
			}
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
// refreshes (its locks stay fresh) and until ctx ends. Holding them it
// writes the owner record, and the release removes it.
func claudeLocks(ctx context.Context, dir string, onWait func(), logf func(string, ...any)) (func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	path, legacy := filepath.Join(dir, claudeRefreshLock), legacyLockPath(dir)
	for {
		l, err := lockWait(ctx, dir, path, legacy, lockRetry, onWait, logf)
		if err != nil {
			return nil, err
		}
		ll, err := tryDirLock(legacy, claudeRefreshStale, claudeRefreshUpdate, logf)
		switch {
		case err == nil:
			birth := writeOwner(dir, path, legacy, logf)
			return func() { removeOwner(dir, birth); ll.release(); l.release() }, nil
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
			birth := writeOwner(dir, path, "", logf)
			return func() { removeOwner(dir, birth); l.release() }, nil
		}
	}
}

// legacyLockPath is Claude Code's legacy refresh lock: its dir's real
// path with ".lock" appended.
func legacyLockPath(dir string) string {
	base := dir
	if p, err := filepath.EvalSymlinks(dir); err == nil {
		base = p
	}
	return filepath.Clean(base) + ".lock"
}

// claudeStorageLocked runs write under Claude Code's credential-write lock
// in dir, with its retries (10, from 100 ms doubling to 1 s apart).
func claudeStorageLocked(dir string, logf func(string, ...any), write func() error) error {
	path := filepath.Join(dir, claudeStorageLock+".lock")
	wait := 100 * time.Millisecond
	for try := 0; ; try++ {
		l, err := tryDirLock(path, claudeStorageStale, 0, logf)
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

// holderWatch is how long a held refresh lock's mtime must stand still
// before its owner record is asked whether the holder died: Claude Code
// waits 7.5 s, over its 5 s updates.
var holderWatch = 7500 * time.Millisecond
