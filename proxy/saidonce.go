package proxy

import "fmt"

// A translated request's notes (a field dropped, instructions supplied)
// follow from the client's request shape, so an editor sends the same
// shape, and would get the same line in the log, on every request. Each
// distinct line is logged once, from a bounded set (recent), so a line
// may come back after many others.
const saidMax = 256

// noteOnce logs a translation's notes, each distinct line once.
func (p *Proxy) noteOnce(format string, args ...any) {
	if line := fmt.Sprintf(format, args...); p.said.add(line) {
		p.o.Logf("%s", line)
	}
}
