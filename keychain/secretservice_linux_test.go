package keychain

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dbus "github.com/godbus/dbus/v5"
	ss "github.com/zalando/go-keyring/secret_service"
)

const (
	secretsName    = "org.freedesktop.secrets"
	secretsPath    = dbus.ObjectPath("/org/freedesktop/secrets")
	loginPath      = dbus.ObjectPath("/org/freedesktop/secrets/collection/login")
	passwordEnv    = "SUBPOOL_KEYRING_TEST_PASSWORD"
	helperDoneMark = "keychain helper finished"
)

// fakePrompter takes the place of gcr-prompter, the program gnome-keyring asks to show its
// unlock dialog. It is the only fake in these tests: keyring, bus and lock are real. With
// hang set it never answers until released, like a dialog nobody types into; otherwise it
// refuses at once, like gcr-prompter failing for want of a display.
type fakePrompter struct {
	hang    bool
	release chan struct{}
	asked   atomic.Int32
}

// BeginPrompting is the first call gnome-keyring 42 makes to a prompter (interface
// org.gnome.keyring.internal.Prompter, seen with dbus-monitor).
func (p *fakePrompter) BeginPrompting(callback dbus.ObjectPath) *dbus.Error {
	p.asked.Add(1)
	if p.hang {
		<-p.release
	}
	return &dbus.Error{Name: "org.freedesktop.DBus.Error.Failed", Body: []any{"nobody answers this prompt"}}
}

// lockLogin locks the login collection of the test session's gnome-keyring, with p standing in
// for its prompter. At the end it releases p, runs settle (which waits for whatever was
// blocked on p, so that no prompt is left to go to the real gcr-prompter), and unlocks the
// collection with the password scripts/keyring-test.sh created it with, so the next tests
// find it usable.
func lockLogin(t *testing.T, p *fakePrompter, settle func()) {
	t.Helper()
	requireRealKeychain(t)
	password := os.Getenv(passwordEnv)
	if password == "" {
		t.Fatalf("%s is unset: this test locks the login keyring and must be able to unlock it again; run it via scripts/keyring-test.sh, whose throwaway keyring has a known password", passwordEnv)
	}
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		t.Fatal(err)
	}
	p.release = make(chan struct{})
	if err := conn.Export(p, "/org/gnome/keyring/Prompter", "org.gnome.keyring.internal.Prompter"); err != nil {
		t.Fatal(err)
	}
	reply, err := conn.RequestName("org.gnome.keyring.SystemPrompter", dbus.NameFlagDoNotQueue)
	if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("cannot stand in for the prompter: %v, %v", reply, err)
	}
	t.Cleanup(func() {
		close(p.release)
		if settle != nil {
			settle()
		}
		unlockLogin(t, conn, password)
		conn.ReleaseName("org.gnome.keyring.SystemPrompter")
		conn.Close()
	})

	var locked []dbus.ObjectPath
	var prompt dbus.ObjectPath
	err = conn.Object(secretsName, secretsPath).Call("org.freedesktop.Secret.Service.Lock", 0, []dbus.ObjectPath{loginPath}).Store(&locked, &prompt)
	if err != nil {
		t.Fatal(err)
	}
	if !loginLocked(t, conn) {
		t.Fatalf("the login collection is not locked after Lock (locked %v, prompt %v)", locked, prompt)
	}
}

func loginLocked(t *testing.T, conn *dbus.Conn) bool {
	t.Helper()
	v, err := conn.Object(secretsName, loginPath).GetProperty("org.freedesktop.Secret.Collection.Locked")
	if err != nil {
		t.Fatal(err)
	}
	locked, ok := v.Value().(bool)
	if !ok {
		t.Fatalf("Locked property is %v", v)
	}
	return locked
}

// unlockLogin uses gnome-keyring's own unlock-with-password call; the standard Unlock would
// ask the prompter, which is the thing these tests take away.
func unlockLogin(t *testing.T, conn *dbus.Conn, password string) {
	t.Helper()
	svc := conn.Object(secretsName, secretsPath)
	var out dbus.Variant
	var session dbus.ObjectPath
	if err := svc.Call("org.freedesktop.Secret.Service.OpenSession", 0, "plain", dbus.MakeVariant("")).Store(&out, &session); err != nil {
		t.Fatalf("unlocking the login keyring: %v", err)
	}
	secret := ss.Secret{Session: session, Parameters: []byte{}, Value: []byte(password), ContentType: "text/plain"}
	err := svc.Call("org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface.UnlockWithMasterPassword", 0, loginPath, secret).Err
	if err != nil || loginLocked(t, conn) {
		t.Fatalf("could not unlock the login keyring again (%v); later tests will fail", err)
	}
}

