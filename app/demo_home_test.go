package app

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/subpool/subpool/internal/freeport"
	"github.com/subpool/subpool/proxy/api"
)

// startDemoHome starts a demo in a temp home and points SUBPOOL_HOME at
// it, as the line the demo prints does in a person's shell.
func startDemoHome(t *testing.T) *demo {
	t.Helper()
	d, err := startDemo(freeport.Addr(t), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	t.Setenv("SUBPOOL_HOME", d.home.dir)
	return d
}

// The demo's SUBPOOL_HOME reaches the running demo from every verb: list
// shows its credentials (it said "no credentials yet"), usage and history
// its requests, env its client key (twice: the second reads the key the
// first made), and the intro prints the export line.
func TestDemoHomeReachesTheVerbs(t *testing.T) {
	d := startDemoHome(t)
	var intro bytes.Buffer
	d.printIntro(&intro)
	if want := "export SUBPOOL_HOME=" + d.home.dir + "\n"; !strings.Contains(intro.String(), want) {
		t.Fatalf("the intro does not say %q:\n%s", want, intro.String())
	}

	code, out, errs := cli(t, "", "list", "--json")
	if code != 0 {
		t.Fatalf("list: %d %q", code, errs)
	}
	var st api.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	labels := map[string]bool{}
	for _, p := range st.Providers {
		for _, c := range p.Credentials {
			labels[c.Label] = true
		}
	}
	for _, c := range demoCreds {
		if !labels[c.label] {
			t.Errorf("list misses the demo's %s: %v", c.label, labels)
		}
	}
	if st.Listen != d.srv.Addr() {
		t.Errorf("list reached %s, not the demo on %s", st.Listen, d.srv.Addr())
	}

	if code, out, errs := cli(t, "", "usage", "--since", "30d", "--by", "credential"); code != 0 || !strings.Contains(out, "claude-max") {
		t.Errorf("usage: %d %q %q", code, out, errs)
	}
	d.send(t.Context(), "http://"+d.srv.Addr()+demoClaude.path, demoClaude.body)
	if code, out, errs := cli(t, "", "history", "-n", "5"); code != 0 || !strings.Contains(out, "claude-sonnet-4-5") {
		t.Errorf("history: %d %q %q", code, out, errs)
	}
	for i := range 2 {
		code, out, errs := cli(t, "", "env", "claude")
		if code != 0 || !strings.Contains(out, "ANTHROPIC_BASE_URL=http://"+d.srv.Addr()) {
			t.Fatalf("env #%d: %d %q %q", i+1, code, out, errs)
		}
	}
}

// A login in the demo's shell goes to the demo's simulated authorize page,
// never the real provider's, and the credential it makes joins the demo.
func TestDemoLoginGoesToTheSim(t *testing.T) {
	d := startDemoHome(t)
	withBrowser(t, func(string) error { return os.ErrNotExist }) // no browser: the test is it
	stdinR, stdinW := io.Pipe()
	outR, outW := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"login", "claude", "--label", "sim-login"}, stdinR, outW, &errb)
		outW.Close()
	}()
	var addr string
	sc := bufio.NewScanner(outR)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "http") {
			addr = sc.Text()
			break
		}
	}
	go io.Copy(io.Discard, outR)
	u, err := url.Parse(addr)
	if err != nil || "http://"+u.Host != d.oauth.URL() {
		stdinW.Close()
		t.Fatalf("the login sends the browser to %q, not the demo's sim at %s (%v)", addr, d.oauth.URL(), <-done)
	}
	// The sim's page answers at once with the callback; paste where it
	// ended, as a person without a local browser would.
	if loc := authorizeRedirect(t, addr); loc != "" {
		io.WriteString(stdinW, loc+"\n")
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("login: %d %q", code, errb.String())
		}
	case <-time.After(30 * time.Second): // hang guard
		t.Fatal("the login did not finish")
	}
	stdinW.Close()
	if _, out, _ := cli(t, "", "list"); !strings.Contains(out, "sim-login") {
		t.Fatalf("the login did not join the demo:\n%s", out)
	}
}

