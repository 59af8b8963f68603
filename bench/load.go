package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// arm is one way to reach the upstream: directly, through the bare
// ReverseProxy, or through subpool.
type arm struct {
	name   string
	url    string // base URL
	key    string // x-api-key: an upstream credential, or subpool's client key
	proc   proc   // the proxy's process; nil for direct
	client *http.Client
	body   string // the JSON request; jsonBody unless withBody
	// sent counts requests answered, shared by withBody's copies.
	sent *atomic.Int64
}

// withBody is the same arm sending another JSON request.
func (a *arm) withBody(body string) *arm {
	b := *a
	b.body = body
	return &b
}

// proc is a server process an arm reaches: a bench child or the served
// binary.
type proc interface {
	pid() int
	rss() (int64, error)
}

func newArm(name, url, key string, proc proc) *arm {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        2048,
		MaxIdleConnsPerHost: 2048,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &arm{name: name, url: url, key: key, proc: proc, client: &http.Client{Transport: tr, Timeout: time.Minute}, body: jsonBody,
		sent: new(atomic.Int64)}
}

// bigBody is a Claude Code turn deep into a session: 256 KiB of history.
var bigBody = func() string {
	turn := `{"role":"user","content":[{"type":"text","text":"` + strings.Repeat("lorem ipsum dolor sit amet, ", 36) + `"}]}`
	var b strings.Builder
	b.WriteString(`{"model":"claude-sonnet-4-5","max_tokens":64,"metadata":{"user_id":"user_0f3c_account__session_5f0c3a0e-0d7e-4f7e-9a55-0b8f1e7c2d11"},"messages":[`)
	for b.Len() < 256<<10 {
		b.WriteString(turn)
		b.WriteByte(',')
	}
	b.WriteString(`{"role":"user","content":"hi"}]}`)
	return b.String()
}()

const (
	jsonBody   = `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
	streamBody = `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
)

func (a *arm) request(ctx context.Context, body string, slow bool) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url+"/v1/messages", bytes.NewReader([]byte(body)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("X-Api-Key", a.key)
	if slow {
		req.Header.Set("X-Bench-Slow", "1")
	}
	return req, nil
}

// once sends one small JSON request and reads the whole answer.
func (a *arm) once(ctx context.Context) (time.Duration, error) {
	req, err := a.request(ctx, a.body, false)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	a.sent.Add(1)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: status %d", a.name, resp.StatusCode)
	}
	return d, err
}

// loadResult is one closed-loop run.
type loadResult struct {
	lat      []time.Duration
	errors   int
	elapsed  time.Duration
	firstErr error
}

func (r loadResult) rps() float64 { return float64(len(r.lat)) / r.elapsed.Seconds() }

