package service

import (
	"errors"
	"os/exec"
	"syscall"

	kservice "github.com/kardianos/service"
	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
)

// CheckUserManager returns nil: the per-user Run key is always there.
func CheckUserManager() error { return nil }

// hostSystem is never reached: NewManager uses the Run key on Windows, since
// the SCM only offers session-0 services that need an administrator and
// cannot show the tray.
func hostSystem() (kservice.System, error) {
	return nil, errors.New("no per-user services on Windows")
}

const runKeySubkey = `Software\Microsoft\Windows\CurrentVersion\Run`

type registryRunKey struct{}

func defaultRunKey() RunKey { return registryRunKey{} }

func (registryRunKey) Get(name string) (string, bool, error) {
	k, err := registry.OpenKey(registry.CURRENT_USER, runKeySubkey, registry.QUERY_VALUE)
	if errors.Is(err, registry.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	defer k.Close()
	v, _, err := k.GetStringValue(name)
	if errors.Is(err, registry.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return v, true, nil
}

func (registryRunKey) Set(name, value string) error {
	k, _, err := registry.CreateKey(registry.CURRENT_USER, runKeySubkey, registry.SET_VALUE)
	if err != nil {
		return err
	}
	defer k.Close()
	return k.SetStringValue(name, value)
}

func (registryRunKey) Delete(name string) error {
	k, err := registry.OpenKey(registry.CURRENT_USER, runKeySubkey, registry.SET_VALUE)
	if errors.Is(err, registry.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer k.Close()
	if err := k.DeleteValue(name); err != nil && !errors.Is(err, registry.ErrNotExist) {
		return err
	}
	return nil
}

// defaultStartTray opens the tray detached from this console, so that it
// outlives `subpool service start` and the terminal it ran in.
func defaultStartTray(exe string, args []string) error {
	cmd := exec.Command(exe, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		CreationFlags: windows.DETACHED_PROCESS | windows.CREATE_NEW_PROCESS_GROUP,
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}
