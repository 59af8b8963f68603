package main

import (
	"encoding/json"
	"math"
	"testing"
)

// parseBench reads go test's benchmark lines, drops the GOMAXPROCS
// suffix and takes the median of repeated runs.
func TestParseBench(t *testing.T) {
	out := `goos: linux
pkg: github.com/subpool/subpool/proxy
BenchmarkMicroPick8-2          	 1000000	       300.0 ns/op	     112 B/op	       1 allocs/op
BenchmarkMicroPick8-2          	 1000000	       200.0 ns/op	     112 B/op	       1 allocs/op
BenchmarkMicroPick8-2          	 1000000	       250.0 ns/op	     112 B/op	       1 allocs/op
BenchmarkMicroInspect/body=260KiB-2       	     160	   1481711 ns/op	 180.03 MB/s	     608 B/op	      13 allocs/op
PASS
pkg: github.com/subpool/subpool/proxy/classify
BenchmarkMicroClassify429-2   	  127045	      1799 ns/op	     128 B/op	       1 allocs/op
`
	ms := parseBench(out)
	if len(ms) != 3 {
		t.Fatalf("got %d benchmarks: %+v", len(ms), ms)
	}
	want := []struct {
		name, pkg  string
		ns, allocs float64
		runs       int
	}{
		{"Pick8", "github.com/subpool/subpool/proxy", 250, 1, 3},
		{"Inspect/body=260KiB", "github.com/subpool/subpool/proxy", 1481711, 13, 1},
		{"Classify429", "github.com/subpool/subpool/proxy/classify", 1799, 1, 1},
	}
	for i, w := range want {
		m := ms[i]
		if m.Name != w.name || m.Package != w.pkg || float64(m.NsOp) != w.ns || float64(m.AllocsOp) != w.allocs || m.Runs != w.runs {
			t.Errorf("%d: got %+v, want %+v", i, m, w)
		}
	}
}

func TestMedianIgnoresNaN(t *testing.T) {
	if m := median([]float64{3, math.NaN(), 1, 2}); m != 2 {
		t.Errorf("median = %v, want 2", m)
	}
	if m := median(nil); !math.IsNaN(m) {
		t.Errorf("median of nothing = %v, want NaN", m)
	}
}

// A value that was not measured (NaN, written null) reads back as NaN.
func TestNumRoundTrip(t *testing.T) {
	var v struct{ A, B num }
	if err := json.Unmarshal([]byte(`{"A":null,"B":1.25}`), &v); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(float64(v.A)) || v.B != 1.25 {
		t.Errorf("got %v, %v", v.A, v.B)
	}
}
