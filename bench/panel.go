package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The panel's memory (issue 42): the real tray binary under an Xvfb and a
// D-Bus session bus of the bench's own, its RSS sampled every few seconds.
// Two arms run side by side, each on its own display and bus:
//
//   - "panel open": `subpool demo --gui` on a bus with no StatusNotifier
//     host, so the panel is a window, drawn all along, with the demo's
//     traffic changing it every second;
//   - "panel hidden": `subpool tray` on a fresh home, with a StatusNotifier
//     watcher of the bench's on its bus (panel_watcher.go), so the icon is
//     registered and the panel never shown;
//   - "no panel": `subpool demo` without --gui, the same proxy, upstreams
//     and traffic as the first arm without any UI: what of the first arm's
//     growth is the demo's own.
//
// The first minute is start-up (fonts, GL, the first textures); what the
// targets judge is the growth after it and the highest RSS.

const (
	panelEvery      = 5 * time.Second
	panelWarmup     = time.Minute
	panelGrowthMax  = 5 << 20   // growth after the first minute
	panelRSSMax     = 200 << 20 // the highest RSS
	panelDurFull    = 10 * time.Minute
	panelDurQuick   = 2 * time.Minute
	panelBinaryName = "subpool-tray"
)

// PanelBench is the panel's memory.
type PanelBench struct {
	Duration string     `json:"duration"`
	Every    string     `json:"every"`
	Display  string     `json:"display"` // the X server and GL the arms ran on
	Arms     []PanelArm `json:"arms,omitempty"`
	Skipped  string     `json:"skipped,omitempty"` // why it was not measured
}

// PanelArm is one arm's samples and what they come to.
type PanelArm struct {
	Name    string        `json:"name"`
	Command string        `json:"command"`
	Samples []PanelSample `json:"samples"`
	Err     string        `json:"error,omitempty"`
}

// PanelSample is one reading of /proc/PID/status.
type PanelSample struct {
	At   float64 `json:"at_s"`
	RSS  int64   `json:"rss"`
	Anon int64   `json:"rss_anon"`
}

// AtWarmup is the RSS at the end of the first minute; Growth how far it
// rose above that afterwards; Max the highest RSS.
func (a PanelArm) AtWarmup() int64 {
	for _, s := range a.Samples {
		if s.At >= panelWarmup.Seconds() {
			return s.RSS
		}
	}
	return 0
}

func (a PanelArm) Growth() int64 {
	w, g := a.AtWarmup(), int64(0)
	for _, s := range a.Samples {
		if s.At >= panelWarmup.Seconds() {
			g = max(g, s.RSS-w)
		}
	}
	return g
}

func (a PanelArm) Max() int64 {
	var m int64
	for _, s := range a.Samples {
		m = max(m, s.RSS)
	}
	return m
}

// Met: the arm ran its whole time, grew under panelGrowthMax after the
// first minute and stayed under panelRSSMax.
func (a PanelArm) Met(dur time.Duration) bool {
	n := len(a.Samples)
	return a.Err == "" && n > 0 && a.Samples[n-1].At >= (dur-panelEvery).Seconds() && a.AtWarmup() > 0 &&
		a.Growth() < panelGrowthMax && a.Max() < panelRSSMax
}

func panelDuration(quick bool) time.Duration {
	if quick {
		return panelDurQuick
	}
	return panelDurFull
}

// panelPart measures both arms for dur. Without cgo, Xvfb or dbus-daemon
// it says so in Skipped instead.
func panelPart(ctx context.Context, bin string, dur time.Duration, logf func(string, ...any)) *PanelBench {
	pb := &PanelBench{Duration: dur.String(), Every: panelEvery.String()}
	for _, tool := range []string{"Xvfb", "dbus-daemon"} {
		if _, err := exec.LookPath(tool); err != nil {
			pb.Skipped = tool + " is not installed (apt-get install xvfb dbus)"
			return pb
		}
	}
	dir, err := os.MkdirTemp("", "subpool-panel-")
	if err != nil {
		pb.Skipped = err.Error()
		return pb
	}
	defer os.RemoveAll(dir)
	if bin == "" {
		bin = filepath.Join(dir, panelBinaryName)
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			pb.Skipped = "the tray did not build (it needs cgo and Fyne's C libraries): " + firstLine(string(out), err)
			return pb
		}
	}
	logf("panel: the tray's RSS for %s, panel open, panel hidden and the demo without it, each under its own Xvfb", dur)
	arms := []string{"open", "hidden", "none"}
	pb.Arms = make([]PanelArm, len(arms))
	done := make(chan struct{}, len(arms))
	for i, which := range arms {
		go func() { pb.Arms[i] = panelArm(ctx, bin, dir, which, dur); done <- struct{}{} }()
	}
	for range arms {
		<-done
	}
	pb.Display = "Xvfb 1280x1024x24, Mesa's software GL (llvmpipe), as GLFW finds it"
	return pb
}