// demo takes --home and --listen like the others (--home was refused),
// prints the home as SUBPOOL_HOME, and clears what it wrote there when it
// stops; real time, shortened with --for.
func TestDemoTakesHomeAndListen(t *testing.T) {
	home := filepath.Join(t.TempDir(), "demo")
	addr := freeport.Addr(t)
	code, out, errs := cli(t, "", "demo", "--home", home, "--listen", addr, "--for", "200ms")
	if code != 0 {
		t.Fatalf("demo: %d %q", code, errs)
	}
	if !strings.Contains(out, "export SUBPOOL_HOME="+home+"\n") || !strings.Contains(out, "http://"+addr) {
		t.Fatalf("the demo's intro:\n%s", out)
	}
	if _, err := os.Stat(home); !os.IsNotExist(err) {
		t.Fatalf("the demo left its home behind: %v", err)
	}
}

// A folder that holds someone's real home is refused: the demo would
// write its config over theirs.
func TestDemoRefusesARealHome(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("listen = \"127.0.0.1:8787\"\n"), 0o600)
	code, _, errs := cli(t, "", "demo", "--home", home, "--listen", freeport.Addr(t), "--for", "1ms")
	if code != 1 || !strings.Contains(errs, "not a demo's home") {
		t.Fatalf("demo on a real home: %d %q", code, errs)
	}
	if b, _ := os.ReadFile(filepath.Join(home, "config.toml")); string(b) != "listen = \"127.0.0.1:8787\"\n" {
		t.Fatalf("the real home's config was touched: %q", b)
	}
	// A SUBPOOL_HOME in the environment is the person's home, never the
	// demo's: the demo makes its own and leaves that one as it was.
	t.Setenv("SUBPOOL_HOME", home)
	code, out, errs := cli(t, "", "demo", "--listen", freeport.Addr(t), "--for", "100ms")
	if code != 0 || strings.Contains(out, "SUBPOOL_HOME="+home+"\n") {
		t.Fatalf("demo with SUBPOOL_HOME set: %d %q", code, errs)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 1 {
		t.Fatalf("the demo wrote in $SUBPOOL_HOME: %v", entries)
	}
}

// A taken address: given with --listen, the error says to choose another
// with --listen; taken by default, the demo takes a free port and says so.
func TestDemoOnATakenAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()
	if _, err := startDemoListening(taken, taken, "", t.Logf, io.Discard); err == nil || !strings.Contains(err.Error(), "--listen") {
		t.Fatalf("a taken --listen: %v", err)
	}
	var said bytes.Buffer
	d, err := startDemoListening("", taken, "", t.Logf, &said)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.srv.Addr() == taken || !strings.Contains(said.String(), d.srv.Addr()) || !strings.Contains(said.String(), "--listen") {
		t.Fatalf("on %s, said %q", d.srv.Addr(), said.String())
	}
}

// A shell that still exports a stopped demo's SUBPOOL_HOME is told so, not
// shown a new empty home: the demo's temp folder is gone, or (the demo
// was killed) its files stay with nobody answering.
func TestStoppedDemoHomeSaysSo(t *testing.T) {
	d, err := startDemo(freeport.Addr(t), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	home := d.home.dir
	d.Close()
	t.Setenv("SUBPOOL_HOME", home)
	for _, args := range [][]string{{"list"}, {"history"}, {"events"}} {
		if code, out, errs := cli(t, "", args...); code != 1 || !strings.Contains(errs, "not running any more") || !isOneLine(errs) {
			t.Errorf("%v after the demo stopped: %d %q %q", args, code, out, errs)
		}
	}
	if _, err := os.Stat(home); !os.IsNotExist(err) {
		t.Fatalf("a verb made the stopped demo's home again: %v", err)
	}

	killed := t.TempDir()
	h := &demoHome{dir: killed}
	if err := h.publish(demoConfig("http://127.0.0.1:1", "127.0.0.1:1"), freeport.Addr(t), "token"); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := cli(t, "", "list", "--home", killed); code != 1 || !strings.Contains(errs, "not running any more") {
		t.Errorf("list on a killed demo's home: %d %q", code, errs)
	}
}
