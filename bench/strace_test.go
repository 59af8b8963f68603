package main

import "testing"

// The table strace -c -f prints on SIGINT, with and without an errors
// column, and the total line that strace 6 gives a usecs/call.
func TestParseStrace(t *testing.T) {
	out := `% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 45.00    0.001234          12      1100       100 futex
 30.00    0.000800           4      1700           nanosleep
 20.00    0.000500           2       400       200 read
  5.00    0.000100           1       200           write
------ ----------- ----------- --------- --------- ----------------
100.00    0.002634           3      3400       300 total
`
	c := parseStrace(out, 100)
	if c.Futex != 11 || c.Nanosleep != 17 || c.Total != 34 {
		t.Errorf("futex %v nanosleep %v total %v, want 11, 17, 34", c.Futex, c.Nanosleep, c.Total)
	}
	if c.Top["read"] != 4 || len(c.Top) != 4 {
		t.Errorf("top = %v", c.Top)
	}
}
