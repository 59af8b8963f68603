package toolsetup

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/subpool/subpool/internal/atomicfile"
)

// recordFile, in subpool's home, remembers what setup wrote: enough to give
// the original bytes back.
const recordFile = "setup.json"

type record struct {
	Path string `json:"path"`
	// Backup holds the file as it was before setup first wrote it; empty
	// when setup created the file.
	Backup  string `json:"backup,omitempty"`
	Created bool   `json:"created,omitempty"`
	// Written is the SHA-256 of what setup last wrote, so Undo can tell a
	// file changed since by the person or the tool.
	Written string `json:"written"`
	// Keys are the JSON members setup set, so a file the tool changed
	// since can still have just those taken out.
	Keys []string `json:"keys,omitempty"`
}

type records struct {
	Tools map[string][]record `json:"tools"`
}

func loadRecords(home string) (records, error) {
	r := records{Tools: map[string][]record{}}
	b, err := os.ReadFile(filepath.Join(home, recordFile))
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s is damaged (%v); move it aside and restore the tools' files from their .subpool-backup-* copies", filepath.Join(home, recordFile), err)
	}
	if r.Tools == nil {
		r.Tools = map[string][]record{}
	}
	return r, nil
}

func (r records) save(home string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(home, recordFile), append(b, '\n'), 0o600)
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// BackupName is where a file's original goes before setup first changes it.
func BackupName(path string, at time.Time) string {
	return path + ".subpool-backup-" + at.UTC().Format("20060102T150405Z")
}

// Apply writes the plan: for each file, a backup of the original first
// (unless setup wrote the file itself last time, whose original is already
// kept), then the new content, atomically. It returns the backups made.
func Apply(p Plan, home string, at time.Time) ([]string, error) {
	recs, err := loadRecords(home)
	if err != nil {
		return nil, err
	}
	var made []string
	for _, c := range p.Changes {
		if c.Before != nil && string(c.Before) == string(c.After) {
			continue
		}
		rec, i := find(recs.Tools[p.Tool], c.Path)
		if i < 0 || sum(c.Before) != rec.Written {
			rec = record{Path: c.Path, Created: c.Before == nil}
			if !rec.Created {
				rec.Backup = BackupName(c.Path, at)
				if err := atomicfile.Write(rec.Backup, c.Before, modeOf(c.Path, 0o600)); err != nil {
					return made, fmt.Errorf("cannot back %s up (%v); nothing more was changed", c.Path, err)
				}
				made = append(made, rec.Backup)
			}
		}
		if err := os.MkdirAll(filepath.Dir(c.Path), 0o700); err != nil {
			return made, err
		}
		// A new file holds a client key: readable by its owner only.
		if err := atomicfile.Write(c.Path, c.After, modeOf(c.Path, 0o600)); err != nil {
			return made, fmt.Errorf("cannot write %s (%v)", c.Path, err)
		}
		rec.Written, rec.Keys = sum(c.After), c.Keys
		recs.Tools[p.Tool] = put(recs.Tools[p.Tool], rec)
		if err := recs.save(home); err != nil {
			return made, fmt.Errorf("wrote %s but cannot record it in %s (%v); its backup is %s", c.Path, home, err, rec.Backup)
		}
	}
	return made, nil
}

// Undo gives every file setup wrote for the tool its original bytes back,
// or removes it when setup created it. A JSON file changed since setup
// wrote it keeps those changes and loses only setup's members. When any
// other file changed since, nothing is undone, and the error says which.
// It returns one line per file, saying what was done.
func Undo(tool, home string) ([]string, error) {
	recs, err := loadRecords(home)
	if err != nil {
		return nil, err
	}
	list := recs.Tools[tool]
	if len(list) == 0 {
		return nil, fmt.Errorf("subpool setup has not changed %s's files, so there is nothing to undo", tool)
	}
	steps := make([]func() (string, error), len(list))
	for i, r := range list {
		if steps[i], err = undoStep(r); err != nil {
			return nil, err
		}
	}
	var done []string
	for _, step := range steps {
		line, err := step()
		if err != nil {
			return done, err
		}
		done = append(done, line)
	}
	delete(recs.Tools, tool)
	return done, recs.save(home)
}

// undoStep checks that a file can be undone and returns the step that
// does it, so Undo changes nothing unless every file can be.
func undoStep(r record) (func() (string, error), error) {
	cur, err := os.ReadFile(r.Path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && sum(cur) == r.Written) {
		return func() (string, error) { return "restored " + r.Path, restore(r) }, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read %s (%v); nothing was undone", r.Path, err)
	}
	how := "remove it by hand if you no longer want it"
	if !r.Created {
		how = "its original is in " + r.Backup
	}
	if len(r.Keys) == 0 {
		return nil, fmt.Errorf("%s changed since subpool setup wrote it, so it is left as it is (%s); nothing was undone", r.Path, how)
	}
	var orig []byte
	if !r.Created {
		if orig, err = os.ReadFile(r.Backup); err != nil {
			return nil, fmt.Errorf("cannot read the backup %s (%v); nothing was undone", r.Backup, err)
		}
	}
	out, err := unsetJSON(cur, orig, r.Keys)
	if err != nil {
		return nil, fmt.Errorf("%s %v since subpool setup wrote it, so it is left as it is (%s); nothing was undone", r.Path, err, how)
	}
	return func() (string, error) {
		if err := atomicfile.Write(r.Path, out, modeOf(r.Path, 0o600)); err != nil {
			return "", fmt.Errorf("cannot write %s (%v)", r.Path, err)
		}
		if r.Backup != "" {
			os.Remove(r.Backup)
		}
		return "took subpool's settings out of " + r.Path + " (it changed since setup; those changes are kept)", nil
	}, nil
}

func restore(r record) error {
	if r.Created {
		if err := os.Remove(r.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cannot remove %s (%v)", r.Path, err)
		}
		return nil
	}
	orig, err := os.ReadFile(r.Backup)
	if err != nil {
		return fmt.Errorf("cannot read the backup %s (%v); %s is left as setup wrote it", r.Backup, err, r.Path)
	}
	if err := atomicfile.Write(r.Path, orig, modeOf(r.Backup, 0o600)); err != nil {
		return fmt.Errorf("cannot restore %s (%v); its original is in %s", r.Path, err, r.Backup)
	}
	return os.Remove(r.Backup)
}

func modeOf(path string, def fs.FileMode) fs.FileMode {
	if st, err := os.Stat(path); err == nil {
		return st.Mode().Perm()
	}
	return def
}

func find(list []record, path string) (record, int) {
	for i, r := range list {
		if r.Path == path {
			return r, i
		}
	}
	return record{}, -1
}

func put(list []record, r record) []record {
	if _, i := find(list, r.Path); i >= 0 {
		list[i] = r
		return list
	}
	return append(list, r)
}
