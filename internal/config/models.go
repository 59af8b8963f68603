package config

import (
	"errors"
	"fmt"
	"strings"
)

// [models]: aliases a client may ask for instead of an upstream's exact
// model id.
//
//	opus = "claude-opus-4-5"                                 # one target: the client's own provider
//	best = ["anthropic/claude-opus-4-5", "openai/gpt-5.1"]  # tried in order, like a fallback ladder
//
// A target is "MODEL" (on whichever provider the client's route reaches)
// or "PROVIDER/MODEL". Model ids that hold a '/' themselves are written
// with their provider in front: "openrouter/anthropic/claude-opus-4-5".

// Aliases maps an alias to its targets in order. A Target's Provider is
// empty for "the client's own provider".
type Aliases map[string][]Target

// modelsFile is the [models] table as written; its keys are the user's
// names, so parseModels reads it by hand (see fallbackFile).
type modelsFile map[string]any

func (f *modelsFile) UnmarshalTOML(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return errors.New("models must be a table: [models]")
	}
	*f = m
	return nil
}

func parseModels(raw map[string]any, provs map[string]Provider, bad func(key, format string, a ...any) error) (Aliases, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	out := Aliases{}
	for _, name := range sortedKeys(raw) {
		key := fmt.Sprintf("models.%q", name)
		if strings.TrimSpace(name) != name || name == "" || len(name) > 100 || strings.ContainsAny(name, " \t\r\n\"") {
			return nil, bad(key, "an alias is one word a client sends as its model, e.g. best = [\"anthropic/claude-opus-4-5\", \"openai/gpt-5.1\"]")
		}
		var list []string
		switch v := raw[name].(type) {
		case string:
			list = []string{v}
		case []any:
			for i, x := range v {
				s, ok := x.(string)
				if !ok {
					return nil, bad(fmt.Sprintf("%s[%d]", key, i), "a target is a string: \"MODEL\" or \"PROVIDER/MODEL\"")
				}
				list = append(list, s)
			}
			if len(list) == 0 {
				return nil, bad(key, "needs at least one target, e.g. [\"anthropic/claude-opus-4-5\"]")
			}
		default:
			return nil, bad(key, "must be a model (\"claude-opus-4-5\") or a list of \"PROVIDER/MODEL\" tried in order")
		}
		for i, s := range list {
			k := key
			if _, isList := raw[name].([]any); isList {
				k = fmt.Sprintf("%s[%d]", key, i)
			}
			t, err := parseTarget(s, provs)
			if err != nil {
				return nil, bad(k, "%s", err)
			}
			if t.Model == name {
				// Aliases are not followed: the alias would ask the
				// upstream for a model named like itself.
				return nil, bad(k, "the alias %q names itself; name the model it stands for, e.g. %s = \"claude-opus-4-5\"", name, name)
			}
			out[name] = append(out[name], t)
		}
	}
	return out, nil
}

// parseTarget reads "MODEL" or "PROVIDER/MODEL".
func parseTarget(s string, provs map[string]Provider) (Target, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Target{}, errors.New("empty target; write \"MODEL\" or \"PROVIDER/MODEL\"")
	}
	prov, model, ok := strings.Cut(s, "/")
	if !ok {
		return Target{Model: s}, nil
	}
	if _, known := provs[prov]; !known {
		return Target{}, fmt.Errorf("%q names provider %q, which is not configured; define [providers.%s], or check the spelling", s, prov, prov)
	}
	if model == "" {
		return Target{}, fmt.Errorf("%q names no model after the provider", s)
	}
	return Target{Provider: prov, Model: model}, nil
}
