package history

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/subpool/subpool/proxy/api"
)

// BenchmarkCommitRow is the writer's CPU per row, in batches the size a
// busy proxy hands it: what history costs each request, off its path.
func BenchmarkCommitRow(b *testing.B) {
	d, err := Open(filepath.Join(b.TempDir(), FileName), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	rows := make([]*api.Event, batchRows)
	for i := range rows {
		e := finished(time.Now(), "claude-sonnet-4-5")
		rows[i] = &e
		rows[i].InputTokens, rows[i].OutputTokens = 1200, int64(300+i)
		rows[i].CredentialID, rows[i].Label, rows[i].CredentialKind = "k1", "work", api.KindAPIKey
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if err := d.commit(rows); err != nil {
			b.Fatal(err)
		}
		n += len(rows)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/row")
}
