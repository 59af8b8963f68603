package keychain

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zalando/go-keyring"
)

// fakeKeyring stands in for go-keyring. While gate is open (nil or closed) it behaves like
// an in-memory keyring; while gate is an open channel every call waits on it, like a
// keychain whose unlock prompt nobody answers.
type fakeKeyring struct {
	mu    sync.Mutex
	items map[string]string
	gate  chan struct{}
	calls atomic.Int32
	// fail, if set, replaces every call's result.
	fail func(password string) error
}

func newFakeKeyring() *fakeKeyring { return &fakeKeyring{items: map[string]string{}} }

func (f *fakeKeyring) enter(password string) error {
	f.calls.Add(1)
	f.mu.Lock()
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if f.fail != nil {
		return f.fail(password)
	}
	return nil
}

func (f *fakeKeyring) Get(service, user string) (string, error) {
	if err := f.enter(""); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.items[service+"/"+user]
	if !ok {
		return "", keyring.ErrNotFound
	}
	return v, nil
}

func (f *fakeKeyring) Set(service, user, password string) error {
	if err := f.enter(password); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.items[service+"/"+user] = password
	return nil
}

func (f *fakeKeyring) Delete(service, user string) error {
	if err := f.enter(""); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.items[service+"/"+user]; !ok {
		return keyring.ErrNotFound
	}
	delete(f.items, service+"/"+user)
	return nil
}

// newFakeOS returns the OS store over kr. released receives one value each time a call that
// timed out finally returns.
func newFakeOS(kr keyringAPI, timeout time.Duration) (*chunked, *osItems, chan struct{}) {
	released := make(chan struct{}, 100)
	o := &osItems{service: "svc", timeout: timeout, kr: kr, released: func() { released <- struct{}{} }}
	return newChunked("os", o), o, released
}

func TestOSRoundTripOverFake(t *testing.T) {
	kr := newFakeKeyring()
	s, _, _ := newFakeOS(kr, time.Minute)
	secret := multibyte(10 << 10)
	if err := s.Set("k", secret); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get("k"); err != nil || got != secret {
		t.Fatalf("Get = %d bytes, %v", len(got), err)
	}
	if len(kr.items) < 6 {
		t.Fatalf("a 10 KB secret went into %d items; want it split", len(kr.items))
	}
	for k, v := range kr.items {
		if len(v) > maxItemBytes {
			t.Errorf("item %q holds %d bytes", k, len(v))
		}
	}
	if err := s.Delete("k"); err != nil {
		t.Fatal(err)
	}
	if len(kr.items) != 0 {
		t.Fatalf("items left after Delete: %d", len(kr.items))
	}
	if _, err := s.Get("k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
	if err := s.Delete("k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Delete of a missing key: %v, want ErrNotFound", err)
	}
}

// A keychain that never answers gives ErrTimeout with advice, and the store works again once
// the keychain answers.
func TestOSTimeout(t *testing.T) {
	kr := newFakeKeyring()
	kr.gate = make(chan struct{})
	s, o, released := newFakeOS(kr, 20*time.Millisecond)

	err := s.Set("cred/work", "sk-very-secret")
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("Set: %v, want ErrTimeout", err)
	}
	msg := err.Error()
	for _, want := range []string{`"cred/work"`, "did not answer", "unlock", `backend = "file"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	if strings.Contains(msg, "sk-very-secret") || strings.Contains(msg, "\n") {
		t.Errorf("error is not one line without the secret: %q", msg)
	}
	if _, err := s.Get("cred/work"); !errors.Is(err, ErrTimeout) {
		t.Fatalf("Get: %v, want ErrTimeout", err)
	}

	kr.mu.Lock()
	close(kr.gate)
	kr.mu.Unlock()
	<-released
	<-released
	if n := o.stuck.Load(); n != 0 {
		t.Fatalf("stuck = %d after both calls returned", n)
	}
	if err := s.Set("cred/work", "v2"); err != nil {
		t.Fatalf("Set once the keychain answers: %v", err)
	}
}

// Calls that time out keep a goroutine inside go-keyring; after maxStuck of them new calls
// fail at once instead of adding more.
func TestOSStuckCallsAreBounded(t *testing.T) {
	kr := newFakeKeyring()
	kr.gate = make(chan struct{})
	s, o, released := newFakeOS(kr, 5*time.Millisecond)
	for range maxStuck {
		if _, err := s.Get("k"); !errors.Is(err, ErrTimeout) {
			t.Fatalf("Get: %v, want ErrTimeout", err)
		}
	}
	before := kr.calls.Load()
	_, err := s.Get("k")
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "still waiting") {
		t.Fatalf("Get with %d stuck calls: %v, want an immediate ErrTimeout", maxStuck, err)
	}
	if kr.calls.Load() != before {
		t.Fatal("a new keychain call was started although maxStuck calls are still waiting")
	}

	kr.mu.Lock()
	close(kr.gate)
	kr.mu.Unlock()
	for range maxStuck {
		<-released
	}
	if n := o.stuck.Load(); n != 0 {
		t.Fatalf("stuck = %d after all calls returned", n)
	}
	if _, err := s.Get("k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get once the keychain answers: %v, want ErrNotFound", err)
	}
}

func TestOSErrorsNeverContainTheSecret(t *testing.T) {
	kr := newFakeKeyring()
	kr.fail = func(password string) error {
		return fmt.Errorf("backend says: could not store %q", password)
	}
	s, _, _ := newFakeOS(kr, time.Minute)
	for _, secret := range []string{"sk-ant-short-secret", secretOf(10 << 10)} {
		err := s.Set("k", secret)
		if err == nil {
			t.Fatal("Set succeeded against a failing keychain")
		}
		if strings.Contains(err.Error(), secret[:19]) {
			t.Fatalf("error contains the secret: %v", err)
		}
		if !strings.Contains(err.Error(), `"k"`) {
			t.Fatalf("error does not name the key: %v", err)
		}
	}
}

func TestOSPanicBecomesError(t *testing.T) {
	kr := newFakeKeyring()
	kr.fail = func(string) error { panic("nil map in go-keyring") }
	s, _, _ := newFakeOS(kr, time.Minute)
	if _, err := s.Get("k"); err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("Get: %v, want the panic as an error", err)
	}
}

func TestNewOSDefaults(t *testing.T) {
	s := NewOS(Service, 0)
	if s.Name() != "os" {
		t.Fatalf("Name = %q", s.Name())
	}
	if got := s.(*chunked).items.(*osItems).timeout; got != DefaultTimeout {
		t.Fatalf("timeout = %v, want DefaultTimeout", got)
	}
}
