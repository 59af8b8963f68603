package keychain

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// windowsItems refuses items over Windows' 2560-byte credential blob, as go-keyring does, so
// the splitting is checked against the tightest real limit.
type windowsItems struct{ *memItems }

func (w windowsItems) Set(key, value string) error {
	if len(value) > 2560 {
		return fmt.Errorf("item %q is %d bytes: too big", key, len(value))
	}
	return w.memItems.Set(key, value)
}

// secretOf returns a deterministic, non-repeating test secret of n bytes, so a part stored in
// the wrong place or order cannot reassemble into the right value by accident.
func secretOf(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%08d,", i)
	}
	return b.String()[:n]
}

// multibyte returns a UTF-8 secret of at most n bytes (and at least n-3) made of 1-, 2-, 3-
// and 4-byte runes, so that cut positions fall inside runes.
func multibyte(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString([]string{"é", "€", "𝄞", "x"}[i%4])
	}
	s := b.String()
	if len(s) > n {
		cut := n
		for !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

func TestChunkedRoundTrip(t *testing.T) {
	sizes := []int{0, 1, maxItemBytes - 1, maxItemBytes, maxItemBytes + 1,
		maxItemBytes - headerMax, maxItemBytes - headerMax + 1, 2*maxItemBytes - headerMax,
		2*maxItemBytes - headerMax + 1, 10 << 10, 200 << 10, maxSecretBytes}
	for _, n := range sizes {
		for _, secret := range []string{secretOf(n), multibyte(n)} {
			text := utf8.ValidString(secret)
			items := windowsItems{newMemItems()}
			c := newChunked("test", items)
			if err := c.Set("k", secret); err != nil {
				t.Fatalf("Set %d bytes: %v", len(secret), err)
			}
			got, err := c.Get("k")
			if err != nil {
				t.Fatalf("Get %d bytes: %v", len(secret), err)
			}
			if got != secret {
				t.Fatalf("Get %d bytes: got %d bytes, different", len(secret), len(got))
			}
			for k, v := range items.m {
				if len(v) > maxItemBytes {
					t.Errorf("%d-byte secret: item %q holds %d bytes, over %d", len(secret), k, len(v), maxItemBytes)
				}
				if text && !utf8.ValidString(v) {
					t.Errorf("%d-byte secret: item %q was cut inside a rune", len(secret), k)
				}
			}
		}
	}
}

// A secret that fits one item is stored as is, so it reads normally in the keychain's UI.
func TestChunkedSmallSecretStoredAsIs(t *testing.T) {
	items := newMemItems()
	c := newChunked("test", items)
	if err := c.Set("k", "sk-small"); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"k": "sk-small"}; !maps.Equal(items.m, want) {
		t.Fatalf("items = %v, want %v", items.m, want)
	}
}

// A short secret that looks like a header must not be parsed as one.
func TestChunkedSecretStartingWithMagic(t *testing.T) {
	items := newMemItems()
	c := newChunked("test", items)
	for _, secret := range []string{chunkMagic, chunkMagic + "a1:0123456789abcdef:x", chunkMagic + "junk"} {
		if err := c.Set("k", secret); err != nil {
			t.Fatal(err)
		}
		got, err := c.Get("k")
		if err != nil || got != secret {
			t.Fatalf("Get = %q, %v; want %q", got, err, secret)
		}
	}
}

func TestChunkedOverwriteCleansParts(t *testing.T) {
	big, bigger := secretOf(10<<10), secretOf(30<<10)
	tests := []struct {
		name  string
		steps []string
	}{
		{"big then small", []string{big, "small"}},
		{"bigger then big", []string{bigger, big}},
		{"big then bigger then small", []string{big, bigger, "small"}},
		{"big then big", []string{big, big + "!"}},
		{"small then big", []string{"small", big}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items := newMemItems()
			c := newChunked("test", items)
			for _, s := range tt.steps {
				if err := c.Set("k", s); err != nil {
					t.Fatal(err)
				}
			}
			last := tt.steps[len(tt.steps)-1]
			if got, err := c.Get("k"); err != nil || got != last {
				t.Fatalf("Get = %d bytes, %v; want the last value", len(got), err)
			}
			want := len(split(last, maxItemBytes-headerMax, maxItemBytes))
			if len(last) <= maxItemBytes {
				want = 1
			}
			if len(items.m) != want {
				t.Fatalf("%d items left, want %d: %v", len(items.m), want, slices.Sorted(maps.Keys(items.m)))
			}
		})
	}
}

