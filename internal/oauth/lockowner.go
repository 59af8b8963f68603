package oauth

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/subpool/subpool/internal/atomicfile"
)

// claudeLockOwner is the record Claude Code 2.1.337 writes beside its
// refresh lock while it holds it: who holds the lock, in which pid
// namespace, and the lock directories' birth times, so that a waiter can
// tell a dead holder's lock from a live one's before it goes stale.
const claudeLockOwner = ".oauth_refresh.lock.owner"

// ownerRecord is that record, field for field. Birth times are Node's
// birthtimeMs, fractional milliseconds, compared for equality.
type ownerRecord struct {
	PID             int     `json:"pid"`
	ProcStart       string  `json:"procStart,omitempty"`
	PIDDomain       string  `json:"pidDomain"`
	PIDSpace        string  `json:"pidSpace"`
	LockBirth       float64 `json:"lockBirthtimeMs"`
	LegacyLockBirth float64 `json:"legacyLockBirthtimeMs,omitempty"`
}

// ownerRecordMax is the longest record Claude Code reads.
const ownerRecordMax = 4096

// writeOwner records subpool as the holder of the refresh lock at path
// (and of legacy, "" when not held), and returns the lock's birth time
// for removeOwner; 0 when the filesystem keeps none, and then, as Claude
// Code, no record is written.
func writeOwner(dir, path, legacy string, logf func(string, ...any)) float64 {
	birth := birthtimeMs(path)
	if birth <= 0 {
		return 0
	}
	rec := ownerRecord{PID: os.Getpid(), ProcStart: procStart(os.Getpid()), PIDDomain: pidDomain(), PIDSpace: pidSpace(), LockBirth: birth}
	if legacy != "" {
		if b := birthtimeMs(legacy); b > 0 {
			rec.LegacyLockBirth = b
		}
	}
	b, _ := json.Marshal(rec)
	if err := atomicfile.Write(filepath.Join(dir, claudeLockOwner), b, 0o600); err != nil {
		logf("oauth: Claude Code's lock owner record not written (%v)", err)
		return 0
	}
	return birth
}

// removeOwner removes the record when it is still subpool's for the lock
// born at birth.
func removeOwner(dir string, birth float64) {
	if birth == 0 {
		return
	}
	if rec, ok := readOwner(dir); ok && rec.PID == os.Getpid() && rec.LockBirth == birth {
		os.Remove(filepath.Join(dir, claudeLockOwner))
	}
}

func readOwner(dir string) (ownerRecord, bool) {
	p := filepath.Join(dir, claudeLockOwner)
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > ownerRecordMax {
		return ownerRecord{}, false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return ownerRecord{}, false
	}
	var rec ownerRecord
	if json.Unmarshal(b, &rec) != nil || rec.LockBirth <= 0 || rec.PIDDomain == "" || rec.PIDSpace == "" {
		return ownerRecord{}, false
	}
	return rec, true
}

// takeOverDeadHolder removes the refresh lock at path (and the legacy
// one) as Claude Code does when their holder is proven gone: the lock's
// mtime is still watched, the record is the lock's (same birth time),
// written in this pid namespace, and its process is gone (no such pid, a
// zombie, or another process started under the pid). It reports whether
// the locks were removed; anything it cannot prove leaves them alone.
func takeOverDeadHolder(dir, path, legacy string, watched time.Time, logf func(string, ...any)) bool {
	rec, ok := readOwner(dir)
	if !ok {
		return false
	}
	same := func() bool {
		fi, err := os.Stat(path)
		return err == nil && fi.ModTime().Equal(watched) && birthtimeMs(path) == rec.LockBirth
	}
	if !same() || rec.PIDDomain != pidDomain() || rec.PIDSpace != pidSpace() || !pidViewTrusted() || !processGone(rec.PID, rec.ProcStart) {
		return false
	}
	if _, err := os.Lstat(legacy); err == nil {
		if birthtimeMs(legacy) != rec.LegacyLockBirth {
			return false // someone else holds the legacy lock now
		}
		if err := os.Remove(legacy); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	if !same() {
		return false
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if cur, ok := readOwner(dir); ok && cur.PID == rec.PID && cur.LockBirth == rec.LockBirth {
		os.Remove(filepath.Join(dir, claudeLockOwner))
	}
	logf("oauth: took over Claude Code's refresh lock %s: its holder, process %d, is gone", path, rec.PID)
	return true
}

// pidDomain is Claude Code's: on Linux the machine id and pid namespace,
// elsewhere the constant it uses there.
func pidDomain() string {
	if !isLinux {
		return "linux"
	}
	id, _ := os.ReadFile("/etc/machine-id")
	ns, _ := os.Readlink("/proc/self/ns/pid")
	return "linux:" + strings.TrimSpace(string(id)) + ":" + ns
}

// pidSpace is Claude Code's: the host name, and the pid namespace where
// there is one.
func pidSpace() string {
	h, _ := os.Hostname()
	if ns, err := os.Readlink("/proc/self/ns/pid"); err == nil && ns != "" {
		return h + "#" + ns
	}
	return h
}

// pidViewTrusted is Claude Code's check that this process sees the pids
// of the others: on Linux /proc is this namespace's and lists at least 16
// processes.
func pidViewTrusted() bool {
	if !isLinux {
		return true
	}
	if self, err := os.Readlink("/proc/self"); err != nil || self != itoa(os.Getpid()) {
		return false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	n := 0
	for _, e := range ents {
		if strings.Trim(e.Name(), "0123456789") == "" {
			n++
		}
	}
	return n >= 16
}

// procStart is the start time of process pid, from /proc/PID/stat (its
// 22nd field), as Claude Code records it; "" where there is no /proc.
func procStart(pid int) string {
	f := procStatFields(pid)
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// procStatFields are the fields of /proc/PID/stat after the command name.
func procStatFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return nil
	}
	return strings.Fields(s[i+2:])
}
