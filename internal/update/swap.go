package update

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// startTimeout bounds the new binary's `version` run.
const startTimeout = 30 * time.Second

// OldSuffix names the previous binary kept beside the new one.
const OldSuffix = ".old"

// swap puts the verified newBin at Exe. On Unix the old binary is kept by
// a hard link and the new one renamed over Exe, so Exe never goes
// missing; Windows cannot rename over a running exe, so there the old one
// is renamed away first. The old binary goes only once the new one has
// run `version` and named tag; else it is renamed back.
func (in Installer) swap(ctx context.Context, newBin, tag string) error {
	old := in.Exe + OldSuffix
	os.Remove(old) // a previous update's, kept while its binary ran
	// Windows refuses to rename over a running exe, link or no link.
	linked := runtime.GOOS != "windows" && os.Link(in.Exe, old) == nil
	if !linked {
		if err := os.Rename(in.Exe, old); err != nil {
			return fmt.Errorf("cannot keep the old binary as %s: %v; nothing was replaced", old, err)
		}
	}
	if err := os.Rename(newBin, in.Exe); err != nil {
		if linked {
			os.Remove(old) // Exe was never touched
			return fmt.Errorf("cannot put the new binary at %s: %v; nothing was replaced", in.Exe, err)
		}
		return fmt.Errorf("cannot put the new binary at %s: %v; %s", in.Exe, err, restore(old, in.Exe))
	}
	if err := started(ctx, in.Exe, tag); err != nil {
		return fmt.Errorf("the new binary %v; %s", err, restore(old, in.Exe))
	}
	// Windows keeps a running exe's file: then it stays until the next
	// update removes it above.
	os.Remove(old)
	return nil
}

// restore puts the old binary back and says how that went.
func restore(old, exe string) string {
	if err := os.Rename(old, exe); err != nil {
		return fmt.Sprintf("putting the old one back failed too (%v): move %s to %s by hand", err, old, exe)
	}
	return "the old one is back"
}

// started runs `exe version` and checks that it names tag's version.
func started(ctx context.Context, exe, tag string) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, exe, "version").Output()
	first, _, _ := strings.Cut(string(bytes.TrimSpace(out)), "\n")
	if err != nil {
		return fmt.Errorf("did not start (`version`: %v)", err)
	}
	if !strings.Contains(first, Plain(tag)) {
		return fmt.Errorf("says %q, not version %s", first, Plain(tag))
	}
	return nil
}