// A locked keyring whose unlock prompt nobody answers blocks go-keyring forever; the store
// gives up after its timeout with ErrTimeout.
func TestOSKeychainLockedTimesOut(t *testing.T) {
	s, _ := realOS(t, 300*time.Millisecond)
	if err := s.Set("before", "stored while unlocked"); err != nil {
		t.Fatal(err)
	}
	// Each call that times out leaves a go-keyring goroutine waiting on its prompt; the
	// cleanup waits for them to return once the prompter refuses.
	hung := 0
	returned := make(chan struct{}, 2)
	s.(*chunked).items.(*osItems).released = func() { returned <- struct{}{} }
	p := &fakePrompter{hang: true}
	lockLogin(t, p, func() {
		for range hung {
			<-returned
		}
	})

	err := s.Set("cred/x", "sk-locked-secret")
	if errors.Is(err, ErrTimeout) {
		hung++
	} else {
		t.Fatalf("Set into a locked keyring: %v, want ErrTimeout", err)
	}
	for _, want := range []string{`storing "cred/x"`, "did not answer", "unlock", `backend = "file"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "sk-locked-secret") {
		t.Fatalf("error contains the secret: %v", err)
	}
	if _, err := s.Get("before"); errors.Is(err, ErrTimeout) {
		hung++
	} else {
		t.Fatalf("Get from a locked keyring: %v, want ErrTimeout", err)
	}
	if p.asked.Load() == 0 {
		t.Fatal("the keyring never asked for its unlock prompt, so the hang came from elsewhere")
	}
}

// A locked keyring whose prompt fails (as gcr-prompter does without a display) makes
// go-keyring return at once; the store says the keychain is locked.
func TestOSKeychainLockedPromptRefused(t *testing.T) {
	s, _ := realOS(t, DefaultTimeout)
	p := &fakePrompter{}
	lockLogin(t, p, nil)

	err := s.Set("cred/x", "sk-locked-secret")
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("Set into a locked keyring with a refused prompt: %v, want ErrUnavailable saying it is locked", err)
	}
	if strings.Contains(err.Error(), "sk-locked-secret") {
		t.Fatalf("error contains the secret: %v", err)
	}
	if p.asked.Load() == 0 {
		t.Fatal("the keyring never asked for its unlock prompt")
	}
}

// runHelper runs helper in a new process of this test binary with env added, and fails the
// test unless it ran to the end. go-keyring talks to the bus godbus connected to first, so a
// test that needs another bus needs another process.
func runHelper(t *testing.T, helper string, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.v")
	cmd.Env = append(env, "KEYCHAIN_HELPER="+helper)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), helperDoneMark) {
		t.Fatalf("helper %s: %v\n%s", helper, err, out)
	}
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "keychain: ") {
			t.Log(strings.TrimSpace(line))
		}
	}
	return string(out)
}

func helperProcess(t *testing.T, name string) {
	switch name {
	case "os-unavailable":
		s := NewOS("subpool-test-helper", DefaultTimeout)
		want := os.Getenv("KEYCHAIN_HELPER_WANT")
		setErr := s.Set("k", "sk-helper-secret")
		_, getErr := s.Get("k")
		for _, err := range []error{setErr, getErr} {
			if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %v, want ErrUnavailable mentioning %q", err, want)
			}
			if strings.Contains(err.Error(), "sk-helper-secret") {
				t.Fatalf("error contains the secret: %v", err)
			}
			if !strings.Contains(err.Error(), `backend = "file"`) {
				t.Fatalf("error does not suggest the file backend: %v", err)
			}
		}
		fmt.Println(setErr)
	default:
		t.Fatalf("unknown helper %q", name)
	}
	fmt.Println(helperDoneMark)
}

// noAutolaunch returns a PATH holding only a fake dbus-launch that leaves a mark, and the mark.
// godbus runs dbus-launch when it finds no bus, which leaves daemons behind on a server.
func noAutolaunch(t *testing.T) (path, mark string) {
	dir := t.TempDir()
	mark = filepath.Join(dir, "dbus-launch-ran")
	script := "#!/bin/sh\ntouch " + mark + "\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "dbus-launch"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, mark
}

// With no session bus at all, as on a server over ssh, the store says so at once and does
// not autolaunch one.
func TestOSNoSessionBus(t *testing.T) {
	runtimeDir := filepath.Join("/run/user", strconv.Itoa(os.Getuid()))
	if sessionBusKnown(func(string) string { return "" }, runtimeDir) {
		t.Skipf("%s holds a session bus, which godbus would find even without DBUS_SESSION_BUS_ADDRESS", runtimeDir)
	}
	path, mark := noAutolaunch(t)
	out := runHelper(t, "os-unavailable", "PATH="+path, "KEYCHAIN_HELPER_WANT=no D-Bus session bus")
	if _, err := os.Stat(mark); err == nil {
		t.Fatalf("dbus-launch was run\n%s", out)
	}
}

// A bus address pointing at nothing, as after the desktop session ended, is reported at once.
func TestOSDeadSessionBus(t *testing.T) {
	path, _ := noAutolaunch(t)
	addr := "unix:path=" + filepath.Join(t.TempDir(), "no-bus-here")
	runHelper(t, "os-unavailable", "PATH="+path, "DBUS_SESSION_BUS_ADDRESS="+addr, "KEYCHAIN_HELPER_WANT=cannot connect to the D-Bus session bus")
}

// A session bus without any Secret Service, as on a minimal desktop or in a container, is
// reported at once.
func TestOSNoSecretService(t *testing.T) {
	addr := startEmptyBus(t)
	runHelper(t, "os-unavailable", "DBUS_SESSION_BUS_ADDRESS="+addr, "KEYCHAIN_HELPER_WANT=no Secret Service")
}

// startEmptyBus starts a private dbus-daemon that can start no services, so nothing will ever
// own org.freedesktop.secrets on it, and returns its address.
func startEmptyBus(t *testing.T) string {
	t.Helper()
	daemon, err := exec.LookPath("dbus-daemon")
	if err != nil {
		if os.Getenv(keyringTestsEnv) == "1" {
			t.Fatalf("dbus-daemon not found: %v", err)
		}
		t.Skipf("dbus-daemon not found (%v); scripts/keyring-test.sh requires it", err)
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "bus.conf")
	err = os.WriteFile(config, []byte(`<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir=`+dir+`</listen>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(daemon, "--config-file="+config, "--nofork", "--print-address=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon printed no address: %v", err)
	}
	return strings.TrimSpace(addr)
}

