package history

import (
	"context"
	"database/sql"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

const insertSQL = `INSERT INTO requests (ts, duration_ms, ttfb_ms, provider, credential_id, label, kind,
	client, client_app, path, model, served_model, fallback_to, status, class, attempts, waited_ms,
	input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd)
	VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`

// writeLoop is the one writer. It gathers a batch (up to batchRows, or
// what arrived within batchEvery of its first row), commits it in one
// transaction, and prunes old rows now and then.
//
// The batch interval runs on the wall clock on purpose: it only coalesces
// writes, and a fake clock that nobody advances must not hold rows back.
// Retention, which is behaviour, runs on Options.Clock.
func (d *DB) writeLoop() {
	defer close(d.done)
	defer func() {
		if p := recover(); p != nil {
			d.o.Logf("history: writer stopped: %v\n%s", p, debug.Stack())
			d.closed.Store(true)
		}
	}()
	d.prune()
	prune := d.o.Clock.NewTimer(pruneEvery)
	defer prune.Stop()
	batch := make([]api.Event, 0, batchRows)
	var coalesce *time.Timer
	var coalesceC <-chan time.Time
	var acks []chan error
	flush := func() {
		err := d.commit(batch)
		if err != nil {
			d.o.Logf("history: %d rows not written: %v", len(batch), err)
		}
		batch = batch[:0]
		for _, a := range acks {
			a <- err
		}
		acks = acks[:0]
		if coalesce != nil {
			coalesce.Stop()
			coalesce, coalesceC = nil, nil
		}
	}
	for {
		select {
		case e := <-d.queue:
			batch = append(batch, e)
			if len(batch) >= batchRows {
				flush()
			} else if coalesce == nil {
				coalesce = time.NewTimer(batchEvery)
				coalesceC = coalesce.C
			}
		case <-coalesceC:
			flush()
		case ack := <-d.syncReq:
			// Everything queued before Sync was called is in the channel
			// now; take it all, then commit.
			d.drain(&batch)
			acks = append(acks, ack)
			flush()
		case <-prune.C():
			d.prune()
			prune.Reset(pruneEvery)
		case <-d.stop:
			d.drain(&batch)
			flush()
			return
		}
	}
}

func (d *DB) drain(batch *[]api.Event) {
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
func (d *DB) commit(rows []api.Event) error {
	drops := d.dropped.Load()
	if len(rows) == 0 && drops == d.droppedSaved {
		return nil
	}
	ctx := context.Background()
	tx, err := d.sql.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if len(rows) > 0 {
		st, err := tx.PrepareContext(ctx, insertSQL)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, e := range rows {
			if _, err := st.ExecContext(ctx, d.rowArgs(e)...); err != nil {
				return fmt.Errorf("insert: %v", err)
			}
		}
	}
	if drops != d.droppedSaved {
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES (?, ?)
			ON CONFLICT(key) DO UPDATE SET value = excluded.value`, metaDropped, d.droppedBase+drops); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	d.droppedSaved = drops
	return nil
}

func (d *DB) rowArgs(e api.Event) []any {
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
	var cost sql.NullFloat64
	if kind == api.KindAPIKey {
		model := e.ServedModel
		if model == "" {
			model = e.Model
		}
		if p, ok := d.prices.lookup(model); ok {
			cost = sql.NullFloat64{Float64: p.cost(e.InputTokens, e.OutputTokens, e.CacheReadTokens, e.CacheWriteTokens), Valid: true}
		}
	}
	return []any{
		e.Time.UnixMilli(), e.LatencyMS, e.TTFBMS, e.Provider, e.CredentialID, label, kind,
		e.Client, e.ClientApp, e.Path, e.Model, e.ServedModel, e.FallbackTo, e.Status, e.Class, e.Attempts, e.WaitedMS,
		e.InputTokens, e.OutputTokens, e.CacheReadTokens, e.CacheWriteTokens, cost,
	}
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