// freeAddr is a loopback address nobody listens on now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// panelArm runs one arm on its own X server and bus.
func panelArm(ctx context.Context, bin, dir, which string, dur time.Duration) PanelArm {
	arm := PanelArm{Name: "panel " + which}
	if which == "none" {
		arm.Name = "no panel"
	}
	fail := func(err error) PanelArm { arm.Err = err.Error(); return arm }
	display, stopX, err := startXvfb()
	if err != nil {
		return fail(err)
	}
	defer stopX()
	bus, stopBus, err := startBus()
	if err != nil {
		return fail(err)
	}
	defer stopBus()
	addr, err := freeAddr()
	if err != nil {
		return fail(err)
	}
	args := []string{"demo", "--gui", "--listen", addr}
	arm.Command = "subpool demo --gui"
	if which == "none" {
		args, arm.Command = []string{"demo", "--listen", addr}, "subpool demo"
	}
	if which == "hidden" {
		stopW, err := serveWatcher(bus)
		if err != nil {
			return fail(err)
		}
		defer stopW()
		home := filepath.Join(dir, "home-"+which)
		cfg := fmt.Sprintf("listen = %q\n[keychain]\nbackend = \"file\"\n", addr)
		if err := writeHome(home, cfg); err != nil {
			return fail(err)
		}
		args = []string{"tray", "--home", home}
		arm.Command = "subpool tray --home NEW"
	}
	logPath := filepath.Join(dir, "tray-"+which+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return fail(err)
	}
	defer logFile.Close()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "DISPLAY="+display, "DBUS_SESSION_BUS_ADDRESS="+bus, "SUBPOOL_HOME=")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	arm.Samples, err = samplePanel(ctx, cmd.Process.Pid, dur)
	if err != nil {
		return fail(err)
	}
	return checkTrayLog(arm, logPath, which)
}

// checkTrayLog fails an arm whose tray did not run as the arm means: the
// hidden one must have registered its icon, the open one must have found
// no host and opened its window.
func checkTrayLog(arm PanelArm, path, which string) PanelArm {
	b, _ := os.ReadFile(path)
	log := string(b)
	switch {
	case which == "hidden" && (strings.Contains(log, "failed to register") || strings.Contains(log, "No tray icon")):
		arm.Err = "the tray found no StatusNotifier host"
	case which == "open" && !strings.Contains(log, "No tray icon"):
		arm.Err = "the demo did not open its panel as a window (no \"No tray icon\" in its log)"
	}
	return arm
}

func writeHome(home, cfg string) error {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600)
}

// samplePanel reads pid's RSS every panelEvery until dur has passed.
func samplePanel(ctx context.Context, pid int, dur time.Duration) ([]PanelSample, error) {
	var out []PanelSample
	start := time.Now()
	t := time.NewTicker(panelEvery)
	defer t.Stop()
	for {
		rss, err := procStatus(pid, "VmRSS")
		if err != nil {
			return out, fmt.Errorf("the tray ended after %s: %v", time.Since(start).Round(time.Second), err)
		}
		anon, _ := procStatus(pid, "RssAnon")
		out = append(out, PanelSample{At: time.Since(start).Seconds(), RSS: rss, Anon: anon})
		if time.Since(start) >= dur {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-t.C:
		}
	}
}

// startXvfb starts an X server on a display it picks itself (-displayfd).
func startXvfb() (display string, stop func(), err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return "", nil, err
	}
	defer r.Close()
	cmd := exec.Command("Xvfb", "-displayfd", "3", "-screen", "0", "1280x1024x24", "-nolisten", "tcp")
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		w.Close()
		return "", nil, err
	}
	w.Close()
	stop = func() { cmd.Process.Kill(); cmd.Wait() }
	line, err := readLineWithin(r, 10*time.Second)
	if _, convErr := strconv.Atoi(line); err != nil || convErr != nil {
		stop()
		return "", nil, fmt.Errorf("Xvfb did not say its display: %q %v", line, err)
	}
	return ":" + line, stop, nil
}

// startBus starts a D-Bus session bus of the bench's own.
func startBus() (addr string, stop func(), err error) {
	cmd := exec.Command("dbus-daemon", "--session", "--nofork", "--print-address=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() { cmd.Process.Kill(); cmd.Wait() }
	addr, err = readLineWithin(out, 10*time.Second)
	if err != nil || addr == "" {
		stop()
		return "", nil, fmt.Errorf("dbus-daemon did not say its address: %v", err)
	}
	return addr, stop, nil
}

func readLineWithin(r interface{ Read([]byte) (int, error) }, d time.Duration) (string, error) {
	got := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(r).ReadString('\n')
		got <- strings.TrimSpace(l)
	}()
	select {
	case l := <-got:
		return l, nil
	case <-time.After(d):
		return "", errors.New("no answer in " + d.String())
	}
}

// panelMain measures the panel alone and keeps it in the results at out
// (the other parts as they were), then renders the report again.
func panelMain(out, md string, dur time.Duration) error {
	res, err := readResults(out)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), dur+5*time.Minute)
	defer cancel()
	res.Panel = panelPart(ctx, "", dur, func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) })
	if err := writeResults(out, &res); err != nil {
		return err
	}
	return rewrite(out, md, out)
}
