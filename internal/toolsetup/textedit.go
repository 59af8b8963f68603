package toolsetup

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
	"gopkg.in/yaml.v3"
)

// setDotenv sets KEY=value lines, in place where the key is already set
// (with or without `export`), else at the end; every other line is kept.
func setDotenv(before []byte, kv [][2]string) []byte {
	lines := splitLines(before)
	for _, p := range kv {
		re := regexp.MustCompile(`^\s*(export\s+)?` + regexp.QuoteMeta(p[0]) + `\s*=`)
		line := p[0] + "=" + p[1]
		found := false
		for i, l := range lines {
			if re.MatchString(l) {
				lines[i], found = line, true
			}
		}
		if !found {
			lines = append(lines, line)
		}
	}
	return joinLines(lines)
}

func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func joinLines(lines []string) []byte {
	return []byte(strings.Join(lines, "\n") + "\n")
}

// Codex reads config.toml in CODEX_HOME (else ~/.codex): subpool becomes a
// model provider of its own, chosen at the top level. The bearer token
// sits in the provider's table, so no shell variable is needed.
func codexConfig(e Env) string {
	return filepath.Join(e.dir("CODEX_HOME", ".codex"), "config.toml")
}

var tomlHeader = regexp.MustCompile(`^\s*\[`)

// codexEdit edits the text, not a re-encoding of it, so comments and
// layout stay: the top-level model_provider line is replaced (or put just
// before the first table), and subpool's own table (with any subtables)
// is written anew at the end. The result is parsed back and checked.
func codexEdit(before []byte, t Target) ([]byte, error) {
	if _, err := toml.Decode(string(before), new(map[string]any)); err != nil {
		return nil, fmt.Errorf("not valid TOML (%v); subpool setup edits only a file it can parse, so fix it or make the change by hand (subpool env codex prints it)", firstLine(err))
	}
	lines := splitLines(before)
	var kept []string
	inOurs, seenTable := false, false
	providerLine := -1
	for _, l := range lines {
		if tomlHeader.MatchString(l) {
			seenTable = true
			name := strings.Trim(strings.TrimSpace(l), "[] ")
			inOurs = name == "model_providers.subpool" || strings.HasPrefix(name, "model_providers.subpool.")
			if !inOurs && providerLine < 0 {
				providerLine = len(kept)
			}
		}
		if inOurs || (!seenTable && isTopKey(l, "model_provider")) {
			continue
		}
		kept = append(kept, l)
	}
	top := `model_provider = "subpool"`
	if providerLine < 0 {
		kept = append(kept, top)
	} else {
		kept = append(kept[:providerLine], append([]string{top, ""}, kept[providerLine:]...)...)
	}
	for len(kept) > 0 && strings.TrimSpace(kept[len(kept)-1]) == "" {
		kept = kept[:len(kept)-1]
	}
	if len(kept) > 0 {
		kept = append(kept, "")
	}
	kept = append(kept,
		"[model_providers.subpool]",
		`name = "subpool"`,
		fmt.Sprintf("base_url = %q", t.Base+"/v1"),
		`wire_api = "responses"`,
		fmt.Sprintf("experimental_bearer_token = %q", t.Key),
	)
	after := joinLines(kept)
	return after, checkCodex(after, t)
}

func isTopKey(line, key string) bool {
	l := strings.TrimSpace(line)
	rest, ok := strings.CutPrefix(l, key)
	return ok && strings.HasPrefix(strings.TrimSpace(rest), "=")
}

func checkCodex(after []byte, t Target) error {
	var got struct {
		ModelProvider  string `toml:"model_provider"`
		ModelProviders map[string]struct {
			BaseURL string `toml:"base_url"`
		} `toml:"model_providers"`
	}
	if _, err := toml.Decode(string(after), &got); err != nil {
		return fmt.Errorf("defines model_provider or model_providers.subpool in a form setup does not edit (%v); make the change by hand (subpool env codex prints it)", firstLine(err))
	}
	if got.ModelProvider != "subpool" || got.ModelProviders["subpool"].BaseURL != t.Base+"/v1" {
		return errors.New("defines model_providers.subpool in a form setup does not edit; make the change by hand (subpool env codex prints it)")
	}
	return nil
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// continueEdit puts one model named "subpool" in config.yaml's models,
// replacing an earlier one of that name. YAML is re-encoded from its node
// tree, which keeps comments, order and every other setting, though not
// every choice of quoting or indentation.
func continueEdit(before []byte, t Target) ([]byte, error) {
	var doc yaml.Node
	if len(bytes.TrimSpace(before)) > 0 {
		if err := yaml.Unmarshal(before, &doc); err != nil {
			return nil, fmt.Errorf("not valid YAML (%v); subpool setup edits only a file it can parse, so fix it or make the change by hand", firstLine(err))
		}
	}
	if doc.Kind == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{mapping(
			"name", "subpool", "version", "1.0.0", "schema", "v1")}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, errors.New("holds no mapping at its top; subpool setup leaves it alone: make the change by hand")
	}
	models := mapValue(root, "models")
	if models == nil {
		models = &yaml.Node{Kind: yaml.SequenceNode}
		root.Content = append(root.Content, scalar("models"), models)
	}
	if models.Kind != yaml.SequenceNode {
		return nil, errors.New("its models is not a list; subpool setup leaves it alone: make the change by hand")
	}
	ours := mapping("name", "subpool", "provider", "openai", "model", t.Model,
		"apiBase", t.Base+"/v1", "apiKey", t.Key)
	replaced := false
	for i, m := range models.Content {
		if v := mapValue(m, "name"); v != nil && v.Value == "subpool" {
			models.Content[i], replaced = ours, true
		}
	}
	if !replaced {
		models.Content = append(models.Content, ours)
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return out.Bytes(), enc.Close()
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }

func mapping(kv ...string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, s := range kv {
		n.Content = append(n.Content, scalar(s))
	}
	return n
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
