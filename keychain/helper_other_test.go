//go:build !linux

package keychain

import "testing"

func helperProcess(t *testing.T, name string) {
	t.Fatalf("unknown helper %q", name)
}
