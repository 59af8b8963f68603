// Package servicetest provides a kardianos/service System that records what
// it is asked to do and touches nothing on the machine, for tests of code
// built on package service (service.WithSystem).
package servicetest

import (
	"errors"
	"fmt"
	"sync"

	kservice "github.com/kardianos/service"
)

// System is a fake service manager holding one service's state in memory.
// It keeps the rules of the real backends that callers trip on: Install
// fails when already installed, Start and Uninstall fail when not installed,
// and Uninstall does not stop a running service (systemd's behaviour).
// The zero value is ready to use.
type System struct {
	mu        sync.Mutex
	calls     []string
	config    *kservice.Config
	installed bool
	running   bool
	failOn    map[string]error
}

var _ kservice.System = (*System)(nil)

// SetState sets what Status reports, as if the service had been installed or
// started before the test.
func (s *System) SetState(installed, running bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.installed, s.running = installed, running
}

// State returns whether the service is installed and running.
func (s *System) State() (installed, running bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.installed, s.running
}

// FailOn makes the named call ("install", "uninstall", "start", "stop",
// "status") return err from now on.
func (s *System) FailOn(call string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failOn == nil {
		s.failOn = map[string]error{}
	}
	s.failOn[call] = err
}

// Calls returns the control calls made so far, in order ("install",
// "start", ...). Status calls are left out: callers may ask as often as they
// like.
func (s *System) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// Config returns the configuration the service was last created with, or nil.
func (s *System) Config() *kservice.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.config
}

func (s *System) String() string    { return "servicetest" }
func (s *System) Detect() bool      { return true }
func (s *System) Interactive() bool { return true }
func (s *System) New(_ kservice.Interface, c *kservice.Config) (kservice.Service, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.config = c
	return &fakeService{sys: s}, nil
}

type fakeService struct{ sys *System }

// do records call and applies change under the lock, unless the call is set
// to fail or precondition says no.
func (f *fakeService) do(call string, change func(s *System) error) error {
	s := f.sys
	s.mu.Lock()
	defer s.mu.Unlock()
	if call != "status" {
		s.calls = append(s.calls, call)
	}
	if err := s.failOn[call]; err != nil {
		return err
	}
	return change(s)
}

func (f *fakeService) Install() error {
	return f.do("install", func(s *System) error {
		if s.installed {
			return errors.New("Init already exists")
		}
		s.installed = true
		return nil
	})
}

func (f *fakeService) Uninstall() error {
	return f.do("uninstall", func(s *System) error {
		if !s.installed {
			return kservice.ErrNotInstalled
		}
		s.installed = false
		return nil
	})
}

func (f *fakeService) Start() error {
	return f.do("start", func(s *System) error {
		if !s.installed {
			return kservice.ErrNotInstalled
		}
		s.running = true
		return nil
	})
}

func (f *fakeService) Stop() error {
	return f.do("stop", func(s *System) error {
		s.running = false
		return nil
	})
}

func (f *fakeService) Restart() error {
	return f.do("restart", func(s *System) error {
		if !s.installed {
			return kservice.ErrNotInstalled
		}
		s.running = true
		return nil
	})
}

func (f *fakeService) Status() (kservice.Status, error) {
	var st kservice.Status
	err := f.do("status", func(s *System) error {
		switch {
		case s.running:
			st = kservice.StatusRunning
		case s.installed:
			st = kservice.StatusStopped
		default:
			return kservice.ErrNotInstalled
		}
		return nil
	})
	return st, err
}

func (f *fakeService) Run() error {
	return fmt.Errorf("servicetest: Run is not faked")
}

func (f *fakeService) Platform() string { return "servicetest" }
func (f *fakeService) String() string   { return "servicetest" }

func (f *fakeService) Logger(chan<- error) (kservice.Logger, error) {
	return kservice.ConsoleLogger, nil
}

func (f *fakeService) SystemLogger(chan<- error) (kservice.Logger, error) {
	return kservice.ConsoleLogger, nil
}
