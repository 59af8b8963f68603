package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/subpool/subpool/internal/sim"
	"github.com/subpool/subpool/proxy"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/auth"
	"github.com/subpool/subpool/proxy/classify"
	"github.com/subpool/subpool/proxy/clock"
	"github.com/subpool/subpool/proxy/events"
	"github.com/subpool/subpool/proxy/pool"
)

// Every server of the overhead benchmark runs in a child process of its
// own (this binary, re-executed with -child ROLE), so that its RSS is its
// own: the simulated upstream, the bare ReverseProxy and subpool's proxy.
// A child prints "ADDR http://127.0.0.1:PORT" once it listens and exits
// when its stdin closes, so a parent that dies takes its children along.

// The SSE shape of §6 of the performance notes: 64 deltas of 16 bytes at a
// 20 ms pace. Slow streams (header X-Bench-Slow) hold connections open for
// the memory phase: 40 deltas at 100 ms.
const (
	sseChunks      = 64
	sseInterval    = 20 * time.Millisecond
	slowChunks     = 40
	slowInterval   = 100 * time.Millisecond
	chunkText      = "0123456789abcde " // 16 bytes
	clientKey      = "sp-bench-client-key-0123456789abcdef"
	benchCredCount = 4
)

// pathReset, answered by every child before its real handler, makes the
// upstream forget its records.
const pathReset = "/_bench/reset"

func runChild(role, upstream string) error {
	var h http.Handler
	var reset func()
	switch role {
	case "upstream":
		fast := sim.New(sim.Options{Chunks: sseChunks, ChunkInterval: sseInterval, ChunkText: chunkText, Stamp: true, DiscardBodies: true})
		slow := sim.New(sim.Options{Chunks: slowChunks, ChunkInterval: slowInterval, ChunkText: chunkText, Stamp: true, DiscardBodies: true})
		// Without a quota the sim reports a 4000-a-minute request budget
		// per key, and subpool honours a spent budget by waiting for its
		// reset: at the bench's rates that measures a minute's wait, not
		// the proxy. The proxies' keys get a budget no run reaches.
		roomy := func() {
			keys := append([]string(nil), servedKeys...)
			for i := range benchCredCount {
				keys = append(keys, "sk-bench-key-"+strconv.Itoa(i))
			}
			for _, s := range []*sim.Server{fast, slow} {
				for _, k := range keys {
					s.SetQuota(k, sim.Quota{Requests: 1 << 30, Tokens: 1 << 40})
				}
			}
		}
		roomy()
		reset = func() { fast.Reset(); slow.Reset(); roomy() }
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Bench-Slow") != "" {
				slow.ServeHTTP(w, r)
				return
			}
			fast.ServeHTTP(w, r)
		})
	case "bare":
		h = bareProxy(upstream)
	case "subpool":
		h = subpoolProxy(upstream)
	default:
		return fmt.Errorf("unknown child role %q", role)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: control(h, reset), ReadHeaderTimeout: 30 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(ln)
	fmt.Printf("ADDR http://%s\n", ln.Addr())
	io.Copy(io.Discard, os.Stdin)
	return nil
}

func control(h http.Handler, reset func()) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == pathReset {
			if reset != nil {
				reset()
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// bareProxy is the floor: the standard library's ReverseProxy with what a
// careful Go proxy sets (Rewrite + SetURL, immediate flushing, a pool of
// copy buffers) and the same transport tuning as subpool's, so that the
// two differ in what subpool does per request, not in connection reuse.
func bareProxy(upstream string) http.Handler {
	target, err := url.Parse(upstream)
	if err != nil {
		panic(err)
	}
	return &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		FlushInterval: -1,
		BufferPool:    &bufferPool{},
		Transport:     proxy.NewTransport(10 * time.Minute),
		ErrorLog:      log.New(io.Discard, "", 0),
	}
}

type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v := b.p.Get(); v != nil {
		return *(v.(*[]byte))
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

// subpoolProxy is subpool's proxy as `subpool serve` assembles it: the
// client key required, a pool of API keys, the real classifier, events
// into the hub with one subscriber draining it (a connected tray).
func subpoolProxy(upstream string) http.Handler {
	hub := events.NewHub(clock.Real{}, 1024)
	sub, _ := hub.Subscribe(0, 0)
	go func() {
		for range sub.C() {
		}
	}()
	p := pool.New(clock.Real{}, pool.Config{}, hub)
	p.SetProvider("anthropic", classify.LimitCredential)
	for i := range benchCredCount {
		id := "key-" + strconv.Itoa(i)
		p.Add(pool.Credential{ID: id, Provider: "anthropic", Label: id, Kind: api.KindAPIKey})
	}
	return proxy.New(proxy.Options{
		Pool: p, Auth: keyAuth{}, Events: hub,
		ClientKey: func() string { return clientKey },
		Providers: map[string]*proxy.Provider{"anthropic": {Name: "anthropic", Wire: "anthropic", BaseURL: upstream,
			Profile: classify.Lookup("anthropic")}},
		SoleProviderMax: 2 * time.Minute, CapacityMax: 5 * time.Minute,
	})
}

// keyAuth injects each credential's API key, as the app's secrets do
// once the keychain has answered.
type keyAuth struct{}

func (keyAuth) Auth(_ context.Context, cred pool.Credential, refresh bool) (auth.Auth, error) {
	if refresh {
		return auth.Auth{}, auth.ErrNoRefresh
	}
	return auth.Auth{Header: http.Header{"X-Api-Key": {"sk-bench-" + cred.ID}}}, nil
}

// child is a running child process.
type child struct {
	role  string
	url   string
	cmd   *exec.Cmd
	stdin io.Closer
}

// startChild starts this binary as a child in role.
func startChild(role, upstream string, pin string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"-child", role, "-upstream", upstream}
	var cmd *exec.Cmd
	if pin != "" {
		cmd = exec.Command("taskset", append([]string{"-c", pin, self}, args...)...)
	} else {
		cmd = exec.Command(self, args...)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	errOut, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{role: role, cmd: cmd, stdin: in}
	go func() {
		sc := bufio.NewScanner(errOut)
		for sc.Scan() {
			fmt.Fprintln(os.Stderr, sc.Text())
		}
		// A line past the scanner's limit ends the scan: the rest is
		// still drained, or the child would block writing its log.
		io.Copy(os.Stderr, errOut)
	}()
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if s, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
				line <- s
			}
		}
	}()
	select {
	case c.url = <-line:
		return c, nil
	case <-time.After(20 * time.Second):
		c.stop()
		return nil, errors.New(role + " child did not start")
	}
}

func (c *child) pid() int { return c.cmd.Process.Pid }

func (c *child) stop() {
	c.stdin.Close()
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
}

// rss is the child's resident set (VmRSS) in bytes.
func (c *child) rss() (int64, error) { return vmRSS(c.pid()) }

func vmRSS(pid int) (int64, error) { return procStatus(pid, "VmRSS") }

// cpuTime is a process's user + system CPU time (/proc/PID/stat, all its
// threads, in clock ticks of 10 ms: sum over enough work).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces; the fields after it are fixed.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, errors.New("short /proc/PID/stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond, errors.Join(err1, err2)
}

// procStatus reads one "kB" field of /proc/PID/status, in bytes.
func procStatus(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			f := strings.Fields(v)
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no " + field)
}
