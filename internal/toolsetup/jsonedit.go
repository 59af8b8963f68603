package toolsetup

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// setJSON sets each path (sjson syntax: dots between keys) of a JSON
// document, keeping every other member and their order. A document the
// tool wrote itself (JSON.stringify with an indent, as Claude Code, Gemini
// CLI and Cline do) is indented again the same way, so only the changed
// lines differ; any other layout is kept as it was, with the new members
// written compactly. nil (no file) starts from an empty object.
func setJSON(before []byte, sets []jsonSet) ([]byte, error) {
	doc := before
	if len(bytes.TrimSpace(doc)) == 0 {
		doc = []byte("{}")
	}
	if !json.Valid(doc) {
		return nil, errors.New("not plain JSON (comments or a syntax error?); subpool setup edits only a file it can parse, so make the change by hand (subpool env prints it)")
	}
	var top any
	if err := json.Unmarshal(doc, &top); err != nil {
		return nil, err
	}
	if _, ok := top.(map[string]any); !ok {
		return nil, errors.New("holds no JSON object at its top; subpool setup leaves it alone: make the change by hand (subpool env prints it)")
	}
	indent, standard := jsonLayout(doc)
	out := doc
	for _, s := range sets {
		var err error
		if out, err = sjson.SetBytes(out, s.path, s.value); err != nil {
			return nil, err
		}
	}
	if standard || before == nil {
		out = reindent(out, indent, before == nil || bytes.HasSuffix(before, []byte("\n")))
	}
	return out, nil
}

type jsonSet struct {
	path  string
	value any
}

// jsonLayout finds a document's indent and whether the document is laid
// out exactly as an indenting encoder would lay it out with that indent.
func jsonLayout(doc []byte) (indent string, standard bool) {
	indent = "  "
	for _, line := range strings.Split(string(doc), "\n")[1:] {
		if trimmed := strings.TrimLeft(line, " \t"); trimmed != line && trimmed != "" {
			indent = line[:len(line)-len(trimmed)]
			break
		}
	}
	return indent, bytes.Equal(reindent(doc, indent, bytes.HasSuffix(doc, []byte("\n"))), doc)
}

// reindent lays a document out as JSON.stringify(v, null, indent) does,
// ending in a newline when nl is set.
func reindent(doc []byte, indent string, nl bool) []byte {
	var compact, out bytes.Buffer
	if json.Compact(&compact, doc) != nil {
		return doc
	}
	if json.Indent(&out, compact.Bytes(), "", indent) != nil {
		return doc
	}
	if nl {
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// escapeKey makes a member name safe in an sjson path.
func escapeKey(k string) string {
	r := strings.NewReplacer(".", `\.`, "*", `\*`, "?", `\?`, "|", `\|`, "#", `\#`, "@", `\@`)
	return r.Replace(k)
}

// unsetJSON takes setup's members out of a file changed since setup wrote
// it (opencode, for one, adds its $schema on first run): each member gets
// the value it had in orig, or goes when orig had none, and so does any
// object setup made for it that is now empty. Everything else, the
// tool's own changes included, stays.
func unsetJSON(doc, orig []byte, keys []string) ([]byte, error) {
	if !json.Valid(doc) {
		return nil, errors.New("is no longer plain JSON")
	}
	indent, standard := jsonLayout(doc)
	had := func(path string) gjson.Result {
		if orig == nil {
			return gjson.Result{}
		}
		return gjson.GetBytes(orig, path)
	}
	out := doc
	var err error
	for _, k := range keys {
		if v := had(k); v.Exists() {
			out, err = sjson.SetRawBytes(out, k, []byte(v.Raw))
		} else {
			out, err = sjson.DeleteBytes(out, k)
		}
		if err != nil {
			return nil, err
		}
		for p, ok := parent(k); ok && !had(p).Exists(); p, ok = parent(p) {
			if v := gjson.GetBytes(out, p); !v.IsObject() || len(v.Map()) > 0 {
				break
			}
			if out, err = sjson.DeleteBytes(out, p); err != nil {
				return nil, err
			}
		}
	}
	if standard {
		out = reindent(out, indent, bytes.HasSuffix(doc, []byte("\n")))
	}
	return out, nil
}

// parent is the path of the object holding path's member.
func parent(path string) (string, bool) {
	for i := len(path) - 1; i > 0; i-- {
		if path[i] == '.' && path[i-1] != '\\' {
			return path[:i], true
		}
	}
	return "", false
}
