package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
)

// maxRewrite bounds the JSON answer held back to rewrite its model; a
// larger one (none is, in practice) goes through as the upstream sent it.
const maxRewrite = 8 << 20

// Modes of an aliasWriter, fixed by the answer's status line.
const (
	rewriteNone = iota
	rewritePass // errors and anything that is neither JSON nor SSE
	rewriteJSON // held whole, rewritten at finish
	rewriteSSE  // line by line as it arrives
)

// aliasWriter stands between the run and the client of an alias request
// and names the alias wherever a successful answer names its model. A
// stream is rewritten line by line and flushed as the run flushes; a JSON
// answer is held until finish, since its length changes.
type aliasWriter struct {
	w      http.ResponseWriter
	alias  string
	mode   int
	status int
	buf    bytes.Buffer
	done   bool
}

func (aw *aliasWriter) Header() http.Header { return aw.w.Header() }

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (aw *aliasWriter) Unwrap() http.ResponseWriter { return aw.w }

func (aw *aliasWriter) WriteHeader(code int) {
	if aw.mode != rewriteNone {
		return
	}
	h := aw.w.Header()
	switch {
	case code < 200 || code > 299:
		aw.mode = rewritePass
	case isEventStream(h):
		aw.mode = rewriteSSE
		h.Del("Content-Length")
	case bytes.Contains([]byte(h.Get("Content-Type")), []byte("json")):
		aw.mode, aw.status = rewriteJSON, code
		return
	default:
		aw.mode = rewritePass
	}
	aw.w.WriteHeader(code)
}

func (aw *aliasWriter) Write(b []byte) (int, error) {
	if aw.mode == rewriteNone {
		aw.WriteHeader(http.StatusOK)
	}
	switch aw.mode {
	case rewriteSSE:
		aw.buf.Write(b)
		if err := aw.lines(false); err != nil {
			return 0, err
		}
		return len(b), nil
	case rewriteJSON:
		aw.buf.Write(b)
		if aw.buf.Len() > maxRewrite {
			// Too large to hold: the rest goes through unchanged, with
			// the upstream's own length, which still holds.
			aw.mode = rewritePass
			aw.w.WriteHeader(aw.status)
			if _, err := aw.w.Write(aw.buf.Bytes()); err != nil {
				return 0, err
			}
			aw.buf.Reset()
		}
		return len(b), nil
	}
	return aw.w.Write(b)
}

// Flush is what http.ResponseController finds: the run flushes after
// each event of a stream.
func (aw *aliasWriter) Flush() {
	if aw.mode == rewriteSSE || aw.mode == rewritePass {
		http.NewResponseController(aw.w).Flush()
	}
}

// lines writes the complete lines held, rewritten; final writes a last
// line that lacks its newline too.
func (aw *aliasWriter) lines(final bool) error {
	b := aw.buf.Bytes()
	n := bytes.LastIndexByte(b, '\n') + 1
	if final {
		n = len(b)
	}
	if n == 0 {
		return nil
	}
	var out []byte
	for rest := b[:n]; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		rest = rest[len(line):]
		if !bytes.HasPrefix(line, []byte("data:")) {
			out = append(out, line...)
			continue
		}
		body := bytes.TrimRight(line, "\r\n")
		out = append(out, rewriteModel(body, aw.alias)...)
		out = append(out, line[len(body):]...)
	}
	aw.buf.Next(n)
	_, err := aw.w.Write(out)
	return err
}

// finish writes what was held back once the run is over. abort: the
// answer was cut midway and the connection is about to be cut; it goes
// out as it came, with no length that would make it look whole.
func (aw *aliasWriter) finish(abort bool) {
	if aw.done {
		return
	}
	aw.done = true
	switch aw.mode {
	case rewriteSSE:
		aw.lines(true)
	case rewriteJSON:
		body := aw.buf.Bytes()
		h := aw.w.Header()
		if abort {
			h.Del("Content-Length")
		} else {
			body = rewriteModel(body, aw.alias)
			h.Set("Content-Length", strconv.Itoa(len(body)))
		}
		aw.w.WriteHeader(aw.status)
		aw.w.Write(body)
	}
}

// rewriteModel returns doc with the string value of its "model" field
// replaced by alias: the top-level one (JSON answers, Chat Completions
// chunks, Responses' answer) and the one inside a top-level "message" or
// "response" object (Anthropic's message_start, Responses' stream
// events). A "model" anywhere else (a tool's input) is the model's own
// output and is left alone. doc that is cut short or not JSON comes back
// unchanged where it could not be read.
func rewriteModel(doc []byte, alias string) []byte {
	if !bytes.Contains(doc, []byte(`"model"`)) {
		return doc
	}
	q, _ := json.Marshal(alias)
	type frame struct {
		obj bool
		key string // the key this container is the value of
	}
	var stack []frame
	var out []byte
	last := 0
	key := ""
	for i := 0; i < len(doc); {
		switch doc[i] {
		case '"':
			j := stringEnd(doc, i)
			if j < 0 {
				i = len(doc)
				continue
			}
			k := skipSpace(doc, j)
			if k >= len(doc) || doc[k] != ':' || len(stack) == 0 || !stack[len(stack)-1].obj {
				i = j
				continue
			}
			key = string(doc[i+1 : j-1])
			v := skipSpace(doc, k+1)
			top := stack[0].obj && (len(stack) == 1 || len(stack) == 2 && (stack[1].key == "message" || stack[1].key == "response"))
			if key == "model" && top && v < len(doc) && doc[v] == '"' {
				if e := stringEnd(doc, v); e > 0 {
					out = append(append(out, doc[last:v]...), q...)
					last, i = e, e
					continue
				}
			}
			i = k + 1
			continue
		case '{', '[':
			stack = append(stack, frame{obj: doc[i] == '{', key: key})
			key = ""
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			key = ""
		case ',':
			key = ""
		}
		i++
	}
	if out == nil {
		return doc
	}
	return append(out, doc[last:]...)
}

// stringEnd is the index just past the JSON string starting at doc[i]
// (a '"'), or -1 when it is cut short.
func stringEnd(doc []byte, i int) int {
	for j := i + 1; j < len(doc); j++ {
		switch doc[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

func skipSpace(doc []byte, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
		i++
	}
	return i
}
