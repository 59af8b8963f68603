package main

import "testing"

// perf report --stdio --sort symbol, in both modes: the first column is
// the share to keep (inclusive with --children).
func TestParsePerfReport(t *testing.T) {
	children := `# To display the perf.data header info, please use --header/--header-only options.
#
# Samples: 2K of event 'cpu-clock'
# Event count (approx.): 593000000
#
# Children      Self  Symbol
# ........  ........  ..............................
#
    62.10%     0.00%  [.] runtime.goexit.abi0
    40.00%     1.20%  [.] net/http.(*conn).serve
    12.50%    12.50%  [k] _raw_spin_unlock_irqrestore
`
	rows, n := parsePerfReport(children, true)
	if n != 2000 || len(rows) != 3 {
		t.Fatalf("samples %d rows %+v", n, rows)
	}
	if rows[1].Pct != 40 || rows[1].Func != "net/http.(*conn).serve" || rows[2].Func != "[kernel] _raw_spin_unlock_irqrestore" {
		t.Errorf("rows = %+v", rows)
	}
	flat, _ := parsePerfReport("# Samples: 873  of event 'cpu-clock'\n     3.10%  [.] runtime.futex\n"+
		"     2.02%  [.] slices.pdqsortCmpFunc[go.shape.struct { net/http.key string }]  -      -   \n", false)
	if len(flat) != 2 || flat[0].Pct != 3.1 || flat[0].Func != "runtime.futex" ||
		flat[1].Func != "slices.pdqsortCmpFunc[go.shape.struct { net/http.key string }]" {
		t.Errorf("flat = %+v", flat)
	}
}
