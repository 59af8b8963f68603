package history

import (
	"bufio"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

const (
	crashEnv      = "SUBPOOL_HISTORY_CRASH_DB"
	crashPacedEnv = "SUBPOOL_HISTORY_CRASH_PACED" // rows at a proxy's pace, not as fast as they go
)

// TestCrashWriter is the child of TestKilledWriterLeavesAnIntactFile: it
// writes rows as fast as it can until it is killed.
func TestCrashWriter(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("only run as the child of TestKilledWriterLeavesAnIntactFile")
	}
	d, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("ready\n")
	paced := os.Getenv(crashPacedEnv) != ""
	for i := int64(0); ; i++ {
		e := finished(time.Now(), "claude-sonnet-4-5")
		e.OutputTokens = i
		d.Emit(e)
		switch {
		case paced:
			time.Sleep(time.Millisecond) // about 1000 requests a second, as the bench sustains
		case i%64 == 0:
			time.Sleep(time.Millisecond) // a busy proxy, not a tight loop that only drops
		}
	}
}

// kill -9 at random moments while rows are being written: the file opens
// every time, passes integrity_check, and never loses committed rows.
func TestKilledWriterLeavesAnIntactFile(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns 30 processes")
	}
	path := filepath.Join(t.TempDir(), FileName)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	prev := 0
	for i := range 30 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("run %d: child said %q, %v", i, line, err)
		}
		// The moment of death: anywhere in the first few batches, which
		// covers mid-transaction, mid-commit and mid-checkpoint.
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		cmd.Process.Kill() // SIGKILL: no deferred code, no Close
		cmd.Wait()

		d, err := Open(path, Options{})
		if err != nil {
			t.Fatalf("run %d: open after kill: %v", i, err)
		}
		var check string
		if err := d.sql.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
			t.Fatalf("run %d: integrity_check = %q, %v", i, check, err)
		}
		n := count(t, d, "1=1")
		if n < prev {
			t.Fatalf("run %d: %d rows, fewer than the %d committed before", i, n, prev)
		}
		prev = n
		if _, err := d.List(context.Background(), api.HistoryQuery{Limit: 1}); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		d.Close()
	}
	if prev == 0 {
		t.Fatal("no run committed a row; the test killed every child too early to mean anything")
	}
	t.Logf("%d rows after 30 kills", prev)
}

// killWindow is what a kill -9 may cost (docs/history.md): the rows of the
// batch being gathered (batchEvery) and of the one commit in flight, with
// room for the scheduler of a loaded 2-core machine.
const killWindow = batchEvery + 350*time.Millisecond

// kill -9 while rows stream in at a busy proxy's pace (about 1000 a
// second) loses at most the last batch: the newest
// row in the file is never older than killWindow at the moment of the
// kill (issue 27: the figure is honest; say it, and keep it bounded).
func TestKillLosesAtMostTheLastBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns 8 processes")
	}
	rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
	for i := range 8 {
		path := filepath.Join(t.TempDir(), FileName)
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+path, crashPacedEnv+"=1")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("run %d: child said %q, %v", i, line, err)
		}
		// Past the first batches, so the writer is in its stride.
		time.Sleep(time.Duration(600+rng.IntN(600)) * time.Millisecond)
		killed := time.Now()
		cmd.Process.Kill()
		cmd.Wait()

		d, err := Open(path, Options{})
		if err != nil {
			t.Fatalf("run %d: open after kill: %v", i, err)
		}
		var newest int64
		if err := d.sql.QueryRow("SELECT MAX(ts) FROM requests").Scan(&newest); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		d.Close()
		lost := killed.Sub(time.UnixMilli(newest))
		t.Logf("run %d: the newest row is %v older than the kill", i, lost)
		if lost > killWindow {
			t.Fatalf("run %d: the newest row is %v older than the kill, over the %v a kill may cost", i, lost, killWindow)
		}
	}
}
