package history

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

const insertColumns = `INSERT INTO requests (ts, duration_ms, ttfb_ms, provider, credential_id, label, kind,
	client, client_app, path, model, served_model, fallback_to, status, class, attempts, waited_ms,
	input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd) VALUES `

const rowParams = `(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`

// insertRows rows go in one statement: every Exec has a fixed cost in
// the driver, and sharing it takes about a quarter off the writer's CPU
// per row (BenchmarkCommitRow). 32 rows of 22 columns stay far below
// SQLite's limit on parameters (32766).
const insertRows = 32

func insertSQL(rows int) string {
	return insertColumns + strings.Repeat(rowParams+",", rows-1) + rowParams
}

// writeLoop is the one writer. The first row after a quiet spell starts
// a batch; the rows behind it wait in the queue without waking the writer
// until batchEvery has passed or batchRows are queued (nudge), then the
// whole queue is committed in one transaction. Taking each row as it came
// would be a goroutine hand-off on every request the proxy serves;
// gathering them costs one wake-up per batch.
//
// The batch interval runs on the wall clock on purpose: it only coalesces
// writes, and a fake clock that nobody advances must not hold rows back.
// Retention, which is behaviour, runs on Options.Clock.
func (d *DB) writeLoop() {
	defer close(d.done)
	defer d.w.close()
	defer func() {
		if p := recover(); p != nil {
			d.o.Logf("history: writer stopped: %v\n%s", p, debug.Stack())
			d.closed.Store(true)
		}
	}()
	d.prune()
	prune := d.o.Clock.NewTimer(pruneEvery)
	defer prune.Stop()
	batch := make([]*api.Event, 0, batchRows)
	gather := time.NewTimer(batchEvery)
	gather.Stop()
	defer gather.Stop()
	gathering := false
	var acks []chan error
	var retry []*api.Event                      // rows a failed commit left, tried again first
	again := d.o.Clock.NewTimer(retryHeldEvery) // held rows' next try
	again.Stop()
	defer again.Stop()
	flush := func() {
		d.drain(&batch)
		if len(retry) > 0 {
			batch = append(retry, batch...)
			retry = nil
		}
		err := d.commit(batch)
		if err != nil {
			retry = d.failedBatch(batch, err)
			again.Reset(retryHeldEvery)
		} else {
			d.recovered()
			again.Stop()
		}
		if retry == nil {
			clear(batch) // let the rows' strings be collected while the writer idles
			batch = batch[:0]
		} else {
			batch = make([]*api.Event, 0, batchRows)
		}
		for _, a := range acks {
			a <- err
		}
		acks = acks[:0]
		gather.Stop()
		gathering = false
	}
	for {
		queue := d.queue
		if gathering {
			queue = nil // the rows wait in the channel until the timer
		}
		select {
		case e := <-queue:
			batch = append(batch, e)
			gather.Reset(batchEvery)
			gathering = true
		case <-gather.C:
			flush()
		case <-d.full:
			flush()
		case ack := <-d.syncReq:
			// Everything queued before Sync was called is in the channel
			// now; flush takes it all.
			acks = append(acks, ack)
			flush()
		case <-again.C():
			flush()
		case <-prune.C():
			d.prune()
			prune.Reset(pruneEvery)
		case <-d.stop:
			flush()
			return
		}
	}
}

// nudge is Emit's side of batching: once batchRows wait, it wakes the
// writer rather than let the queue fill before the timer. Below that it
// costs a length check. A nudge left over from a batch already taken only
// commits the next one early.
func (d *DB) nudge() {
	if len(d.queue) < batchRows {
		return
	}
	select {
	case d.full <- struct{}{}:
	default:
	}
}

func (d *DB) drain(batch *[]*api.Event) {
	for {
		select {
		case e := <-d.queue:
			*batch = append(*batch, e)
		default:
			return
		}
	}
}

