package oauth

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Codex 0.171 takes two advisory locks (flock on Unix) in CODEX_HOME when
// it changes its login (seen with strace; the names are in its binary):
//
//   - auth.lock, exclusive and waited for, around the whole change: the
//     re-read of auth.json, the refresh, the write;
//   - auth.json.lock (auth.json with the extension "json.lock"), exclusive,
//     tried every 10 ms for 5 s ("credential commit lock timed out"),
//     around the write itself, which is a temp file, fsync and rename.
//
// It reads auth.json without either. subpool takes both the same way
// around its renewal of an imported Codex login and its write-back.
const codexStateLock = "auth.lock"

var (
	codexCommitWait = 5 * time.Second
	codexLockPoll   = 10 * time.Millisecond
)

// codexStateLocked takes Codex's auth.lock for the login at path, waiting
// while Codex changes its login, until ctx ends. onWait, when set, is
// told each time it was found held.
func codexStateLocked(ctx context.Context, path string, onWait func()) (func(), error) {
	lock := filepath.Join(filepath.Dir(path), codexStateLock)
	release, err := flockWait(ctx, lock, 0o644, onWait)
	if err != nil {
		return nil, fmt.Errorf("Codex is changing its login and holds %s (%v)", lock, err)
	}
	return release, nil
}

// codexCommitLocked runs write under Codex's commit lock on path, as
// Codex does: tried every 10 ms, given up after 5 s.
func codexCommitLocked(path string, onWait func(), write func() error) error {
	lock := path + ".lock"
	ctx, cancel := context.WithTimeout(context.Background(), codexCommitWait)
	defer cancel()
	release, err := flockWait(ctx, lock, 0o600, onWait)
	if err != nil {
		return fmt.Errorf("Codex holds its credential lock %s: credential commit lock timed out after %s; the login stays in subpool and goes back on its next renewal", lock, codexCommitWait)
	}
	defer release()
	return write()
}

// flockWait takes an exclusive advisory lock on the file path (created
// with mode when missing), trying every codexLockPoll until ctx ends.
func flockWait(ctx context.Context, path string, mode os.FileMode, onWait func()) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, mode)
	if err != nil {
		return nil, err
	}
	for {
		ok, err := tryFlock(f)
		if err != nil {
			f.Close()
			return nil, err
		}
		if ok {
			return func() { f.Close() }, nil // closing the file lets the lock go
		}
		if onWait != nil {
			onWait()
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(codexLockPoll):
		}
	}
}

// onCodexCommitWait, when set, is told each time a write-back found
// Codex's commit lock held (tests).
var onCodexCommitWait func()
