// Package toolsetup writes subpool's address and a tool's client key into
// that tool's own settings files, the way a person would by hand: every
// other setting is kept, and so is the file's formatting where the format
// allows. Each write is preceded by a timestamped backup beside the file
// and recorded in subpool's home, so Undo gives the original bytes back (or
// removes the file when setup created it). A file that cannot be parsed is
// never touched.
//
// Where each tool reads its settings was read in the tools' packages
// (Claude Code 2.1.332, Codex 0.171.0, Gemini CLI 0.61.0, opencode 1.18.33,
// Continue CLI 1.5.47, Cline CLI 3.0.65).
package toolsetup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Target is what a tool is pointed at.
type Target struct {
	// Base is subpool's address, "http://127.0.0.1:8787".
	Base string
	// Key is the tool's client key.
	Key string
	// Model, when set, is the model the tool is set to use (Continue and
	// Cline need one; the others keep their own choice).
	Model string
}

// Env is where the tools look: the person's home and their environment
// (CLAUDE_CONFIG_DIR, CODEX_HOME, XDG_CONFIG_HOME, …), as the tool would
// see it when started from the same shell.
type Env struct {
	Home   string
	Getenv func(string) string
}

// OS is the environment of this process.
func OS() (Env, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return Env{}, fmt.Errorf("cannot find your home folder (%v); set HOME", err)
	}
	return Env{Home: home, Getenv: os.Getenv}, nil
}

func (e Env) dir(envVar string, def ...string) string {
	if e.Getenv != nil {
		if v := e.Getenv(envVar); v != "" {
			return v
		}
	}
	return filepath.Join(append([]string{e.Home}, def...)...)
}

// An edit computes a file's new bytes from its current ones (nil when the
// file does not exist), or says why the file is left alone.
type edit func(before []byte, t Target) ([]byte, error)

// file is one settings file of a tool: a JSON file names the members it
// sets (so they can be taken out again), any other format edits its text.
type file struct {
	path func(Env) string
	edit edit
	json func(before []byte, t Target) []jsonSet
}

// tool is one tool's files, in the order they are written.
type tool struct {
	files []file
	// defaultModel is used when the tool needs a model and none is given.
	defaultModel string
}

var tools = map[string]tool{
	"claude-code": {files: []file{{path: claudeSettings, json: claudeSets}}},
	"codex":       {files: []file{{path: codexConfig, edit: codexEdit}}},
	"gemini-cli": {files: []file{
		{path: geminiSettings, json: geminiSettingsSets},
		{path: geminiDotenv, edit: geminiDotenvEdit},
	}},
	"opencode": {files: []file{{path: opencodeConfig, json: opencodeSets}}},
	"continue": {files: []file{{path: continueConfig, edit: continueEdit}}, defaultModel: "gpt-5"},
	"cline":    {files: []file{{path: clineProviders, json: clineSets}}, defaultModel: "gpt-5"},
}

// Tools lists the tools setup knows, sorted.
func Tools() []string {
	out := make([]string, 0, len(tools))
	for name := range tools {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Known reports whether setup knows the tool.
func Known(name string) bool {
	_, ok := tools[name]
	return ok
}

// ErrUnknownTool is returned for a tool setup does not know.
var ErrUnknownTool = errors.New("unknown tool")

// Change is one file's planned change.
type Change struct {
	Path   string
	Before []byte // nil: the file does not exist yet
	After  []byte
	// Keys are the JSON members setup sets (sjson paths); empty for a
	// file of another format.
	Keys []string
}

// Plan is every change setup would make for one tool.
type Plan struct {
	Tool    string
	Changes []Change
}

// Prepare reads the tool's files and computes their new content. Nothing
// is written. A file that cannot be parsed fails the whole plan, so no
// tool is left half set up.
func Prepare(name string, env Env, t Target) (Plan, error) {
	tl, ok := tools[name]
	if !ok {
		return Plan{}, fmt.Errorf("%w %q; setup knows %s", ErrUnknownTool, name, strings.Join(Tools(), ", "))
	}
	if t.Model == "" {
		t.Model = tl.defaultModel
	}
	p := Plan{Tool: name}
	for _, f := range tl.files {
		path := f.path(env)
		before, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			before = nil
		} else if err != nil {
			return Plan{}, fmt.Errorf("cannot read %s (%v); nothing was changed", path, err)
		}
		c, err := f.change(before, t)
		if err != nil {
			return Plan{}, fmt.Errorf("%s: %v; nothing was changed", path, err)
		}
		c.Path = path
		p.Changes = append(p.Changes, c)
	}
	return p, nil
}

func (f file) change(before []byte, t Target) (Change, error) {
	if f.json == nil {
		after, err := f.edit(before, t)
		return Change{Before: before, After: after}, err
	}
	sets := f.json(before, t)
	after, err := setJSON(before, sets)
	c := Change{Before: before, After: after}
	for _, s := range sets {
		c.Keys = append(c.Keys, s.path)
	}
	return c, err
}

// Unchanged reports whether applying the plan would change nothing.
func (p Plan) Unchanged() bool {
	for _, c := range p.Changes {
		if c.Before == nil || string(c.Before) != string(c.After) {
			return false
		}
	}
	return true
}