// commit writes rows in one transaction, and the drop count with them.
//
// It runs on the driver's connection itself (sql.Conn.Raw): database/sql
// would check every argument and copy them all into a new
// []driver.NamedValue on every Exec, about a tenth of the writer's CPU per
// row (BenchmarkCommitRow).
func (d *DB) commit(rows []*api.Event) error {
	drops := d.dropped.Load()
	if len(rows) == 0 && drops == d.droppedSaved {
		return nil
	}
	ctx := context.Background()
	if d.w.conn == nil {
		c, err := d.sql.Conn(ctx)
		if err != nil {
			return err
		}
		d.w.conn = c
	}
	err := d.w.conn.Raw(func(dc any) error {
		c, ok := dc.(driverConn)
		if !ok {
			return fmt.Errorf("driver connection %T cannot write history", dc)
		}
		return d.commitOn(ctx, c, rows, drops)
	})
	if err != nil {
		// The connection or a statement may be what failed: the next batch
		// starts on fresh ones.
		d.w.close()
		return err
	}
	d.droppedSaved = drops
	return nil
}

// driverConn is what commit needs of the driver's connection.
type driverConn interface {
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
}

func (d *DB) commitOn(ctx context.Context, c driverConn, rows []*api.Event, drops int64) error {
	tx, err := c.BeginTx(ctx, driver.TxOptions{})
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		// On an error, and on a panic (a Lookup's): the writer stops
		// but the proxy goes on.
		if !committed {
			tx.Rollback()
		}
	}()
	if err := d.insert(ctx, c, rows); err != nil {
		return fmt.Errorf("insert: %v", err)
	}
	if drops != d.droppedSaved {
		if _, err := c.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES (?, ?)
			ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
			[]driver.NamedValue{{Ordinal: 1, Value: metaDropped}, {Ordinal: 2, Value: d.droppedBase + drops}}); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	committed = true
	return nil
}

// writer is what the writer goroutine keeps from one batch to the next.
type writer struct {
	conn    *sql.Conn                      // held, so that inserts stay prepared on it
	inserts map[int]driver.StmtExecContext // the INSERT of so many rows
	args    []driver.NamedValue
}

// close gives the connection back to the pool, without its statements.
func (w *writer) close() {
	if w.conn == nil {
		return
	}
	w.conn.Raw(func(any) error {
		for _, st := range w.inserts {
			st.(driver.Stmt).Close()
		}
		return nil
	})
	w.conn.Close()
	*w = writer{}
}

// insert writes rows insertRows at a time and the rest in chunks of
// falling powers of two, so that a batch of any size takes a few Execs.
func (d *DB) insert(ctx context.Context, c driverConn, rows []*api.Event) error {
	args := d.w.args
	for n := insertRows; len(rows) > 0; n /= 2 {
		if len(rows) < n {
			continue
		}
		st, err := d.insertStmt(ctx, c, n)
		if err != nil {
			return err
		}
		for len(rows) >= n {
			args = args[:0]
			for _, e := range rows[:n] {
				args = d.rowArgs(args, e)
			}
			if _, err := st.ExecContext(ctx, args); err != nil {
				return err
			}
			rows = rows[n:]
		}
	}
	// Keep the slice, not the rows' strings.
	clear(args)
	d.w.args = args[:0]
	return nil
}

// insertStmt is the INSERT of n rows, prepared the first time: parsing
// hundreds of parameters costs more than writing a small batch.
func (d *DB) insertStmt(ctx context.Context, c driverConn, n int) (driver.StmtExecContext, error) {
	if st := d.w.inserts[n]; st != nil {
		return st, nil
	}
	ds, err := c.PrepareContext(ctx, insertSQL(n))
	if err != nil {
		return nil, err
	}
	st, ok := ds.(driver.StmtExecContext)
	if !ok {
		ds.Close()
		return nil, fmt.Errorf("driver statement %T cannot write history", ds)
	}
	if d.w.inserts == nil {
		d.w.inserts = map[int]driver.StmtExecContext{}
	}
	d.w.inserts[n] = st
	return st, nil
}

// rowColumns is how many values rowArgs appends.
const rowColumns = 22

