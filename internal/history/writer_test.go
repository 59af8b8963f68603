package history

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// The writer keeps its connection from batch to batch; a batch that fails
// on it must not fail the ones after, and its rows are written with the
// next (issue 27: failed writes are tried again).
func TestWriterRecoversFromALostConnection(t *testing.T) {
	d := open(t, Options{})
	d.Emit(finished(t0, "m"))
	sync_(t, d)
	d.w.conn.Close() // the writer is idle: Sync returned
	d.Emit(finished(t0, "m"))
	if err := d.Sync(context.Background()); err == nil {
		t.Fatal("a batch on a closed connection was committed")
	}
	d.Emit(finished(t0, "m"))
	sync_(t, d)
	if got := count(t, d, "1=1"); got != 3 {
		t.Fatalf("rows = %d, want 3: the one whose batch failed written with the last", got)
	}
}

// Rows that cannot be written (the file read-only, as SQLite's query_only
// makes it) are kept and counted, the cause is said once in plain words,
// and once writes work again the kept rows are written and the problem
// clears (issue 27: with the database read-only, rows were lost with a
// log line each while status said nothing).
func TestWriteFailuresAreKeptCountedAndSaid(t *testing.T) {
	var mu sync.Mutex
	var said []string
	d := open(t, Options{Problem: func(p string) { mu.Lock(); said = append(said, p); mu.Unlock() }})
	d.Emit(finished(t0, "m"))
	sync_(t, d)
	// The writer is idle (Sync returned) and holds its connection: the
	// pragma goes on it, and with one connection in the pool the writer
	// gets the same one back after each failure.
	if _, err := d.w.conn.ExecContext(context.Background(), "PRAGMA query_only = ON"); err != nil {
		t.Fatal(err)
	}
	d.sql.SetMaxOpenConns(1)
	for range 2 {
		d.Emit(finished(t0, "m"))
		if err := d.Sync(context.Background()); err == nil {
			t.Fatal("a batch was committed to a read-only database")
		}
	}
	if p := d.Problem(); !strings.Contains(p, "read-only") || d.Held() != 2 || d.Failed() != 0 {
		t.Fatalf("problem %q, held %d, failed %d: want read-only, 2 held, none lost", p, d.Held(), d.Failed())
	}
	if _, err := d.sql.Exec("PRAGMA query_only = OFF"); err != nil {
		t.Fatal(err)
	}
	d.sql.SetMaxOpenConns(0) // readers again beside the writer's connection
	d.Emit(finished(t0, "m"))
	sync_(t, d)
	if got := count(t, d, "1=1"); got != 4 {
		t.Fatalf("rows = %d, want 4: the kept ones written once the file could be", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if d.Problem() != "" || d.Held() != 0 || len(said) != 2 || !strings.Contains(said[0], "read-only") || said[1] != "" {
		t.Fatalf("problem %q, held %d, said %q: want it said once and cleared once", d.Problem(), d.Held(), said)
	}
}

// Past maxHeld, the oldest kept rows are lost and counted.
func TestHeldRowsAreBounded(t *testing.T) {
	d := open(t, Options{})
	rows := make([]*api.Event, maxHeld+3)
	for i := range rows {
		rows[i] = &api.Event{ID: uint64(i)}
	}
	kept := d.failedBatch(rows, errors.New("disk I/O error"))
	if len(kept) != maxHeld || d.Failed() != 3 || d.Held() != maxHeld {
		t.Fatalf("kept %d, failed %d, held %d", len(kept), d.Failed(), d.Held())
	}
	if kept[0].ID != 3 {
		t.Fatalf("kept from row %d, want the newest %d (from row 3)", kept[0].ID, maxHeld)
	}
	if p := d.Problem(); !strings.Contains(p, "disk I/O error") {
		t.Fatalf("problem %q", p)
	}
}

// The page cache is what SQLite keeps outside the Go heap for good; every
// connection of the pool gets the small one, not just the first.
func TestPageCacheIsSmall(t *testing.T) {
	d := open(t, Options{})
	ctx := context.Background()
	var conns []*sql.Conn
	for range 2 {
		c, err := d.sql.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	for i, c := range conns {
		var kib int
		if err := c.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&kib); err != nil {
			t.Fatal(err)
		}
		if kib != -256 {
			t.Fatalf("connection %d: cache_size %d, want -256 (KiB)", i, kib)
		}
	}
}

// Held rows are tried again on a timer, not only when the next row comes:
// once writes work again they are written retryHeldEvery after the last
// failure, with no new request, and the problem clears (issue 43: after a
// full disk, status said so until the next request).
func TestHeldRowsAreRetriedOnATimer(t *testing.T) {
	clk := clock.NewFake(t0)
	said := make(chan string, 4)
	d := open(t, Options{Clock: clk, Problem: func(p string) { said <- p }})
	d.Emit(finished(t0, "m"))
	sync_(t, d)
	// As in TestWriteFailuresAreKeptCountedAndSaid: the writer's own
	// connection made read-only, and the only one in the pool.
	if _, err := d.w.conn.ExecContext(context.Background(), "PRAGMA query_only = ON"); err != nil {
		t.Fatal(err)
	}
	d.sql.SetMaxOpenConns(1)
	d.Emit(finished(t0, "m"))
	if err := d.Sync(context.Background()); err == nil {
		t.Fatal("a batch was committed to a read-only database")
	}
	if p := <-said; !strings.Contains(p, "read-only") || d.Held() != 1 {
		t.Fatalf("problem %q, held %d", p, d.Held())
	}
	if _, err := d.sql.Exec("PRAGMA query_only = OFF"); err != nil {
		t.Fatal(err)
	}
	d.sql.SetMaxOpenConns(0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // a hang guard
	defer cancel()
	if err := clk.BlockUntil(ctx, 2); err != nil { // retention's timer and the retry's
		t.Fatalf("no timer for the held rows: %v", err)
	}
	clk.Advance(retryHeldEvery - time.Millisecond)
	if d.Held() != 1 || clk.Pending() != 2 {
		t.Fatalf("held %d, timers %d before retryHeldEvery passed", d.Held(), clk.Pending())
	}
	clk.Advance(time.Millisecond)
	select {
	case p := <-said:
		if p != "" {
			t.Fatalf("problem %q, want it cleared", p)
		}
	case <-ctx.Done():
		t.Fatal("the held row was not written when the timer fired")
	}
	if got := count(t, d, "1=1"); got != 2 || d.Held() != 0 || d.Problem() != "" {
		t.Fatalf("rows %d, held %d, problem %q: want the held row written and the problem gone", got, d.Held(), d.Problem())
	}
	if clk.Pending() != 1 {
		t.Errorf("%d timers after the write, want retention's alone", clk.Pending())
	}
}
