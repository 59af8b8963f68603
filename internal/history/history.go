// Package history keeps one row per finished request in SQLite (history.db
// in the home) and answers the usage and history queries. It never holds a
// prompt, an answer, a body or a secret: only what request_finished
// carries.
//
// Writing stays off the request path: Emit copies the event into a bounded
// queue and returns; one goroutine commits the queue in batches (every
// 250 ms or 500 rows, whichever comes first). When the queue is full the
// row is dropped and counted, never waited for. The database runs in WAL
// mode with synchronous=NORMAL: a killed process loses at most the batch it
// had not committed, and the file always opens.
package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // pure Go: `subpool serve` builds without cgo

	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/clock"
)

// FileName is the database inside the home.
const FileName = "history.db"

// Defaults for Options.
const (
	DefaultQueue = 4096
	DefaultDays  = 90
	batchRows    = 500
	batchEvery   = 250 * time.Millisecond
	pruneEvery   = time.Hour
)

// Options configure Open.
type Options struct {
	// Days keeps rows this many days (DefaultDays when 0); older ones are
	// deleted in the background, at open and then hourly.
	Days int
	// Prices override or add to DefaultPrices, by model name.
	Prices map[string]Price
	// Lookup gives a credential's label and kind ("api_key", "oauth") when
	// the event does not carry them; nil knows nothing. It is called from
	// the writer goroutine, never on the request path.
	Lookup func(credentialID string) (label, kind string)
	// Clock dates rows that come without a time and drives retention; nil
	// is the wall clock.
	Clock clock.Clock
	// Queue bounds rows waiting to be written (DefaultQueue when 0).
	Queue int
	// Logf receives write failures; nil discards.
	Logf func(string, ...any)
	// Problem, when set, is told when writes start failing (problem in
	// plain words: "the disk is full") and when they work again (""). It
	// runs on the writer goroutine and must not block.
	Problem func(problem string)
}

// DB is an open history. Emit, Usage, List, Sync and Dropped are safe for
// concurrent use.
type DB struct {
	path   string
	sql    *sql.DB
	ro     bool
	o      Options
	prices *prices

	queue   chan *api.Event // pointers: Queue whole events would hold 2 MiB from the start
	full    chan struct{}   // batchRows are queued: commit without waiting (writer.go)
	syncReq chan chan error
	stop    chan struct{}
	done    chan struct{}
	closed  atomic.Bool
	once    sync.Once

	dropped      atomic.Int64 // this process's drops
	droppedBase  int64        // drops recorded in the file before this process
	droppedSaved int64        // this process's drops already in the file; writer only

	// Rows that could not be written: held for the next batch (up to
	// maxHeld), lost past that, and the cause in plain words while the
	// writes fail.
	failed  atomic.Int64
	held    atomic.Int64
	problem atomic.Pointer[string]

	w writer // writer goroutine only (writer.go)
}

func dsn(path string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	// SQLite's page cache (2 MiB a connection by default) lives outside
	// the Go heap and stays full once the writer has filled it: 256 KiB
	// holds the pages an append touches (the table's and indexes' right
	// edges), and the OS caches the file for the scans a query makes.
	q.Add("_pragma", "cache_size(-256)")
	if readOnly {
		q.Add("mode", "ro")
	} else {
		q.Add("_pragma", "synchronous(NORMAL)")
	}
	return "file:" + path + "?" + q.Encode()
}

