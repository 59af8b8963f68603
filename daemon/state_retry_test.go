package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy/pool"
)

// A state write that fails is tried again once the cause is gone, so a
// cooldown reaches the file without waiting for the next change (issue 27:
// a write that failed on a full disk was not tried again). The cause here
// is state.json made a directory, which the atomic rename cannot replace
// (root passes any permission, so a read-only file would not do).
func TestFailedStateWriteIsRetried(t *testing.T) {
	old := saveRetry
	saveRetry = 100 * time.Millisecond
	t.Cleanup(func() { saveRetry = old })
	up := startSim(t, sim.Options{})
	home, _ := newHome(t, up, "")
	logs := &logBuf{}
	s := startHome(t, home, logs)
	path := filepath.Join(home, stateFile)
	os.Remove(path)
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	s.Pool().Add(pool.Credential{ID: "k", Provider: "anthropic", Label: "k", Kind: "api_key"})
	s.Pool().CoolDown("k", "", pool.ScopeCredential, time.Hour, "429 for the test")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "trying again") {
		if time.Now().After(deadline) {
			t.Fatalf("no failed write said; log:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(b), "429 for the test") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cooldown never reached the file once it could be written (%v); log:\n%s", err, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Said once the write is done, a moment after the file shows it.
	for !strings.Contains(logs.String(), "written again") {
		if time.Now().After(deadline) {
			t.Fatalf("the recovery was not said; log:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