func TestChunkedDelete(t *testing.T) {
	items := newMemItems()
	c := newChunked("test", items)
	if err := c.Set("k", secretOf(10<<10)); err != nil {
		t.Fatal(err)
	}
	if err := c.Set("other", "keep me"); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete("k"); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"other": "keep me"}; !maps.Equal(items.m, want) {
		t.Fatalf("items after Delete = %v, want only %v", slices.Sorted(maps.Keys(items.m)), want)
	}
	if _, err := c.Get("k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
	if err := c.Delete("k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second Delete: %v, want ErrNotFound", err)
	}
}

var errCrash = errors.New("simulated crash")

// crashingItems lets the first writes calls of Set or Delete through and then fails every
// call, as if the process had been killed at that point.
type crashingItems struct {
	*memItems
	writes int
}

func (c *crashingItems) Get(key string) (string, error) {
	if c.writes < 0 {
		return "", errCrash
	}
	return c.memItems.Get(key)
}

func (c *crashingItems) Set(key, value string) error {
	if c.writes--; c.writes < 0 {
		return errCrash
	}
	return c.memItems.Set(key, value)
}

func (c *crashingItems) Delete(key string) error {
	if c.writes--; c.writes < 0 {
		return errCrash
	}
	return c.memItems.Delete(key)
}

// Whatever point a Set or Delete is interrupted at, Get returns the old or the new secret,
// never an error or a mix, and the next clean Delete leaves no part behind.
func TestChunkedInterruptedWrites(t *testing.T) {
	values := map[string]string{
		"absent": "",
		"small":  "small",
		"magic":  chunkMagic + "x",
		"3parts": secretOf(2*maxItemBytes + 10),
		"5parts": multibyte(4*maxItemBytes + 10),
	}
	names := slices.Sorted(maps.Keys(values))
	for _, from := range names {
		for _, to := range append(names, "delete") {
			if from == to || to == "absent" {
				continue
			}
			t.Run(from+" to "+to, func(t *testing.T) {
				for n := 0; ; n++ {
					items := newMemItems()
					setup := newChunked("test", items)
					if from != "absent" {
						if err := setup.Set("k", values[from]); err != nil {
							t.Fatal(err)
						}
					}
					crashing := &crashingItems{memItems: items, writes: n}
					c := newChunked("test", crashing)
					var err error
					if to == "delete" {
						err = c.Delete("k")
					} else {
						err = c.Set("k", values[to])
					}
					done := !errors.Is(err, errCrash)

					after := newChunked("test", items)
					got, gerr := after.Get("k")
					oldOK := (from == "absent" && errors.Is(gerr, ErrNotFound)) || (gerr == nil && got == values[from])
					newOK := (to == "delete" && errors.Is(gerr, ErrNotFound)) || (gerr == nil && got == values[to])
					if !oldOK && !newOK {
						t.Fatalf("after %d writes: Get = %d bytes, %v; want the old or the new value", n, len(got), gerr)
					}
					if done && !newOK {
						t.Fatalf("after a completed %s: Get = %d bytes, %v; want the new value", to, len(got), gerr)
					}
					if err := after.Delete("k"); err != nil && !errors.Is(err, ErrNotFound) {
						t.Fatal(err)
					}
					if len(items.m) != 0 {
						t.Fatalf("crash after %d writes, then Delete: items left: %v", n, slices.Sorted(maps.Keys(items.m)))
					}
					if done {
						return
					}
				}
			})
		}
	}
}

// hookItems runs onGet once, the first time Get is asked for key.
type hookItems struct {
	*memItems
	key   string
	onGet func()
}

func (h *hookItems) Get(key string) (string, error) {
	if key == h.key && h.onGet != nil {
		f := h.onGet
		h.onGet = nil
		f()
	}
	return h.memItems.Get(key)
}

// Another process replacing a split secret while Get reads its parts makes Get start over
// and return the new secret, not a mix of both.
func TestChunkedGetRetriesWhenReplacedMidway(t *testing.T) {
	items := newMemItems()
	old, replacement := secretOf(3*maxItemBytes), multibyte(3*maxItemBytes)
	if err := newChunked("test", items).Set("k", old); err != nil {
		t.Fatal(err)
	}
	other := newChunked("other process", items)
	reader := newChunked("test", &hookItems{memItems: items, key: "k#a1", onGet: func() {
		if err := other.Set("k", replacement); err != nil {
			t.Error(err)
		}
	}})
	got, err := reader.Get("k")
	if err != nil {
		t.Fatal(err)
	}
	if got != replacement {
		t.Fatalf("Get returned %d bytes that are not the replacement", len(got))
	}
}

