package keychain

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// itemStore is a flat namespace of small items, which is all the OS keychains offer.
// Get and Delete of a missing item return an error wrapping ErrNotFound.
type itemStore interface {
	Get(key string) (string, error)
	Set(key, value string) error
	Delete(key string) error
}

const (
	// maxItemBytes bounds every item written to the OS keychain, header included. The
	// smallest platform limit is Windows' 2560-byte credential blob; macOS allows about 3000
	// bytes of service, account and base64 password on one `security -i` line. 2000 leaves
	// room for a long key on macOS (base64 turns 2000 bytes into 2668).
	maxItemBytes = 2000
	// maxSecretBytes refuses values no credential needs, so a corrupt header cannot make Get
	// walk through millions of items.
	maxSecretBytes = 1 << 20

	// chunkMagic starts the first item of a split secret. A short secret that happens to start
	// with it is stored split (in one part) so Get never mistakes it for a header.
	chunkMagic = "subpool:chunked:1:"
	sumLen     = 16 // hex digits of the SHA-256 prefix kept in the header
	// headerMax is the longest header: magic, slot letter, part count, ':', sum, ':'.
	headerMax = len(chunkMagic) + 1 + 7 + 1 + sumLen + 1
	// maxParts bounds the parts of a maxSecretBytes secret: each part but the last holds at
	// least maxItemBytes-headerMax-(utf8.UTFMax-1) bytes.
	maxParts = maxSecretBytes/(maxItemBytes-headerMax-utf8.UTFMax) + 2

	// readAttempts bounds how often Get starts over when another process replaced the secret
	// while Get was reading its parts.
	readAttempts = 3
)

// chunked stores secrets of any size over an itemStore whose items are small.
//
// A secret that fits one item (and does not start with chunkMagic) is stored as is under its
// key, so it reads normally in the OS keychain's own UI. A larger one is split: the item
// under key holds a header and the first part; the others are "key#a1", "key#a2", … or
// "key#b1", … The header names the slot letter, the part count and a SHA-256 prefix of the
// whole secret.
//
// The two slots make Set crash-safe: it writes the parts into the slot the current header
// does not use, then replaces the header item (the single write that switches to the new
// value), and only then removes the old slot. A Set that fails or is killed halfway leaves
// the old secret readable. Parts are written in increasing and removed in decreasing order,
// so each slot always holds a contiguous run key#s1…key#sN, which is what lets trim find
// leftovers of an interrupted Set without a listing API (go-keyring has none).
type chunked struct {
	name  string
	items itemStore
	// mu makes each Get, Set and Delete atomic within the process; across processes the
	// header sum and Get's retries catch a secret replaced while it was being read.
	mu sync.Mutex
}

func newChunked(name string, items itemStore) *chunked {
	return &chunked{name: name, items: items}
}

func (c *chunked) Name() string { return c.name }

type header struct {
	slot  byte // 'a' or 'b'
	parts int
	sum   string
}

func (h header) String() string {
	return chunkMagic + string(h.slot) + strconv.Itoa(h.parts) + ":" + h.sum + ":"
}

// parseHeader splits the first item of a split secret into its header and first part.
// ok is false for a value that is not a header at all (a secret stored as is).
func parseHeader(v string) (h header, first string, ok bool, err error) {
	rest, ok := strings.CutPrefix(v, chunkMagic)
	if !ok {
		return header{}, "", false, nil
	}
	bad := errors.New("malformed header")
	if len(rest) < 1 || (rest[0] != 'a' && rest[0] != 'b') {
		return header{}, "", true, bad
	}
	h.slot = rest[0]
	count, rest, found := strings.Cut(rest[1:], ":")
	if !found {
		return header{}, "", true, bad
	}
	h.parts, err = strconv.Atoi(count)
	if err != nil || h.parts < 1 || h.parts > maxParts {
		return header{}, "", true, bad
	}
	if len(rest) < sumLen+1 || rest[sumLen] != ':' {
		return header{}, "", true, bad
	}
	h.sum = rest[:sumLen]
	return h, rest[sumLen+1:], true, nil
}

func sumOf(secret string) string {
	s := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(s[:sumLen/2])
}

func partKey(key string, slot byte, i int) string {
	return key + "#" + string(slot) + strconv.Itoa(i)
}

func otherSlot(slot byte) byte {
	if slot == 'a' {
		return 'b'
	}
	return 'a'
}

// split cuts s into parts of at most first bytes, then rest bytes. For a UTF-8 secret, cuts
// move back to a rune boundary so that every part is valid UTF-8 on its own, in case a
// keychain treats items as text; other bytes are cut exactly at the limits.
func split(s string, first, rest int) []string {
	text := utf8.ValidString(s)
	var parts []string
	limit := first
	for len(s) > limit {
		cut := limit
		for text && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if cut == 0 { // a limit smaller than one rune: no choice but to cut inside it
			cut = limit
		}
		parts = append(parts, s[:cut])
		s = s[cut:]
		limit = rest
	}
	return append(parts, s)
}

