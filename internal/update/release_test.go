package update

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
)

// fakeBinary is testdata/fakesubpool answering `version` with v: built
// once, then v written over the stamp in a copy of its bytes.
var (
	fakeOnce  sync.Once
	fakeBuilt []byte
	fakeErr   error
)

const fakeStamp = "fakesubpool-version:dev                             ."

func fakeBinary(t *testing.T, v string) []byte {
	t.Helper()
	fakeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "subpool-fake-")
		if err != nil {
			fakeErr = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "fake"+exeSuffix())
		cmd := exec.Command("go", "build", "-ldflags=-s -w", "-o", out, "./testdata/fakesubpool")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			fakeErr = fmt.Errorf("building the fake binary: %v\n%s", err, msg)
			return
		}
		fakeBuilt, fakeErr = os.ReadFile(out)
	})
	if fakeErr != nil {
		t.Fatal(fakeErr)
	}
	stamp := fmt.Sprintf("fakesubpool-version:%-32s.", v)
	if len(stamp) != len(fakeStamp) || bytes.Count(fakeBuilt, []byte(fakeStamp)) != 1 {
		t.Fatalf("the fake binary's stamp cannot hold %q", v)
	}
	return bytes.Replace(fakeBuilt, []byte(fakeStamp), []byte(stamp), 1)
}

func exeSuffix() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}

// release is a release's files, as make dist lays them out.
type release struct {
	tag   string
	files map[string][]byte
}

// newRelease packs bin as this platform's archive for tag and signs
// SHA256SUMS over it with key.
func newRelease(t *testing.T, tag string, bin []byte, key ed25519.PrivateKey) release {
	t.Helper()
	in := Installer{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
	name, member := in.archive(tag)
	var arch []byte
	if strings.HasSuffix(name, ".zip") {
		arch = zipOf(t, "subpool_"+Plain(tag)+"/"+member, bin)
	} else {
		arch = tarGzOf(t, strings.TrimSuffix(name, ".tar.gz")+"/bin/"+member, bin)
	}
	r := release{tag: tag, files: map[string][]byte{name: arch}}
	r.sign(key)
	return r
}

// sign writes SHA256SUMS over every file but the two it writes, and its
// signature, as make dist does.
func (r release) sign(key ed25519.PrivateKey) {
	var names []string
	for n := range r.files {
		if n != SumsName && n != SigName {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var sums bytes.Buffer
	for _, n := range names {
		s := sha256.Sum256(r.files[n])
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(s[:]), n)
	}
	r.files[SumsName] = sums.Bytes()
	r.files[SigName] = Sign(key, sums.Bytes())
}

func tarGzOf(t *testing.T, name string, b []byte) []byte {
	var buf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed) // the race detector slows compression tenfold
	tw := tar.NewWriter(gz)
	for _, h := range []*tar.Header{
		{Name: filepath.Dir(name) + "/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: name, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(b))},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	tw.Write(b)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	gz.Close()
	return buf.Bytes()
}

func zipOf(t *testing.T, name string, b []byte) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(b)
	zw.Close()
	return buf.Bytes()
}

// feed serves r on loopback in GitHub's releases/latest shape. truncate
// names a file whose download stops halfway, the connection closed.
type feed struct {
	*httptest.Server
	mu       sync.Mutex
	rel      release
	truncate string
	requests []string
}

func serveFeed(t *testing.T, r release) *feed {
	f := &feed{rel: r}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *feed) URL() string { return f.Server.URL + "/repos/subpool/subpool/releases/latest" }

func (f *feed) serve(w http.ResponseWriter, req *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, req.URL.String())
	rel, trunc := f.rel, f.truncate
	f.mu.Unlock()
	if req.URL.Path == "/repos/subpool/subpool/releases/latest" {
		out := Release{TagName: rel.tag, HTMLURL: f.Server.URL + "/releases/tag/" + rel.tag}
		for n, b := range rel.files {
			out.Assets = append(out.Assets, Asset{Name: n, URL: f.Server.URL + "/download/" + n, Size: int64(len(b))})
		}
		json.NewEncoder(w).Encode(out)
		return
	}
	name := strings.TrimPrefix(req.URL.Path, "/download/")
	b, ok := rel.files[name]
	if !ok {
		http.NotFound(w, req)
		return
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	if name != trunc {
		w.Write(b)
		return
	}
	w.Write(b[:len(b)/2])
	w.(http.Flusher).Flush()
	conn, _, _ := w.(http.Hijacker).Hijack()
	conn.Close()
}
