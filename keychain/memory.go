package keychain

import (
	"fmt"
	"sync"
)

// NewMemory returns a Store that keeps secrets in this process only. `subpool demo` uses it
// so that it never reads or writes the user's keychain.
func NewMemory() Store {
	return &memoryStore{items: newMemItems()}
}

type memoryStore struct {
	items *memItems
}

func (m *memoryStore) Name() string { return "memory" }

func (m *memoryStore) Get(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	return m.items.Get(key)
}

func (m *memoryStore) Set(key, secret string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	return m.items.Set(key, secret)
}

func (m *memoryStore) Delete(key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	return m.items.Delete(key)
}

// memItems is a map behind a mutex. It accepts any key, including the "key#a1" names of
// split secrets, so the splitting layer can be tested over it without D-Bus.
type memItems struct {
	mu sync.Mutex
	m  map[string]string
}

func newMemItems() *memItems { return &memItems{m: make(map[string]string)} }

func (m *memItems) Get(key string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.m[key]
	if !ok {
		return "", fmt.Errorf("keychain: no secret %q: %w", key, ErrNotFound)
	}
	return v, nil
}

func (m *memItems) Set(key, secret string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m[key] = secret
	return nil
}

func (m *memItems) Delete(key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.m[key]; !ok {
		return fmt.Errorf("keychain: no secret %q: %w", key, ErrNotFound)
	}
	delete(m.m, key)
	return nil
}