func (c *chunked) Get(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()

	var why string
	for range readAttempts {
		head, err := c.items.Get(key)
		if err != nil {
			return "", failed("reading", key, err)
		}
		h, first, isHeader, err := parseHeader(head)
		if !isHeader {
			return head, nil
		}
		if err != nil {
			return "", fmt.Errorf("keychain: %q has a %v: %w", key, err, ErrCorrupt)
		}
		var b strings.Builder
		b.WriteString(first)
		why = ""
		for i := 1; i < h.parts; i++ {
			p, err := c.items.Get(partKey(key, h.slot, i))
			if errors.Is(err, ErrNotFound) {
				// Another process may have just replaced the secret and removed this slot.
				why = fmt.Sprintf("part %d of %d is missing", i+1, h.parts)
				break
			}
			if err != nil {
				return "", failed("reading", key, err)
			}
			b.WriteString(p)
		}
		if why != "" {
			continue
		}
		secret := b.String()
		if sumOf(secret) != h.sum {
			why = fmt.Sprintf("its %d parts do not match the checksum", h.parts)
			continue
		}
		return secret, nil
	}
	return "", fmt.Errorf("keychain: %q cannot be read back (%s); store it again: %w", key, why, ErrCorrupt)
}

func (c *chunked) Set(key, secret string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if len(secret) > maxSecretBytes {
		return fmt.Errorf("keychain: secret for %q is %d bytes; the limit is %d", key, len(secret), maxSecretBytes)
	}
	c.mu.Lock()
	defer c.mu.Unlock()

	oldSlot := byte(0)
	head, err := c.items.Get(key)
	switch {
	case err == nil:
		if h, _, isHeader, err := parseHeader(head); isHeader && err == nil {
			oldSlot = h.slot
		}
	case !errors.Is(err, ErrNotFound):
		return failed("storing", key, err)
	}

	if len(secret) <= maxItemBytes && !strings.HasPrefix(secret, chunkMagic) {
		if err := c.items.Set(key, secret); err != nil {
			return failed("storing", key, err)
		}
		return c.cleanup(key, c.trimSlots(key, 'a', 'b'))
	}

	slot := otherSlot(oldSlot)
	parts := split(secret, maxItemBytes-headerMax, maxItemBytes)
	for i := 1; i < len(parts); i++ {
		if err := c.items.Set(partKey(key, slot, i), parts[i]); err != nil {
			return failed("storing", key, err)
		}
	}
	// Leftovers of an older, longer secret in this slot would be harmless to Get but would
	// keep old secret material in the keychain.
	if err := c.trim(key, slot, len(parts)); err != nil {
		return failed("storing", key, err)
	}
	h := header{slot: slot, parts: len(parts), sum: sumOf(secret)}
	if err := c.items.Set(key, h.String()+parts[0]); err != nil {
		return failed("storing", key, err)
	}
	return c.cleanup(key, c.trimSlots(key, otherSlot(slot)))
}

// failed names what the caller was doing in an error from the items. ErrNotFound errors
// already name the key.
func failed(verb, key string, err error) error {
	if errors.Is(err, ErrNotFound) {
		return err
	}
	return fmt.Errorf("keychain: %s %q: %w", verb, key, err)
}

// cleanup reports a failure to remove old parts after the new secret was stored, saying so,
// since a caller that sees an error might otherwise assume the old secret is still in place.
func (c *chunked) cleanup(key string, err error) error {
	if err != nil {
		return fmt.Errorf("keychain: stored %q, but old parts of it are left in the keychain (the next Set or Delete removes them): %w", key, err)
	}
	return nil
}

func (c *chunked) Delete(key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()

	// The header goes first: once it is gone the secret is gone for every reader, and a
	// Delete interrupted after this point leaves only parts that trim removes later.
	headErr := c.items.Delete(key)
	if headErr != nil && !errors.Is(headErr, ErrNotFound) {
		return failed("deleting", key, headErr)
	}
	// Also when the header is missing: parts may remain from an interrupted Set or Delete.
	if err := c.trimSlots(key, 'a', 'b'); err != nil {
		return fmt.Errorf("keychain: parts of %q could not be removed: %w", key, err)
	}
	return headErr
}

// trimSlots removes every part of the given slots. It stops at the first error: after a
// timeout the next call would most likely wait just as long.
func (c *chunked) trimSlots(key string, slots ...byte) error {
	for _, slot := range slots {
		if err := c.trim(key, slot, 1); err != nil {
			return err
		}
	}
	return nil
}

// trim removes parts from..N of slot, where N is the last part present. It finds N by reading
// upwards and deletes downwards, so an interrupted trim still leaves a contiguous run.
func (c *chunked) trim(key string, slot byte, from int) error {
	last := from - 1
	for i := from; i < from+maxParts; i++ {
		_, err := c.items.Get(partKey(key, slot, i))
		if errors.Is(err, ErrNotFound) {
			break
		}
		if err != nil {
			return err
		}
		last = i
	}
	for i := last; i >= from; i-- {
		if err := c.items.Delete(partKey(key, slot, i)); err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
	}
	return nil
}
