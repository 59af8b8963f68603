package main

import (
	"archive/zip"
	"io"
	"os"
	"path/filepath"
)

// zipDir writes out holding dir's files under dir's own name, with fixed
// times so the same files make the same zip (Debian has no zip by
// default, and a release should not need one installed).
func zipDir(out, dir string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(f)
	prefix := filepath.Dir(dir)
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(prefix, path)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		h, err := zip.FileInfoHeader(fi)
		if err != nil {
			return err
		}
		h.Name, h.Method, h.Modified = filepath.ToSlash(rel), zip.Deflate, zipTime
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(w, src)
		return err
	})
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// zipTime is every member's time: SOURCE_DATE_EPOCH's when set (as the
// tarballs use), else 1980-01-01, the earliest time a zip can hold.
var zipTime = sourceDate()
