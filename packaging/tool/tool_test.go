package main

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/subpool/subpool/internal/update"
)

// The tool runs from the repository's root, as the Makefile runs it.
func atRoot(t *testing.T) { t.Chdir("../..") }

// TestMetadataMatchesFyneApp: fyne package reads FyneApp.toml, the
// packages packaging/metadata.toml; the two must not drift.
func TestMetadataMatchesFyneApp(t *testing.T) {
	atRoot(t)
	m, err := loadMeta(metaFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Website string
		Details struct{ Name, ID string }
		Linux   struct {
			GenericName, Comment string
			Categories, Keywords []string
		} `toml:"LinuxAndBSD"`
	}
	if _, err := toml.DecodeFile("FyneApp.toml", &f); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ what, fyne, meta string }{
		{"Website/homepage", f.Website, m.Homepage}, {"Name", f.Details.Name, m.Name}, {"ID", f.Details.ID, m.ID},
		{"GenericName", f.Linux.GenericName, m.GenericName}, {"Comment/summary", f.Linux.Comment, m.Summary},
	} {
		if c.fyne != c.meta {
			t.Errorf("FyneApp.toml's %s is %q, packaging/metadata.toml's %q", c.what, c.fyne, c.meta)
		}
	}
	if !slices.Equal(f.Linux.Categories, m.Categories) || !slices.Equal(f.Linux.Keywords, m.Keywords) {
		t.Errorf("categories or keywords differ: %v %v / %v %v", f.Linux.Categories, f.Linux.Keywords, m.Categories, m.Keywords)
	}
}

func TestIcons(t *testing.T) {
	atRoot(t)
	dir := t.TempDir()
	if err := writeIcons("assets/icon.png", dir); err != nil {
		t.Fatal(err)
	}
	for _, n := range iconSizes {
		p := filepath.Join(dir, fmt.Sprintf("%dx%d", n, n), "apps", "io.subpool.app.png")
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil || img.Bounds().Dx() != n || img.Bounds().Dy() != n {
			t.Errorf("%s: %v, %v", p, err, img.Bounds())
		}
	}
}

// TestDistSignatureVerifies checks a release folder as `subpool update`
// would: SHA256SUMS.sig verifies and every listed file has its checksum.
// make dist runs it on dist/ (SUBPOOL_DIST) with the binaries' -ldflags,
// so the key is the one they carry; alone, it signs a sample folder with
// the tool's own sign and a key of its own.
func TestDistSignatureVerifies(t *testing.T) {
	dir := os.Getenv("SUBPOOL_DIST")
	var pub ed25519.PublicKey
	if dir != "" {
		k, err := update.PublicKey()
		if err != nil {
			t.Fatal(err)
		}
		pub = k
	} else {
		dir = t.TempDir()
		pub = sampleRelease(t, dir)
	}
	sums, err := os.ReadFile(filepath.Join(dir, update.SumsName))
	if err != nil {
		t.Fatal(err)
	}
	sig, err := os.ReadFile(filepath.Join(dir, update.SigName))
	if err != nil {
		t.Fatal(err)
	}
	if err := update.VerifySums(pub, sums, sig); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() == update.SumsName || e.Name() == update.SigName {
			continue
		}
		want, err := update.SumFor(sums, e.Name())
		if err != nil {
			t.Fatal(err)
		}
		got, _ := fileSHA256(filepath.Join(dir, e.Name()))
		if got != fmt.Sprintf("%x", want) {
			t.Errorf("%s: sha256 %s, SHA256SUMS says %x", e.Name(), got, want)
		}
	}
	if len(entries) < 3 {
		t.Errorf("%s holds %d files", dir, len(entries))
	}
}

// sampleRelease signs two files in dir with a fresh key, as make dist
// signs dist/, and returns the public key.
func sampleRelease(t *testing.T, dir string) ed25519.PublicKey {
	pub, priv, _ := ed25519.GenerateKey(nil)
	t.Setenv("SUBPOOL_SIGNING_KEY", base64.StdEncoding.EncodeToString(priv.Seed()))
	os.WriteFile(filepath.Join(dir, "a.tar.gz"), []byte("a"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.zip"), []byte("b"), 0o644)
	if err := signDir(dir); err != nil {
		t.Fatal(err)
	}
	// A file changed after signing no longer matches: the check can fail.
	tampered := t.TempDir()
	sampleCopy(t, dir, tampered)
	os.WriteFile(filepath.Join(tampered, "a.tar.gz"), []byte("A"), 0o644)
	sums, _ := os.ReadFile(filepath.Join(tampered, update.SumsName))
	if want, _ := update.SumFor(sums, "a.tar.gz"); fmt.Sprintf("%x", want) == mustSum(t, filepath.Join(tampered, "a.tar.gz")) {
		t.Fatal("a changed file still matches its checksum")
	}
	return pub
}

func sampleCopy(t *testing.T, from, to string) {
	entries, _ := os.ReadDir(from)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(from, e.Name()))
		os.WriteFile(filepath.Join(to, e.Name()), b, 0o644)
	}
}

func mustSum(t *testing.T, p string) string {
	s, err := fileSHA256(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRenderTemplates fills the desktop entry, formula and cask as make
// dist does, for a release folder with and without the macOS zip.
func TestRenderTemplates(t *testing.T) {
	atRoot(t)
	t.Setenv("VERSION", "1.2.3")
	dist := t.TempDir()
	os.WriteFile(filepath.Join(dist, "subpool_1.2.3_src.tar.gz"), []byte("src"), 0o644)
	out := filepath.Join(t.TempDir(), "out")
	render := func(tmpl string) string {
		t.Helper()
		if err := renderFile(tmpl, out, dist); err != nil {
			t.Fatalf("%s: %v", tmpl, err)
		}
		b, _ := os.ReadFile(out)
		return string(b)
	}
	if d := render("packaging/subpool.desktop.tmpl"); !strings.Contains(d, "\nIcon=io.subpool.app\n") || !strings.Contains(d, "Categories=Development;Utility;\n") {
		t.Errorf("desktop entry:\n%s", d)
	}
	srcSum := mustSum(t, filepath.Join(dist, "subpool_1.2.3_src.tar.gz"))
	if f := render("packaging/homebrew/subpool.rb.tmpl"); !strings.Contains(f, `sha256 "`+srcSum+`"`) || !strings.Contains(f, "/releases/download/v1.2.3/subpool_1.2.3_src.tar.gz") {
		t.Errorf("formula:\n%s", f)
	}
	if c := render("packaging/homebrew/subpool-app.rb.tmpl"); !strings.Contains(c, "sha256 :no_check") {
		t.Errorf("cask without the macOS zip:\n%s", c)
	}
	os.WriteFile(filepath.Join(dist, "subpool_1.2.3_darwin_universal.zip"), []byte("app"), 0o644)
	appSum := mustSum(t, filepath.Join(dist, "subpool_1.2.3_darwin_universal.zip"))
	if c := render("packaging/homebrew/subpool-app.rb.tmpl"); !strings.Contains(c, `sha256 "`+appSum+`"`) || strings.Contains(c, "no_check") || !strings.Contains(c, `version "1.2.3"`) {
		t.Errorf("cask with the macOS zip:\n%s", c)
	}
	os.Remove(filepath.Join(dist, "subpool_1.2.3_src.tar.gz"))
	if err := renderFile("packaging/homebrew/subpool.rb.tmpl", out, dist); err == nil {
		t.Error("a formula was written without its source archive's checksum")
	}
}
