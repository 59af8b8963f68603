package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/template"
)

// renderData is what the templates see: the metadata, VERSION (plain,
// without the tag's v) and the sha256 of the files in the dist folder.
type renderData struct {
	meta
	Version string
	dist    string
}

// Sha256 is the checksum of dist/name; a missing file is an error.
func (d renderData) Sha256(name string) (string, error) {
	return fileSHA256(filepath.Join(d.dist, name))
}

// Sha256IfBuilt is Sha256, or "" while name is not built yet (the macOS
// app, which only a macOS runner makes).
func (d renderData) Sha256IfBuilt(name string) (string, error) {
	s, err := d.Sha256(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return s, err
}

func renderFile(tmplPath, out, dist string) error {
	m, err := loadMeta(metaFile)
	if err != nil {
		return err
	}
	v := os.Getenv("VERSION")
	if v == "" {
		return fmt.Errorf("VERSION is empty")
	}
	t, err := template.New(filepath.Base(tmplPath)).Funcs(template.FuncMap{
		"join":  strings.Join,
		"split": strings.Split,
		"env":   os.Getenv,
	}).Option("missingkey=error").ParseFiles(tmplPath)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, renderData{meta: m, Version: v, dist: dist}); err != nil {
		return err
	}
	return os.WriteFile(out, b.Bytes(), 0o644)
}
