package history

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// How fast the writer commits when rows come as fast as Emit can queue
// them. rows/s is what reached the file; drops are what the queue refused.
func BenchmarkWriteFlatOut(b *testing.B) {
	d, err := Open(filepath.Join(b.TempDir(), FileName), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	e := finished(time.Now(), "claude-sonnet-4-5")
	e.InputTokens, e.OutputTokens = 1200, 300
	start := time.Now()
	for b.Loop() {
		d.Emit(e)
	}
	if err := d.Sync(context.Background()); err != nil {
		b.Fatal(err)
	}
	el := time.Since(start)
	b.ReportMetric(float64(int64(b.N)-d.Dropped())/el.Seconds(), "rows/s")
	b.ReportMetric(float64(d.Dropped()), "drops")
}

// The bar: 1,000 finished requests a second, sustained, none
// dropped. Each iteration is one second of that load.
func BenchmarkSustained1000PerSecond(b *testing.B) {
	d, err := Open(filepath.Join(b.TempDir(), FileName), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	e := finished(time.Now(), "claude-sonnet-4-5")
	e.InputTokens, e.OutputTokens = 1200, 300
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for b.Loop() {
		for range 100 { // 100 ticks of 10 rows
			<-tick.C
			for range 10 {
				d.Emit(e)
			}
		}
	}
	if err := d.Sync(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(d.Dropped()), "drops")
	if d.Dropped() > 0 {
		b.Fatalf("%d rows dropped at 1,000 rows/s", d.Dropped())
	}
}
