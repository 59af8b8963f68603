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
	if n := o.Requests; n > 0 && o.Events > 0 {
		fmt.Fprintf(&b, "The events subscriber received %d messages for about %d requests through subpool (%.2f per request): "+
			"every request emits `request_finished` (proxy/serve.go), the hub hands it to the subscriber's channel, and the "+
			"websocket writer goroutine (proxy/admin/stream.go `serveEvents`) wakes, JSON-encodes it and writes one frame — "+
			"a goroutine hand-off, an allocation-heavy `WriteJSON` and a `write` system call per request that the bare proxy "+
			"does not have. ", o.Events, n, float64(o.Events)/float64(n))
	}
	if sc := o.Syscalls; sc != nil {
		bs, ss := sc["bare"], sc["subpool"]
		fmt.Fprintf(&b, "Under strace at concurrency 1: futex %.1f vs %.1f per request (bare vs subpool), nanosleep %.1f vs %.1f, write %.1f vs %.1f, all calls %.1f vs %.1f. ",
			bs.Futex, ss.Futex, bs.Nanosleep, ss.Nanosleep, bs.Top["write"], ss.Top["write"], bs.Total, ss.Total)
	}
	if p, ok := o.Profiles["subpool"]; ok {
		var own []string
		for _, row := range p.Own {
			if len(own) == 12 {
				break
			}
			own = append(own, fmt.Sprintf("`%s` %.1f %%", strings.TrimPrefix(row.Func, "github.com/subpool/subpool/"), row.Pct))
		}
		if len(own) > 0 {
			fmt.Fprintf(&b, "In the perf profile under load (share of samples including callees), subpool's own functions, the event websocket, JSON and the history database: %s. ", strings.Join(own, ", "))
		}
	}
	b.WriteString(`

**Proposed fix** (proxy/admin/stream.go, proxy/events): let the websocket writer drain what is queued before it
writes — after one receive from ` + "`sub.C()`" + `, take the rest without blocking and write them as one frame (a JSON
array, or several messages through one ` + "`NextWriter`" + `/flush), so a burst of request_finished costs one wake and one
write instead of one each; and make request_finished cheap to carry (a fixed struct encoded with ` + "`strconv.Append*`" + `
into a reused buffer instead of ` + "`WriteJSON`" + `'s reflection). The tray needs per-request events only to refresh
counters: coalescing them on a short ticker (say 250 ms, on the injected clock) while a subscriber is attached
would take the per-request hand-off off the request path entirely.`)
	return b.String()
}