// closedLoop runs conc workers back to back until count requests are done
// (count > 0) or dur has passed.
func (a *arm) closedLoop(conc, count int, dur time.Duration) loadResult {
	ctx, cancel := context.WithTimeout(context.Background(), max(dur, time.Minute))
	defer cancel()
	var mu sync.Mutex
	var res loadResult
	var issued atomic.Int64
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, 256)
			errs := 0
			var first error
			for {
				if count > 0 {
					if issued.Add(1) > int64(count) {
						break
					}
				} else if time.Now().After(deadline) {
					break
				}
				d, err := a.once(ctx)
				if err != nil {
					errs++
					if first == nil {
						first = err
					}
					if ctx.Err() != nil {
						break
					}
					continue
				}
				local = append(local, d)
			}
			mu.Lock()
			res.lat = append(res.lat, local...)
			res.errors += errs
			if res.firstErr == nil {
				res.firstErr = first
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

// streamResult is what one SSE stream looked like from the client.
type streamResult struct {
	ttfb   time.Duration   // request sent → first body byte
	ttft   time.Duration   // request sent → first content delta
	frames int             // events received
	gaps   []time.Duration // between consecutive content deltas
	delays []time.Duration // per content delta: received − emitted (sim's stamp)
	err    error
}

var (
	deltaName = []byte("event: content_block_delta")
	stampKey  = []byte(`"sim_emit_unix_nano":`)
)

// stream opens one SSE answer and reads it to the end, timing each event
// as its last line arrives.
func (a *arm) stream(ctx context.Context, slow bool) streamResult {
	var r streamResult
	req, err := a.request(ctx, streamBody, slow)
	if err != nil {
		r.err = err
		return r
	}
	start := time.Now()
	resp, err := a.client.Do(req)
	if err != nil {
		r.err = err
		return r
	}
	defer resp.Body.Close()
	a.sent.Add(1)
	if resp.StatusCode != http.StatusOK {
		r.err = fmt.Errorf("%s: status %d", a.name, resp.StatusCode)
		return r
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	isDelta := false
	var last time.Time
	first := true
	for {
		line, err := br.ReadSlice('\n')
		now := time.Now()
		if first && len(line) > 0 {
			r.ttfb = now.Sub(start)
			first = false
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				r.err = err
			}
			return r
		}
		switch {
		case bytes.HasPrefix(line, []byte("event:")):
			isDelta = bytes.HasPrefix(line, deltaName)
		case bytes.HasPrefix(line, []byte("data:")):
			r.frames++
			if !isDelta {
				continue
			}
			if r.ttft == 0 {
				r.ttft = now.Sub(start)
			} else {
				r.gaps = append(r.gaps, now.Sub(last))
			}
			last = now
			if i := bytes.Index(line, stampKey); i >= 0 {
				rest := line[i+len(stampKey):]
				j := bytes.IndexAny(rest, "},")
				if j > 0 {
					if ns, err := strconv.ParseInt(string(rest[:j]), 10, 64); err == nil {
						r.delays = append(r.delays, now.Sub(time.Unix(0, ns)))
					}
				}
			}
		}
	}
}

// broken says why a stream that should have carried want frames is
// broken, or nil. A proxy may end a failed stream cleanly, with an error
// event in it (subpool does, once bytes are out): short is broken all the
// same, or a proxy that cuts connections would be counted worse than one
// that ends streams early.
func (r streamResult) broken(want int) error {
	if r.err != nil {
		return r.err
	}
	if r.frames < want {
		return fmt.Errorf("the stream ended after %d of %d frames", r.frames, want)
	}
	return nil
}

// wave opens n streams, their starts spread evenly over spread, and waits
// for all of them. onTick, if set, runs every 100 ms while they run.
func (a *arm) wave(n int, slow bool, spread time.Duration, onTick func()) []streamResult {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := make([]streamResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if spread > 0 {
				time.Sleep(spread * time.Duration(i) / time.Duration(n))
			}
			out[i] = a.stream(ctx, slow)
		}()
	}
	if onTick != nil {
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return out
			case <-t.C:
				onTick()
			}
		}
	}
	wg.Wait()
	return out
}

// upload sends a JSON request of size bytes with no length (chunked, as a
// client streaming its body sends it) and returns the answer's status.
func (a *arm) upload(size int) (int, error) {
	pr, pw := io.Pipe()
	go func() {
		block := bytes.Repeat([]byte("x"), 64<<10)
		pw.Write([]byte(`{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"`))
		for sent := 0; sent < size; sent += len(block) {
			if _, err := pw.Write(block); err != nil {
				return // the proxy answered and stopped reading
			}
		}
		pw.Write([]byte(`"}]}`))
		pw.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := a.request(ctx, "", false)
	if err != nil {
		return 0, err
	}
	req.Body, req.ContentLength, req.GetBody = pr, -1, nil
	resp, err := a.client.Do(req)
	if err != nil {
		pr.CloseWithError(err)
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	pr.Close()
	return resp.StatusCode, nil
}

// post hits a control path of a child.
func post(url string) {
	resp, err := http.Post(url, "text/plain", nil)
	if err == nil {
		resp.Body.Close()
	}
}
