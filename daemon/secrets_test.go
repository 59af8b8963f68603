package daemon

import (
	"context"
	"testing"

	"github.com/subpool/subpool/internal/config"
	"github.com/subpool/subpool/keychain"
	"github.com/subpool/subpool/proxy/api"
	"github.com/subpool/subpool/proxy/pool"
)

// An API key's auth header is built once and shared by its requests; a
// credential forgotten (removed) and stored again under the same id gets
// its new key, and each wire gets its own header.
func TestSecretsKeyHeaderCache(t *testing.T) {
	kc := keychain.NewMemory()
	s := newSecrets(func() (keychain.Store, error) { return kc, nil }, map[string]config.Provider{
		"anthropic": {Wire: "anthropic"}, "openai": {Wire: "openai"},
	})
	kc.Set(SecretKey("anthropic-1"), `{"key":"sk-ant-first"}`)
	kc.Set(SecretKey("openai-1"), `{"key":"sk-proj-first"}`)
	ant := pool.Credential{ID: "anthropic-1", Provider: "anthropic", Kind: api.KindAPIKey}
	oai := pool.Credential{ID: "openai-1", Provider: "openai", Kind: api.KindAPIKey}

	a1, err := s.Auth(context.Background(), ant, false)
	if err != nil || a1.Header.Get("X-Api-Key") != "sk-ant-first" {
		t.Fatalf("%v %v", a1.Header, err)
	}
	a2, _ := s.Auth(context.Background(), ant, false)
	if a2.Header.Get("X-Api-Key") != "sk-ant-first" {
		t.Fatalf("second call: %v", a2.Header)
	}
	if o, _ := s.Auth(context.Background(), oai, false); o.Header.Get("Authorization") != "Bearer sk-proj-first" || o.Header.Get("X-Api-Key") != "" {
		t.Fatalf("openai: %v", o.Header)
	}

	kc.Set(SecretKey("anthropic-1"), `{"key":"sk-ant-second"}`)
	if a, _ := s.Auth(context.Background(), ant, false); a.Header.Get("X-Api-Key") != "sk-ant-first" {
		t.Fatalf("the key is read from the keychain once, not per request: %v", a.Header)
	}
	s.forget("anthropic-1")
	if a, _ := s.Auth(context.Background(), ant, false); a.Header.Get("X-Api-Key") != "sk-ant-second" {
		t.Fatalf("after forget: %v", a.Header)
	}
}
