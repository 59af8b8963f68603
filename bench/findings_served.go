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
				"SQLite row (`history.(*DB).commit` %s, about 6 µs a row in `BenchmarkCommitRow`). ", share("websocket.(*Conn).WriteJSON"), share("history.(*DB).commit"))
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

**Proposed fix** (the engine, proxy/): the token meter (proxy/tokens ` + "`Meter.JSON`" + `) runs ` + "`json.Unmarshal`" + ` over
the whole response to find ` + "`usage`" + `, which validates and walks every byte of the answer; decoding only the value after
the ` + "`\"usage\"`" + ` key (a ` + "`json.Decoder`" + ` on the bytes after it, as its stream path already locates it) reads a few
dozen bytes instead. ` + "`ReadWindows`" + ` on every response (3 to 4 µs and about 20 allocations on an Anthropic
API-key answer, ` + "`BenchmarkReadWindowsAPIKey`" + `) is mostly a window per API-key bucket with an RFC 3339 parse each;
on a success the request budget read by name costs 0.5 µs and no allocation (` + "`ParseBudget`" + `,
` + "`BenchmarkSuccessHeaders`" + `), so the full read could wait for a refusal or a changed value. ` + "`copyHeader`" + ` copies each value slice;
` + "`dst[k] = vs[:len(vs):len(vs)]`" + ` shares them safely (an append copies) and saves an allocation per header. The history
row is SQLite's own cost in pure Go (modernc) and stays: about 6 µs of CPU per request on the writer goroutine.`)
	return b.String()
}
