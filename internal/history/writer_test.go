package history

import (
	"context"
	"testing"
)

// The writer keeps its connection from batch to batch; a batch that fails
// on it must not fail the ones after.
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
	if got := count(t, d, "1=1"); got != 2 {
		t.Fatalf("rows = %d, want 2: the first and the last", got)
	}
}
