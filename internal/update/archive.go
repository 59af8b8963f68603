package update

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
)

// ArchiveName is the release file that carries this kind of build: the
// tray or headless tarball on Linux, the zip (both exes) on Windows.
func ArchiveName(version, goos, goarch string, headless bool) string {
	v := Plain(version)
	if goos == "windows" {
		return fmt.Sprintf("subpool_%s_windows_%s.zip", v, goarch)
	}
	name := "subpool"
	if headless {
		name = "subpool-headless"
	}
	return fmt.Sprintf("%s_%s_%s_%s.tar.gz", name, v, goos, goarch)
}

// maxBinary bounds the one file taken out of an archive (the Windows
// tray exe is about 60 MB).
const maxBinary = 512 << 20

// extract copies archive's member named member (its base name, inside
// any folder; "subpool" in a tarball only under bin/) to dst.
func extract(archive, member string, dst io.Writer) error {
	if strings.HasSuffix(archive, ".zip") {
		return extractZip(archive, member, dst)
	}
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("the archive is not gzip: %v", err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return fmt.Errorf("the archive holds no bin/%s", member)
		}
		if err != nil {
			return fmt.Errorf("the archive is unreadable: %v", err)
		}
		if h.Typeflag == tar.TypeReg && path.Base(h.Name) == member && path.Base(path.Dir(h.Name)) == "bin" {
			return copyBounded(dst, tr)
		}
	}
}

func extractZip(archive, member string, dst io.Writer) error {
	z, err := zip.OpenReader(archive)
	if err != nil {
		return fmt.Errorf("the archive is not a zip: %v", err)
	}
	defer z.Close()
	for _, f := range z.File {
		if path.Base(f.Name) != member || f.FileInfo().IsDir() {
			continue
		}
		r, err := f.Open()
		if err != nil {
			return fmt.Errorf("the archive's %s is unreadable: %v", f.Name, err)
		}
		defer r.Close()
		return copyBounded(dst, r)
	}
	return fmt.Errorf("the archive holds no %s", member)
}

func copyBounded(dst io.Writer, src io.Reader) error {
	n, err := io.Copy(dst, io.LimitReader(src, maxBinary+1))
	if err != nil {
		return fmt.Errorf("the archive is unreadable: %v", err)
	}
	if n > maxBinary {
		return fmt.Errorf("the archive's binary is over %d MiB", maxBinary>>20)
	}
	return nil
}