func TestSessionBusKnown(t *testing.T) {
	empty := t.TempDir()
	withBus := t.TempDir()
	if err := os.WriteFile(filepath.Join(withBus, "bus"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	withFile := t.TempDir()
	if err := os.WriteFile(filepath.Join(withFile, "dbus-session"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "DBUS_SESSION_BUS_ADDRESS" {
				return v
			}
			return ""
		}
	}
	tests := []struct {
		name, addr, runtimeDir string
		want                   bool
	}{
		{"address set", "unix:path=/tmp/bus", empty, true},
		{"nothing", "", empty, false},
		// godbus treats "autolaunch:" like no address and runs dbus-launch.
		{"autolaunch", "autolaunch:", empty, false},
		{"systemd user bus", "", withBus, true},
		{"dbus-session file", "", withFile, true},
		{"missing runtime dir", "", filepath.Join(empty, "nope"), false},
	}
	for _, tt := range tests {
		if got := sessionBusKnown(env(tt.addr), tt.runtimeDir); got != tt.want {
			t.Errorf("%s: sessionBusKnown = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestExplainPlatform(t *testing.T) {
	unknown := "org.freedesktop.DBus.Error.ServiceUnknown"
	tests := []struct {
		name string
		err  error
		want string // "" for no explanation
	}{
		{"service unknown (value)", dbus.Error{Name: unknown, Body: []any{"The name org.freedesktop.secrets was not provided by any .service files"}}, "no Secret Service"},
		{"service unknown (pointer)", &dbus.Error{Name: unknown, Body: []any{"x"}}, "no Secret Service"},
		{"unlock failed", errors.New("failed to unlock correct collection '/org/freedesktop/secrets/aliases/default'"), "locked"},
		{"dial", &net.OpError{Op: "dial", Net: "unix", Err: errors.New("connection refused")}, "cannot connect"},
		{"other dbus error", dbus.Error{Name: "org.freedesktop.DBus.Error.NoReply", Body: []any{"x"}}, ""},
		{"other", errors.New("something else"), ""},
	}
	for _, tt := range tests {
		got := explainPlatform(tt.err)
		switch {
		case tt.want == "" && got != nil:
			t.Errorf("%s: explained as %v", tt.name, got)
		case tt.want != "" && (!errors.Is(got, ErrUnavailable) || !strings.Contains(got.Error(), tt.want)):
			t.Errorf("%s: %v, want ErrUnavailable mentioning %q", tt.name, got, tt.want)
		}
	}
}
