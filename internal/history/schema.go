package history

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations[i] takes the schema from version i to i+1. Append only: a
// shipped migration never changes, since databases out there already ran it.
var migrations = []string{
	// 1: one row per finished request; ts is the finish time in unix ms.
	`CREATE TABLE requests (
		id                 INTEGER PRIMARY KEY,
		ts                 INTEGER NOT NULL,
		duration_ms        INTEGER NOT NULL DEFAULT 0,
		ttfb_ms            INTEGER NOT NULL DEFAULT 0,
		provider           TEXT    NOT NULL DEFAULT '',
		credential_id      TEXT    NOT NULL DEFAULT '',
		label              TEXT    NOT NULL DEFAULT '',
		kind               TEXT    NOT NULL DEFAULT '',
		client             TEXT    NOT NULL DEFAULT '',
		client_app         TEXT    NOT NULL DEFAULT '',
		path               TEXT    NOT NULL DEFAULT '',
		model              TEXT    NOT NULL DEFAULT '',
		served_model       TEXT    NOT NULL DEFAULT '',
		fallback_to        TEXT    NOT NULL DEFAULT '',
		status             INTEGER NOT NULL DEFAULT 0,
		class              TEXT    NOT NULL DEFAULT '',
		attempts           INTEGER NOT NULL DEFAULT 0,
		waited_ms          INTEGER NOT NULL DEFAULT 0,
		input_tokens       INTEGER NOT NULL DEFAULT 0,
		output_tokens      INTEGER NOT NULL DEFAULT 0,
		cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
		cache_write_tokens INTEGER NOT NULL DEFAULT 0,
		cost_usd           REAL
	);
	CREATE INDEX requests_ts ON requests(ts);
	CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);`,
}

// SchemaVersion is the schema this build writes.
var SchemaVersion = len(migrations)

// ErrNewerSchema is returned by Open for a database written by a newer
// subpool; the file is left as it is.
type ErrNewerSchema struct {
	Path         string
	Found, Known int
}

func (e *ErrNewerSchema) Error() string {
	return fmt.Sprintf("%s has history schema version %d, newer than this subpool knows (%d); history is off until subpool is upgraded (the file is left untouched)", e.Path, e.Found, e.Known)
}

func schemaVersion(ctx context.Context, db *sql.DB) (int, error) {
	var v int
	err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	return v, err
}

// migrate brings the schema to SchemaVersion, each step in its own
// transaction with the version bump, so a crash leaves a whole version.
func migrate(ctx context.Context, db *sql.DB, from int) error {
	for v := from; v < len(migrations); v++ {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			tx.Rollback()
			return fmt.Errorf("history schema %d: %v", v+1, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1)); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}
