package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/BurntSushi/toml"
)

// metaFile is packaging/metadata.toml, relative to the repository root.
const metaFile = "packaging/metadata.toml"

// meta is packaging/metadata.toml.
type meta struct {
	Name        string   `toml:"name"`
	ID          string   `toml:"id"`
	Maintainer  string   `toml:"maintainer"`
	Homepage    string   `toml:"homepage"`
	License     string   `toml:"license"`
	GenericName string   `toml:"generic_name"`
	Summary     string   `toml:"summary"`
	Description string   `toml:"description"`
	Categories  []string `toml:"categories"`
	Keywords    []string `toml:"keywords"`
}

func loadMeta(path string) (meta, error) {
	var m meta
	md, err := toml.DecodeFile(path, &m)
	if err != nil {
		return meta{}, fmt.Errorf("%s: %v", path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return meta{}, fmt.Errorf("%s: unknown key %s", path, und[0])
	}
	if m.Name == "" || m.ID == "" || m.Maintainer == "" || m.Homepage == "" || m.Summary == "" {
		return meta{}, fmt.Errorf("%s: name, id, maintainer, homepage and summary are all needed", path)
	}
	m.Description = strings.TrimSpace(m.Description)
	return m, nil
}

// printEnv writes the metadata as shell assignments (SP_NAME=…) for
// scripts/dist.sh; the templates read it from packaging/tool render.
func printEnv(w io.Writer) error {
	m, err := loadMeta(metaFile)
	if err != nil {
		return err
	}
	for _, kv := range [][2]string{
		{"SP_NAME", m.Name}, {"SP_ID", m.ID}, {"SP_MAINTAINER", m.Maintainer},
		{"SP_HOMEPAGE", m.Homepage}, {"SP_LICENSE", m.License}, {"SP_SUMMARY", m.Summary},
		{"SP_DESCRIPTION", strings.ReplaceAll(m.Description, "\n", " ")},
	} {
		fmt.Fprintf(w, "export %s=%s\n", kv[0], shellQuote(kv[1]))
	}
	return nil
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
