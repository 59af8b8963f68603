package main

import (
	"fmt"
	"math"
	"strings"
)

// servedFinding explains, from this run's numbers, what `subpool serve`
// costs per request beyond the bare proxy and beyond its own engine (the
// in-process handler arm): CPU, system calls, events, and the profile's
// functions that a bare proxy does not run.
func servedFinding(r *Results) string {
	o := r.Overhead
	if o == nil {
		return ""
	}
	var b strings.Builder
	c := o.CPU
	fmt.Fprintf(&b, "CPU per request at concurrency 32: bare %.0f µs, subpool serve %.0f µs", float64(c["bare"]), float64(c["subpool"]))
	if !math.IsNaN(float64(o.HandlerCPU)) && o.HandlerCPU > 0 {
		fmt.Fprintf(&b, ", the same engine in-process without the app around it %.0f µs", float64(o.HandlerCPU))
	}
	b.WriteString(". ")
	prof, profiled := o.Profiles["subpool"]
	share := func(fn string) string {
		for _, row := range prof.Own {
			if strings.HasSuffix(row.Func, fn) {
				return fmt.Sprintf("%.1f %%", row.Pct)
			}
		}
		return "under 0.3 %"
	}
	if n := o.Requests; n > 0 && o.Events > 0 {
		fmt.Fprintf(&b, "The events subscriber received %d messages for about %d requests through subpool (%.2f per request): "+
			"every request emits `request_finished` (proxy/serve.go) to the hub and the history. Neither listener wakes per "+
			"event any more: the websocket writer (proxy/admin/stream.go) lets events gather for 10 ms after the first and "+
			"sends them, one message each, in one socket write; the history writer (proxy/history/writer.go) takes no row "+
			"until 250 ms or 500 rows have gathered and inserts 32 rows per statement. ", o.Events, n, float64(o.Events)/float64(n))
		if profiled {
			fmt.Fprintf(&b, "What is left is work per event, off the request path: its JSON encoding (`WriteJSON` %s) and its "+
				"SQLite row (`history.(*DB).commit` %s, about 5 µs a row in `BenchmarkCommitRow`). ", share("websocket.(*Conn).WriteJSON"), share("history.(*DB).commit"))
		}
	}
	if sc := o.Syscalls; sc != nil {
		bs, ss := sc["bare"], sc["subpool"]
		fmt.Fprintf(&b, "Under strace at concurrency 1: futex %.1f vs %.1f per request (bare vs subpool), nanosleep %.1f vs %.1f, write %.1f vs %.1f, all calls %.1f vs %.1f. ",
			bs.Futex, ss.Futex, bs.Nanosleep, ss.Nanosleep, bs.Top["write"], ss.Top["write"], bs.Total, ss.Total)
	}
	if profiled {
		var own []string
		for _, row := range prof.Own {
			if len(own) == 12 {
				break
			}
			own = append(own, fmt.Sprintf("`%s` %.1f %%", strings.TrimPrefix(row.Func, "github.com/subpool/subpool/"), row.Pct))
		}
		if len(own) > 0 {
			fmt.Fprintf(&b, "In the perf profile under load (share of samples including callees), subpool's own functions, the event websocket, JSON and the history database: %s. ", strings.Join(own, ", "))
		}
		fmt.Fprintf(&b, "Beyond the listeners, the engine reads every response: `tokens.(*Meter).JSON` %s, `classify.ReadWindows` %s, "+
			"`proxy.copyHeader` %s. ", share("tokens.(*Meter).JSON"), share("classify.ReadWindows"), share("proxy.copyHeader"))
	}
	b.WriteString(`

**Done** (the engine, proxy/): the token meter (proxy/tokens/tokens.go ` + "`Meter.JSON`" + `) no longer decodes the whole
answer: gjson finds the ` + "`usage`" + ` object and reads its counts too, with no encoding/json, in 1 or 2 allocations
(` + "`BenchmarkMeterJSON`" + ` in proxy/tokens/bench_test.go; ` + "`FuzzJSON`" + ` checks it against the old reader).
` + "`copyHeader`" + ` (proxy/streaming.go) shares the upstream's value slices, capped so that an append copies.
` + "`classify.ReadWindows`" + ` (proxy/classify/windows.go, headers.go) compares header keys in the case they arrive and
keeps its state on the stack: about 2 µs and 2 allocations on an Anthropic API-key answer, where it was about 4 µs
and 25 (` + "`BenchmarkReadWindowsAPIKey`" + `). It still runs on every answer, successes included: every answer's windows
must reach the pool. ` + "`subpool serve`" + ` sets the collector's target to 200 unless GOGC is set (app/cli.go
` + "`serveGCPercent`" + `, ` + "`tuneGC`" + `): nearly all a request allocates is garbage when it ends, and at 100 the collector
cost about a tenth of the CPU per request.

**Left:** work the product asks for on every request: the history row (SQLite in pure Go via modernc, about 5 µs of
CPU a row on the writer goroutine, ` + "`BenchmarkCommitRow`" + ` in proxy/history), the windows read, token metering, the
client key check and the events.`)
	return b.String()
}
