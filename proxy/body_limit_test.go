package proxy

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"
)

// endless is a client that never stops uploading, counting what was read.
type endless struct{ read int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.read += int64(len(p))
	return len(p), nil
}

// A body of unknown length is read in blocks and joined: every size
// around the block boundaries and the limit comes back whole, with one
// buffer of its size when it took more than one block.
func TestReadUpToSizes(t *testing.T) {
	const limit = 3<<20 + 5
	for _, n := range []int{0, 1, bodyBlockFirst - 1, bodyBlockFirst, bodyBlockFirst + 1, 3 * bodyBlockFirst,
		bodyBlockMax, bodyBlockMax + 1, 3 << 20, limit - 1, limit} {
		body := bytes.Repeat([]byte("ab"), n/2+1)[:n]
		got, err := readUpTo(bytes.NewReader(body), limit)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("%d bytes: got %d bytes, %v", n, len(got), err)
		}
		if n > bodyBlockFirst && cap(got) != n {
			t.Errorf("%d bytes: joined into a buffer of capacity %d", n, cap(got))
		}
	}
	for _, n := range []int{limit + 1, limit + bodyBlockMax} {
		if got, err := readUpTo(bytes.NewReader(make([]byte, n)), limit); !errors.Is(err, errTooLarge) || got != nil {
			t.Fatalf("%d bytes over a limit of %d: got %d bytes, %v; want errTooLarge", n, limit, len(got), err)
		}
	}
}

// A chunked upload that never ends is refused once it passes max_body:
// read no further than the limit's first extra byte, in allocations that
// add up to about the limit, once. (io.ReadAll allocates twice the
// limit: its buffer, then the final copy; issue 27's 50 MB chunked body
// took RSS from 98 to 173 MiB.)
func TestChunkedBodyRefusedAtTheLimit(t *testing.T) {
	const limit = 8 << 20
	client := &endless{}
	r := httptest.NewRequest(http.MethodPost, "/v1/messages", io.NopCloser(client))
	r.ContentLength = -1
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, err := readBody(httptest.NewRecorder(), r, limit, time.Time{})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, errTooLarge) || got != nil {
		t.Fatalf("got %d bytes, %v; want errTooLarge", len(got), err)
	}
	if client.read > limit+bodyBlockMax {
		t.Errorf("read %d bytes of a body refused at %d", client.read, limit)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > limit*5/4 {
		t.Errorf("allocated %d bytes to refuse a body at a limit of %d; want at most 1.25×", alloc, limit)
	}
}

// cutShort is a chunked upload or gzip stream that breaks off after n
// bytes with io.ErrUnexpectedEOF, as net/http and compress/gzip report it.
type cutShort struct{ n int }

func (c *cutShort) Read(p []byte) (int, error) {
	if c.n == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	k := min(len(p), c.n)
	c.n -= k
	return k, nil
}

// A body that breaks off is an error, never a shorter body: in the first
// block, past it, and inside a gzip stream.
func TestBodyCutShortIsAnError(t *testing.T) {
	for _, n := range []int{0, 10, bodyBlockFirst, 3 * bodyBlockFirst} {
		if got, err := readUpTo(&cutShort{n: n}, 1<<20); !errors.Is(err, io.ErrUnexpectedEOF) || got != nil {
			t.Errorf("cut after %d bytes: got %d bytes, %v; want io.ErrUnexpectedEOF", n, len(got), err)
		}
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(bytes.Repeat([]byte(`{"model":"claude-sonnet-4-5"}`), 4000))
	zw.Close()
	whole := z.Bytes()
	if _, err := decodeOnce("gzip", whole, 1<<20); err != nil {
		t.Fatalf("the whole stream: %v", err)
	}
	var ce codingError
	if got, err := decodeOnce("gzip", whole[:len(whole)/2], 1<<20); !errors.As(err, &ce) {
		t.Errorf("half a gzip stream: got %d bytes, %v; want a codingError", len(got), err)
	}
	if got, err := decodeOnce("gzip", whole, 1000); !errors.Is(err, errTooLarge) {
		t.Errorf("decoding past the limit: got %d bytes, %v; want errTooLarge", len(got), err)
	}
}
