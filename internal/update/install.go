package update

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// maxSums bounds SHA256SUMS and its signature (a dozen lines).
const maxSums = 1 << 20

// maxArchive bounds a release archive's download.
const maxArchive = 1 << 30

// Installer replaces one installed binary with a release's.
type Installer struct {
	Client
	// Key verifies SHA256SUMS.sig; PublicKey() for a real install.
	Key ed25519.PublicKey
	// Exe is the binary to replace (os.Executable, links resolved).
	Exe string
	// GOOS, GOARCH and Headless pick the release file (ArchiveName) and
	// the binary inside it.
	GOOS, GOARCH string
	Headless     bool
}

// Update installs the feed's latest release when it is newer than
// current; otherwise it leaves Exe alone and the Notice says why.
func (in Installer) Update(ctx context.Context, feed, current string) (Notice, error) {
	n, r, err := in.Check(ctx, feed, current)
	if err != nil {
		return n, err
	}
	if _, err := Compare(current, r.TagName); err != nil {
		return n, fmt.Errorf("this build (%s) is not a release, so it cannot tell what %s replaces; install it from %s", current, Plain(r.TagName), r.HTMLURL)
	}
	if !n.Newer {
		return n, nil
	}
	return n, in.Install(ctx, r)
}

// archive is the release file for tag, and member the binary in it.
func (in Installer) archive(tag string) (archive, member string) {
	member = "subpool"
	if in.GOOS == "windows" {
		member = "subpool.exe"
		if in.Headless {
			member = "subpool-headless.exe"
		}
	}
	return ArchiveName(tag, in.GOOS, in.GOARCH, in.Headless), member
}

// Install downloads r's SHA256SUMS and its signature, verifies them, then
// the archive against its listed checksum, takes the binary out and puts
// it at Exe by rename, keeping the old one as Exe.old until the new one
// has run `version` and named r's version. Any failure before that leaves
// Exe as it was; a new binary that does not start is rolled back.
func (in Installer) Install(ctx context.Context, r Release) error {
	archive, member := in.archive(r.TagName)
	want, err := in.verifiedSum(ctx, r, archive)
	if err != nil {
		return fmt.Errorf("%v; nothing was replaced", err)
	}
	newBin, err := in.fetchBinary(ctx, r, archive, member, want)
	if err != nil {
		return fmt.Errorf("%v; nothing was replaced", err)
	}
	defer os.Remove(newBin) // gone once renamed; else the leftover
	return in.swap(ctx, newBin, r.TagName)
}

// verifiedSum is the archive's SHA-256 from a SHA256SUMS whose signature
// verifies.
func (in Installer) verifiedSum(ctx context.Context, r Release, archive string) ([]byte, error) {
	sums, err := in.small(ctx, r, SumsName)
	if err != nil {
		return nil, err
	}
	sig, err := in.small(ctx, r, SigName)
	if err != nil {
		return nil, err
	}
	if err := VerifySums(in.Key, sums, sig); err != nil {
		return nil, err
	}
	return SumFor(sums, archive)
}

// small downloads one of the release's small text files.
func (in Installer) small(ctx context.Context, r Release, name string) ([]byte, error) {
	a, err := r.asset(name)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, defaultTimeout)
	defer cancel()
	resp, err := in.get(ctx, a.URL, "application/octet-stream")
	if err != nil {
		return nil, fmt.Errorf("cannot download %s: %v", name, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxSums+1))
	if err != nil {
		return nil, fmt.Errorf("the download of %s broke off: %v", name, err)
	}
	if len(b) > maxSums {
		return nil, fmt.Errorf("%s is over %d KiB", name, maxSums>>10)
	}
	return b, nil
}

// fetchBinary downloads the archive beside Exe (so the final rename stays
// on one file system), checks its SHA-256 against want and extracts the
// binary next to it; it returns the binary's path.
func (in Installer) fetchBinary(ctx context.Context, r Release, archive, member string, want []byte) (string, error) {
	a, err := r.asset(archive)
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(in.Exe)
	arch, err := os.CreateTemp(dir, ".subpool-download-*-"+archive)
	if err != nil {
		return "", fmt.Errorf("cannot write in %s: %v", dir, err)
	}
	defer os.Remove(arch.Name())
	err = in.download(ctx, a, want, arch)
	if cerr := arch.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	bin, err := os.CreateTemp(dir, ".subpool-new-*")
	if err != nil {
		return "", fmt.Errorf("cannot write in %s: %v", dir, err)
	}
	err = extract(arch.Name(), member, bin)
	if cerr := bin.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(bin.Name(), execMode(in.Exe))
	}
	if err != nil {
		os.Remove(bin.Name())
		return "", err
	}
	return bin.Name(), nil
}

// download writes a's bytes to dst and checks them against want.
func (in Installer) download(ctx context.Context, a Asset, want []byte, dst io.Writer) error {
	resp, err := in.get(ctx, a.URL, "application/octet-stream")
	if err != nil {
		return fmt.Errorf("cannot download %s: %v", a.Name, err)
	}
	defer resp.Body.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(dst, h), io.LimitReader(resp.Body, maxArchive+1))
	switch {
	case err != nil:
		return fmt.Errorf("the download of %s broke off after %d bytes: %v", a.Name, n, err)
	case n > maxArchive:
		return fmt.Errorf("%s is over %d MiB", a.Name, maxArchive>>20)
	case a.Size > 0 && n != a.Size:
		return fmt.Errorf("the download of %s ended after %d of its %d bytes", a.Name, n, a.Size)
	}
	if got := h.Sum(nil); !bytes.Equal(got, want) {
		return fmt.Errorf("%s's SHA-256 %.12s… is not the %.12s… SHA256SUMS lists", a.Name, hex.EncodeToString(got), hex.EncodeToString(want))
	}
	return nil
}

// execMode is the installed binary's mode, so the new one keeps it.
func execMode(exe string) os.FileMode {
	if fi, err := os.Stat(exe); err == nil {
		return fi.Mode().Perm()
	}
	return 0o755
}
