package app

import (
	"fmt"
	"slices"
	"strings"

	"github.com/subpool/subpool/internal/config"
)

// What people type for a provider or a tool, and what subpool calls it:
// one table for every verb, so `claude` means the same in login, add-key,
// import and env.
var (
	// providerAliases name a provider's pool by its product or its tool.
	providerAliases = map[string]string{
		"claude": config.Anthropic, "claude-code": config.Anthropic,
		"chatgpt": config.OpenAI, "codex": config.OpenAI,
		"gemini": config.Google, "gemini-cli": config.Google,
	}
	// toolAliases name a tool by its product.
	toolAliases = map[string]string{
		"claude": "claude-code", "gemini": "gemini-cli", "chatgpt": "codex", "codex-cli": "codex",
	}
)

// resolveName is what subpool calls name among known (given in the order
// a person should read them), through aliases; what is the kind of thing
// named ("provider", "tool"). A name it cannot place is an error that
// lists the known ones and suggests the nearest.
func resolveName(name, what string, known []string, aliases map[string]string) (string, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if slices.Contains(known, n) {
		return n, nil
	}
	if a, ok := aliases[n]; ok && slices.Contains(known, a) {
		return a, nil
	}
	return "", fmt.Errorf("unknown %s %q;%s use %s", what, name, suggestName(n, known, aliases), orList(known))
}

// suggestName is didYouMean over known and the aliases of known names.
func suggestName(name string, known []string, aliases map[string]string) string {
	cands := slices.Clone(known)
	for a, to := range aliases {
		if slices.Contains(known, to) {
			cands = append(cands, a)
		}
	}
	return didYouMean(name, cands)
}

// orList is "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// didYouMean is " did you mean \"x\"?" for the candidate nearest word, or
// "" when none is near enough to be a slip of the fingers.
func didYouMean(word string, cands []string) string {
	word = strings.ToLower(word)
	best, bestD := "", 0
	for _, c := range cands {
		d := editDistance(word, c)
		if strings.HasPrefix(c, word) && len(word) >= 3 {
			d = min(d, 1) // a word cut short: "hist" for history
		}
		if best == "" || d < bestD || d == bestD && c < best {
			best, bestD = c, d
		}
	}
	if best == "" || bestD > max(1, len([]rune(word))/3) {
		return ""
	}
	return fmt.Sprintf(" did you mean %q?", best)
}

// editDistance is the Levenshtein distance of a and b, with a swap of two
// neighbours counting one (optimal string alignment): "lsit" is one slip
// from "list".
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}

// keyShapes are the prefixes each built-in provider's API keys begin
// with, most specific first: Anthropic's sk-ant-…, Google's AIza…, and
// OpenAI's sk-… (sk-proj-, sk-svcacct-, sk-admin- and the older bare sk-).
var keyShapes = []struct{ prefix, provider string }{
	{"sk-ant-", config.Anthropic},
	{"AIza", config.Google},
	{"sk-", config.OpenAI},
}

// keyShapeWarning is a line to warn with when key has the shape of
// another built-in provider's keys than provider's, else "". Custom
// providers' keys have any shape.
func keyShapeWarning(provider, key string) string {
	if providerTitles[provider] == "" {
		return ""
	}
	for _, s := range keyShapes {
		if strings.HasPrefix(key, s.prefix) {
			if s.provider == provider {
				return ""
			}
			return fmt.Sprintf("this key looks like %s key (%s…), not %s one; if so, remove it and run `subpool add-key %s`",
				providerTitles[s.provider], s.prefix, providerTitles[provider], s.provider)
		}
	}
	return ""
}

// providerTitles name the built-in providers in a sentence.
var providerTitles = map[string]string{config.Anthropic: "an Anthropic", config.OpenAI: "an OpenAI", config.Google: "a Google"}
