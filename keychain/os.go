package keychain

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zalando/go-keyring"
)

// hintFile ends every message about an unusable OS keychain, since on a headless machine the
// file backend is the way out.
const hintFile = `on a machine without a desktop session set [keychain] backend = "file" in config.toml`

// maxStuck is how many timed-out calls may still be waiting inside go-keyring before new
// calls fail at once. Each waiting call holds a goroutine, and on a desktop each may also hold
// an unlock prompt, so retries must not pile up without end.
const maxStuck = 4

// NewOS returns the OS keychain as a Store: Secret Service on Linux, Keychain on macOS,
// Credential Manager on Windows, with items named by key under service. timeout bounds every
// single keychain call (a large secret takes several); 0 means DefaultTimeout.
//
// go-keyring takes no context, so a call that times out keeps running in its goroutine until
// the keychain answers, which may be never (a locked Secret Service waits for its prompt
// forever). That goroutine leaks; at most maxStuck of them are allowed before NewOS's store
// refuses new calls with ErrTimeout until one returns.
//
// Do not call it on the UI goroutine: even when all goes well, a keychain may block while the
// user types an unlock password.
func NewOS(service string, timeout time.Duration) Store {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return newChunked("os", &osItems{service: service, timeout: timeout, kr: goKeyring{}, preflight: checkSessionBus})
}

// keyringAPI is the part of go-keyring that subpool uses, so tests can make it hang or fail.
type keyringAPI interface {
	Get(service, user string) (string, error)
	Set(service, user, password string) error
	Delete(service, user string) error
}

type goKeyring struct{}

func (goKeyring) Get(service, user string) (string, error) { return keyring.Get(service, user) }
func (goKeyring) Set(service, user, pw string) error       { return keyring.Set(service, user, pw) }
func (goKeyring) Delete(service, user string) error        { return keyring.Delete(service, user) }

// osItems is the OS keychain as an itemStore: one go-keyring call per method, each bounded by
// timeout, with errors turned into the package's errors.
type osItems struct {
	service string
	timeout time.Duration
	kr      keyringAPI
	// preflight, if set, runs before each call and stops it with its error.
	preflight func() error

	stuck atomic.Int32 // calls that timed out and whose goroutine has not returned yet
	// released, if set, runs each time a timed-out call finally returns; tests wait on it.
	released func()
}

func (o *osItems) Get(key string) (string, error) {
	return o.call(key, "", func() (string, error) { return o.kr.Get(o.service, key) })
}

func (o *osItems) Set(key, value string) error {
	_, err := o.call(key, value, func() (string, error) { return "", o.kr.Set(o.service, key, value) })
	return err
}

func (o *osItems) Delete(key string) error {
	_, err := o.call(key, "", func() (string, error) { return "", o.kr.Delete(o.service, key) })
	return err
}

// call runs f in a goroutine and waits for it at most o.timeout. secret is the value being
// stored, if any, so that no error text can carry it.
func (o *osItems) call(key, secret string, f func() (string, error)) (string, error) {
	if o.preflight != nil {
		if err := o.preflight(); err != nil {
			return "", err
		}
	}
	if n := o.stuck.Load(); n >= maxStuck {
		return "", fmt.Errorf("%w: %d earlier requests are still waiting for it; it may be locked: unlock it or restart subpool, or %s", ErrTimeout, n, hintFile)
	}

	type result struct {
		v   string
		err error
	}
	done := make(chan result, 1)
	const running, finished, abandoned = 0, 1, 2
	var state atomic.Int32
	go func() {
		var r result
		func() {
			// A panic here would take the whole proxy down for a keychain hiccup.
			defer func() {
				if p := recover(); p != nil {
					r.err = fmt.Errorf("go-keyring panicked: %v", p)
				}
			}()
			r.v, r.err = f()
		}()
		if !state.CompareAndSwap(running, finished) {
			o.stuck.Add(-1)
			if o.released != nil {
				o.released()
			}
			return
		}
		done <- r
	}()

	timer := time.NewTimer(o.timeout)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.v, o.explain(key, secret, r.err)
	case <-timer.C:
		if !state.CompareAndSwap(running, abandoned) {
			r := <-done // it finished just as the timer fired
			return r.v, o.explain(key, secret, r.err)
		}
		o.stuck.Add(1)
		return "", fmt.Errorf("%w (waited %v); it may be locked: unlock it, or %s", ErrTimeout, o.timeout, hintFile)
	}
}

// explain turns a go-keyring error into one that wraps the package's sentinel errors and
// suggests what to do. Only ErrNotFound names the key: the splitting layer, which knows what
// the caller was doing, names it in every other error.
func (o *osItems) explain(key, secret string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, keyring.ErrNotFound):
		return fmt.Errorf("keychain: no secret %q in the OS keychain: %w", userKey(key), ErrNotFound)
	}
	if secret != "" && strings.Contains(err.Error(), secret) {
		// Not wrapped: the original error would still print the secret.
		err = errors.New("the keychain's error message was withheld because it contained the secret")
	}
	if e := explainPlatform(err); e != nil {
		return e
	}
	return err
}

// userKey strips the part suffix ("#a3") so messages name the key the caller used.
func userKey(key string) string {
	k, _, _ := strings.Cut(key, "#")
	return k
}
