package classify

import (
	"fmt"
	"sync"
	"testing"
	"unsafe"
)

// A refusal seen before reuses its reason line: the same string, built
// and allocated once.
func TestReasonLineReused(t *testing.T) {
	p := Lookup("anthropic")
	r := Response{Status: 429, Header: hdr("Retry-After", "30"), Body: []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"Reused line test: would exceed your rate limit."}}`)}
	first := Classify(p, r, testNow)
	again := Classify(p, r, testNow)
	if first != again {
		t.Fatalf("verdicts differ: %+v, %+v", first, again)
	}
	if unsafe.StringData(first.Reason) != unsafe.StringData(again.Reason) {
		t.Error("the second verdict built its own line")
	}
	if n := testing.AllocsPerRun(100, func() { Classify(p, r, testNow) }); n != 0 {
		t.Errorf("%v allocations for a refusal seen before", n)
	}
}

// The table only saves work: whatever it holds, every line is the one
// buildReason makes for those inputs, also when goroutines race for the
// same slots and inputs differ only in status, code, wording, stream or
// why.
func TestReasonLineIsBuilt(t *testing.T) {
	type in struct {
		status int
		stream bool
		code   string
		why    string
		msg    string
	}
	var inputs []in
	for i := range 600 { // more than the table's slots
		inputs = append(inputs,
			in{429, false, "rate_limit_error", "account rate limit", fmt.Sprintf("Limit %d reached.", i)},
			in{529, false, "rate_limit_error", "account rate limit", fmt.Sprintf("Limit %d reached.", i)},
			in{429, true, "rate_limit_error", "account rate limit", fmt.Sprintf("Limit %d reached.", i)},
			in{429, false, "overloaded_error", "account rate limit", fmt.Sprintf("Limit %d reached.", i)},
			in{429, false, "rate_limit_error", "model overloaded", fmt.Sprintf("Limit %d reached.", i)},
			in{429, false, "", "account rate limit", ""},
		)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for round := range 3 {
				for i := range inputs {
					x := inputs[(i*(g+1)+round)%len(inputs)]
					got := reason(x.status, x.stream, []byte(x.code), x.why, []byte(x.msg))
					if want := buildReason(x.status, x.stream, []byte(x.code), x.why, []byte(x.msg)); got != want {
						t.Errorf("%+v: got %q, want %q", x, got, want)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
