package realclients

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// EnvLatest, set to 1, makes every test that needs the real clients run
// against each package's newest release instead of its pin: each pin is
// resolved with `npm view NAME version` and the set is installed in a
// cache directory of its own (latest-…), beside the pinned one. `make
// test-latest` sets it; Newest says which packages moved. EnvDir is not
// read then: it names a directory of pinned clients.
const EnvLatest = "SUBPOOL_REALCLIENTS_LATEST"

// Latest is one package's pin beside the newest version the registry
// serves.
type Latest struct {
	Name, Pinned, Newest string
}

func (l Latest) String() string {
	if l.Pinned == l.Newest {
		return fmt.Sprintf("%s pinned %s, latest %s (same)", l.Name, l.Pinned, l.Newest)
	}
	return fmt.Sprintf("%s pinned %s, latest %s", l.Name, l.Pinned, l.Newest)
}

var (
	latestOnce sync.Once
	latest     []Latest
	latestErr  error
)

// Newest asks the npm registry for each pin's newest version (once per
// process).
func Newest() ([]Latest, error) {
	latestOnce.Do(func() { latest, latestErr = lookUp() })
	return latest, latestErr
}

func lookUp() ([]Latest, error) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		return nil, errors.New("real clients: npm is not installed: apt-get install nodejs npm (make test does)")
	}
	var out []Latest
	for _, p := range Pins {
		b, err := exec.Command(npm, "view", p.Name, "version").Output()
		v := strings.TrimSpace(string(b))
		if err != nil || v == "" || strings.ContainsAny(v, " \n") {
			return nil, fmt.Errorf("real clients: `npm view %s version` failed (%v); check that the npm registry is reachable", p.Name, err)
		}
		out = append(out, Latest{Name: p.Name, Pinned: p.Version, Newest: v})
	}
	return out, nil
}

// wanted is the set to install: the pins, or with EnvLatest each pin at
// its newest version, and the cache directory's name prefix for it.
func wanted() ([]Pin, string, error) {
	if os.Getenv(EnvLatest) != "1" {
		return Pins, "", nil
	}
	all, err := Newest()
	if err != nil {
		return nil, "", err
	}
	pins := make([]Pin, len(Pins))
	for i, p := range Pins {
		p.Version = all[i].Newest
		pins[i] = p
	}
	return pins, "latest-", nil
}