// Open opens (creating if needed) the history database at path, migrates
// its schema, and starts the writer and retention. A file written by a
// newer subpool gives *ErrNewerSchema and is left untouched.
func Open(path string, o Options) (*DB, error) {
	if o.Days <= 0 {
		o.Days = DefaultDays
	}
	if o.Queue <= 0 {
		o.Queue = DefaultQueue
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if err := private(path); err != nil {
		return nil, fmt.Errorf("history: %v", err)
	}
	ctx := context.Background()
	// The version is read before anything writes (journal mode included),
	// so a newer file is refused exactly as it was found.
	sdb, v, err := openKnown(ctx, path, false)
	if err != nil {
		return nil, err
	}
	if _, err := sdb.ExecContext(ctx, "PRAGMA journal_mode=WAL"); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("history: %s: %v", path, err)
	}
	if err := migrate(ctx, sdb, v); err != nil {
		sdb.Close()
		return nil, fmt.Errorf("history: %s: %v", path, err)
	}
	// A -wal or -shm an older subpool left at 0644 (issue 43).
	for _, f := range sideFiles {
		os.Chmod(path+f, 0o600)
	}
	d := &DB{
		path: path, sql: sdb, o: o, prices: newPrices(o.Prices),
		queue:   make(chan *api.Event, o.Queue),
		full:    make(chan struct{}, 1),
		syncReq: make(chan chan error),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	d.droppedBase = d.metaInt(ctx, metaDropped)
	go d.writeLoop()
	return d, nil
}

// sideFiles are the files SQLite keeps beside the database.
var sideFiles = []string{"-wal", "-shm", "-journal"}

// private makes the database file exist at 0600 before SQLite opens it:
// SQLite gives the -wal, -shm and -journal it creates the database's own
// mode, so they are 0600 too, whatever the umask and the home's mode
// (issue 43: they were 0644, readable by anyone in a 0755 home). An empty
// file is a valid empty database.
func private(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	return os.Chmod(path, 0o600)
}

// OpenReadOnly opens an existing history for queries only (the CLI, with
// no proxy running). A missing file gives an error wrapping fs.ErrNotExist.
func OpenReadOnly(path string) (*DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	ctx := context.Background()
	sdb, v, err := openKnown(ctx, path, true)
	if err != nil {
		return nil, err
	}
	if v == 0 {
		sdb.Close()
		return nil, fmt.Errorf("history: %s: %w", path, fs.ErrNotExist)
	}
	d := &DB{path: path, sql: sdb, ro: true, prices: newPrices(nil)}
	d.droppedBase = d.metaInt(ctx, metaDropped)
	return d, nil
}

// openKnown opens path and reads its schema version, refusing a file from
// a newer subpool (*ErrNewerSchema) before anything is written to it.
func openKnown(ctx context.Context, path string, readOnly bool) (*sql.DB, int, error) {
	sdb, err := sql.Open("sqlite", dsn(path, readOnly))
	if err != nil {
		return nil, 0, fmt.Errorf("history: %v", err)
	}
	v, err := schemaVersion(ctx, sdb)
	if err != nil {
		sdb.Close()
		return nil, 0, fmt.Errorf("history: cannot read %s: %v", path, err)
	}
	if v > SchemaVersion {
		sdb.Close()
		return nil, 0, &ErrNewerSchema{Path: path, Found: v, Known: SchemaVersion}
	}
	return sdb, v, nil
}

// Emit queues a request_finished event for writing and ignores every
// other type. It never blocks: a full queue drops the row and counts it.
func (d *DB) Emit(e api.Event) {
	if e.Type != api.EventRequestFinished || d.ro || d.closed.Load() {
		return
	}
	if e.Time.IsZero() {
		e.Time = d.o.Clock.Now()
	}
	e.Snapshot = nil
	select {
	case d.queue <- &e:
		d.nudge()
	default:
		d.dropped.Add(1)
	}
}

// Failed is how many rows this process lost because they could not be
// written (more than maxHeld waiting for the cause to go); Held how many
// wait to be written again; Problem the cause while writes fail, "" once
// one works.
func (d *DB) Failed() int64 { return d.failed.Load() }

// Held: see Failed.
func (d *DB) Held() int64 { return d.held.Load() }

// Problem: see Failed.
func (d *DB) Problem() string {
	if p := d.problem.Load(); p != nil {
		return *p
	}
	return ""
}

// Dropped is how many rows were dropped for a full queue, in this process
// and (as recorded in the file) before it.
func (d *DB) Dropped() int64 { return d.droppedBase + d.dropped.Load() }

// Sync waits until every row queued before the call is committed.
func (d *DB) Sync(ctx context.Context) error {
	if d.ro {
		return nil
	}
	ack := make(chan error, 1)
	select {
	case d.syncReq <- ack:
	case <-d.done:
		return errors.New("history is closed")
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-ack:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close commits what is queued, stops the writer and closes the file.
func (d *DB) Close() error {
	d.once.Do(func() {
		d.closed.Store(true)
		if !d.ro {
			close(d.stop)
			<-d.done
		}
	})
	return d.sql.Close()
}

// Path is the database file.
func (d *DB) Path() string { return d.path }

const metaDropped = "dropped"

func (d *DB) metaInt(ctx context.Context, key string) int64 {
	var v int64
	d.sql.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = ?", key).Scan(&v)
	return v
}

// Tee returns an Emitter that hands every event to next and the finished
// requests to d too. With d nil it is next.
func Tee(next api.Emitter, d *DB) api.Emitter {
	if d == nil {
		return next
	}
	return tee{next, d}
}

type tee struct {
	next api.Emitter
	db   *DB
}

func (t tee) Emit(e api.Event) {
	if e.Type == api.EventRequestFinished && e.Time.IsZero() {
		// One time for both, so the ring and the file agree.
		e.Time = t.db.o.Clock.Now()
	}
	// The row is queued before the event goes out: whoever sees the event
	// (a test, the tray) and then asks history finds the row there after
	// a Sync.
	t.db.Emit(e)
	t.next.Emit(e)
}