func TestChunkedCorruptValues(t *testing.T) {
	secret := secretOf(3 * maxItemBytes)
	tests := []struct {
		name   string
		tamper func(m map[string]string)
	}{
		{"part changed", func(m map[string]string) { m["k#a1"] = strings.Repeat("x", len(m["k#a1"])) }},
		{"part missing", func(m map[string]string) { delete(m, "k#a2") }},
		{"bad slot", func(m map[string]string) { m["k"] = chunkMagic + "z2:0123456789abcdef:x" }},
		{"no count", func(m map[string]string) { m["k"] = chunkMagic + "a" }},
		{"huge count", func(m map[string]string) { m["k"] = chunkMagic + "a999999999:0123456789abcdef:x" }},
		{"zero count", func(m map[string]string) { m["k"] = chunkMagic + "a0:0123456789abcdef:x" }},
		{"short sum", func(m map[string]string) { m["k"] = chunkMagic + "a2:0123:x" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items := newMemItems()
			c := newChunked("test", items)
			if err := c.Set("k", secret); err != nil {
				t.Fatal(err)
			}
			tt.tamper(items.m)
			_, err := c.Get("k")
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Get: %v, want ErrCorrupt", err)
			}
			if strings.Contains(err.Error(), secret[:20]) {
				t.Fatalf("error quotes the secret: %v", err)
			}
			// A corrupt value can still be replaced and deleted.
			if err := c.Set("k", "fresh"); err != nil {
				t.Fatal(err)
			}
			if err := c.Delete("k"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestChunkedRefusesHugeSecret(t *testing.T) {
	c := newChunked("test", newMemItems())
	secret := secretOf(maxSecretBytes + 1)
	err := c.Set("k", secret)
	if err == nil {
		t.Fatal("Set of a secret over maxSecretBytes succeeded")
	}
	if strings.Contains(err.Error(), secret[:20]) {
		t.Fatalf("error quotes the secret: %v", err)
	}
}

func TestKeysAreChecked(t *testing.T) {
	stores := map[string]Store{
		"chunked": newChunked("test", newMemItems()),
		"memory":  NewMemory(),
	}
	fs, err := NewFile(t.TempDir() + "/secrets.json")
	if err != nil {
		t.Fatal(err)
	}
	stores["file"] = fs
	for name, s := range stores {
		for _, key := range []string{"", "a#b", "k#a1"} {
			if err := s.Set(key, "v"); err == nil {
				t.Errorf("%s: Set(%q) succeeded", name, key)
			}
			if _, err := s.Get(key); err == nil || errors.Is(err, ErrNotFound) {
				t.Errorf("%s: Get(%q) = %v, want a key error", name, key, err)
			}
			if err := s.Delete(key); err == nil || errors.Is(err, ErrNotFound) {
				t.Errorf("%s: Delete(%q) = %v, want a key error", name, key, err)
			}
		}
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		s           string
		first, rest int
		want        []string
	}{
		{"", 3, 4, []string{""}},
		{"abc", 3, 4, []string{"abc"}},
		{"abcdefgh", 3, 4, []string{"abc", "defg", "h"}},
		// "é" is 2 bytes: a cut after byte 3 would fall inside the second one.
		{"ééé", 3, 4, []string{"é", "éé"}},
		{"éé", 1, 1, []string{"\xc3", "\xa9", "\xc3", "\xa9"}},
		// Not UTF-8: cut exactly at the limits.
		{"\x80\x80\x80\x80\x80\x80\x80\x80\x80", 4, 4, []string{"\x80\x80\x80\x80", "\x80\x80\x80\x80", "\x80"}},
		{"é\xff", 1, 4, []string{"\xc3", "\xa9\xff"}},
	}
	for _, tt := range tests {
		got := split(tt.s, tt.first, tt.rest)
		if !slices.Equal(got, tt.want) {
			t.Errorf("split(%q, %d, %d) = %q, want %q", tt.s, tt.first, tt.rest, got, tt.want)
		}
		if strings.Join(got, "") != tt.s {
			t.Errorf("split(%q) does not join back", tt.s)
		}
	}
}