// rowArgs appends e's column values to args, numbered from len(args)+1.
// Nothing converts them on the way to the driver, which takes only
// int64, float64, string and nil here: not int, nor sql.NullFloat64.
func (d *DB) rowArgs(args []driver.NamedValue, e *api.Event) []driver.NamedValue {
	label, kind := e.Label, e.CredentialKind
	if (label == "" || kind == "") && e.CredentialID != "" && d.o.Lookup != nil {
		l, k := d.o.Lookup(e.CredentialID)
		if label == "" {
			label = l
		}
		if kind == "" {
			kind = k
		}
	}
	var cost any // NULL: no price known for the model
	if kind == api.KindAPIKey {
		model := e.ServedModel
		if model == "" {
			model = e.Model
		}
		if p, ok := d.prices.lookup(model); ok {
			cost = p.cost(e.InputTokens, e.OutputTokens, e.CacheReadTokens, e.CacheWriteTokens)
		}
	}
	for _, v := range [rowColumns]any{
		e.Time.UnixMilli(), e.LatencyMS, e.TTFBMS, e.Provider, e.CredentialID, label, kind,
		e.Client, e.ClientApp, e.Path, e.Model, e.ServedModel, e.FallbackTo, int64(e.Status), e.Class, int64(e.Attempts), e.WaitedMS,
		e.InputTokens, e.OutputTokens, e.CacheReadTokens, e.CacheWriteTokens, cost,
	} {
		args = append(args, driver.NamedValue{Ordinal: len(args) + 1, Value: v})
	}
	return args
}

// Prune deletes rows older than the retention, in chunks so that readers
// and the writer are never held up long. It returns how many went.
func (d *DB) Prune(ctx context.Context) (int64, error) {
	cutoff := d.o.Clock.Now().Add(-time.Duration(d.o.Days) * 24 * time.Hour).UnixMilli()
	var total int64
	for {
		res, err := d.sql.ExecContext(ctx, `DELETE FROM requests WHERE id IN
			(SELECT id FROM requests WHERE ts < ? ORDER BY ts LIMIT 5000)`, cutoff)
		if err != nil {
			return total, err
		}
		n, _ := res.RowsAffected()
		total += n
		if n < 5000 {
			return total, nil
		}
	}
}

func (d *DB) prune() {
	if _, err := d.Prune(context.Background()); err != nil {
		d.o.Logf("history: retention: %v", err)
	}
}

// retryHeldEvery is how often rows held by a failed write are tried
// again while no new row comes, not only with the next row: after a full
// disk the next request may be hours away, and status said the disk was
// full until then (issue 43). A failed try costs one transaction, and
// status clears within this long of the cause going. On Options.Clock.
const retryHeldEvery = 10 * time.Second

// maxHeld bounds the rows kept for another try while writes fail: about
// what a busy minute brings, so a full disk costs memory only that far.
const maxHeld = 4096

// failedBatch keeps the rows of a commit that failed for the next one,
// up to maxHeld (the oldest past that are lost and counted), and says the
// cause once, when the writes start failing. Writer goroutine only.
func (d *DB) failedBatch(rows []*api.Event, err error) []*api.Event {
	if n := len(rows) - maxHeld; n > 0 {
		d.failed.Add(int64(n))
		rows = rows[n:]
	}
	d.held.Store(int64(len(rows)))
	p := problemWords(err)
	if old := d.problem.Load(); old == nil || *old != p {
		d.problem.Store(&p)
		d.o.Logf("history: rows not written, %d kept for another try: %v", len(rows), err)
		if d.o.Problem != nil {
			d.o.Problem(p)
		}
	}
	return rows
}

// recovered clears the problem once a commit worked. Writer goroutine only.
func (d *DB) recovered() {
	d.held.Store(0)
	if d.problem.Swap(nil) != nil {
		d.o.Logf("history: writing again")
		if d.o.Problem != nil {
			d.o.Problem("")
		}
	}
}

// problemWords says why a write failed in words a person can act on.
func problemWords(err error) string {
	msg := strings.ToLower(err.Error())
	switch {
	case errors.Is(err, syscall.ENOSPC) || strings.Contains(msg, "disk is full") || strings.Contains(msg, "no space left"):
		return "the disk is full: free some space, and the rows kept meanwhile are written"
	case errors.Is(err, syscall.EROFS) || strings.Contains(msg, "readonly") || strings.Contains(msg, "read-only"):
		return "the history file is read-only: make it writable (" + FileName + " in the home)"
	}
	msg = err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return "the history cannot be written: " + msg
}
