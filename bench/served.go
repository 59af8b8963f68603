package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
)

// served is `subpool serve` as a user runs it: the built binary on a home
// set up through its own CLI, with one admin websocket subscriber attached
// the way the tray attaches.
type served struct {
	bin, home string
	url       string
	clientKey string
	cmd       *exec.Cmd
	done      chan struct{} // closed when the process has exited
	log       *tailBuffer

	ws     *websocket.Conn
	wsDone chan struct{}
	events atomic.Int64 // messages the subscriber received
}

// servedKeys are the two API keys the home holds; the upstream accepts any.
var servedKeys = []string{"sk-bench-served-k1", "sk-bench-served-k2"}

// startServed writes a home, adds the keys and starts the server. pin,
// when set, is a taskset CPU list.
func startServed(ctx context.Context, bin, upstream, pin string) (*served, error) {
	return startServedConf(ctx, bin, upstream, pin, "")
}

// startServedConf is startServed with extra appended to config.toml.
func startServedConf(ctx context.Context, bin, upstream, pin, extra string) (*served, error) {
	home, err := os.MkdirTemp("", "subpool-bench-home-")
	if err != nil {
		return nil, err
	}
	s := &served{bin: bin, home: home, done: make(chan struct{}), log: &tailBuffer{max: 40}}
	fail := func(err error) (*served, error) {
		s.stop()
		return nil, err
	}
	if err := s.writeHome(ctx, upstream, extra); err != nil {
		return fail(err)
	}
	args := []string{"serve", "--home", home, "--listen", "127.0.0.1:0"}
	if pin != "" {
		s.cmd = exec.Command("taskset", append([]string{"-c", pin, bin}, args...)...)
	} else {
		s.cmd = exec.Command(bin, args...)
	}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		return fail(err)
	}
	if err := s.cmd.Start(); err != nil {
		return fail(err)
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			s.log.add(line)
			if _, rest, ok := strings.Cut(line, "listening on http://"); ok {
				select {
				case addr <- strings.Fields(rest)[0]:
				default:
				}
			}
		}
		// A line past the scanner's limit ends the scan: the rest is
		// still drained, or the server would block writing its log.
		io.Copy(io.Discard, stderr)
	}()
	select {
	case a := <-addr:
		s.url = "http://" + a
	case <-s.done:
		return fail(fmt.Errorf("subpool serve exited at start: %s", s.log))
	case <-time.After(30 * time.Second):
		return fail(fmt.Errorf("subpool serve did not report listening: %s", s.log))
	}
	if err := s.subscribe(); err != nil {
		return fail(err)
	}
	return s, nil
}

// writeHome writes a user's home (config.toml with extra after it),
// adds the keys through the CLI and reads the client key it prints.
func (s *served) writeHome(ctx context.Context, upstream, extra string) error {
	// A user's home: the client key required, the file keychain (what the
	// tests use on a box without Secret Service), the upstream configured.
	cfg := fmt.Sprintf(`listen = "127.0.0.1:0"
require_client_key = true

[keychain]
backend = "file"

[providers.anthropic]
base_url = %q
`, upstream) + extra
	if err := os.WriteFile(filepath.Join(s.home, "config.toml"), []byte(cfg), 0o600); err != nil {
		return err
	}
	for i, k := range servedKeys {
		if _, err := s.cli(ctx, k+"\n", "add-key", "anthropic", "--label", fmt.Sprintf("k%d", i+1)); err != nil {
			return err
		}
	}
	out, err := s.cli(ctx, "", "env", "shell")
	if err != nil {
		return err
	}
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "export ANTHROPIC_AUTH_TOKEN="); ok {
			s.clientKey = strings.Trim(strings.TrimSpace(v), `'"`)
		}
	}
	if s.clientKey == "" {
		return errors.New("`subpool env shell` printed no ANTHROPIC_AUTH_TOKEN")
	}
	return nil
}

// cli runs one subpool verb on the home and returns its stdout.
func (s *served) cli(ctx context.Context, stdin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, s.bin, append(args, "--home", s.home)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("subpool %s: %v: %s", args[0], err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// subscribe connects one events websocket, as the tray does, and drains
// it for the life of the server.
func (s *served) subscribe() error {
	tok, err := os.ReadFile(filepath.Join(s.home, "admin-token"))
	if err != nil {
		return fmt.Errorf("admin token: %v", err)
	}
	h := http.Header{"Authorization": {"Bearer " + strings.TrimSpace(string(tok))}}
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	ws, resp, err := d.Dial("ws"+strings.TrimPrefix(s.url, "http")+"/subpool/v1/events", h)
	if err != nil {
		if resp != nil {
			err = fmt.Errorf("%v (status %d)", err, resp.StatusCode)
		}
		return fmt.Errorf("events websocket: %v", err)
	}
	s.ws, s.wsDone = ws, make(chan struct{})
	go func() {
		defer close(s.wsDone)
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				return
			}
			s.events.Add(1)
		}
	}()
	return nil
}

func (s *served) pid() int { return s.cmd.Process.Pid }

func (s *served) rss() (int64, error) { return vmRSS(s.pid()) }

// stop ends the server with SIGTERM (a clean stop, as the service does),
// then removes the home.
func (s *served) stop() {
	if s.ws != nil {
		s.ws.Close()
		<-s.wsDone
	}
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(20 * time.Second):
			s.cmd.Process.Kill()
			<-s.done
		}
	}
	os.RemoveAll(s.home)
}

// tailBuffer keeps a process's last log lines for error messages.
type tailBuffer struct {
	mu    sync.Mutex
	max   int
	lines []string
}

func (t *tailBuffer) add(l string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, l)
	if len(t.lines) > t.max {
		t.lines = t.lines[len(t.lines)-t.max:]
	}
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 0 {
		return "(no output)"
	}
	return strings.Join(t.lines, " | ")
}
