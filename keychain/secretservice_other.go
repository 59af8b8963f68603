//go:build !linux

package keychain

// checkSessionBus is a Linux concern: macOS and Windows keychains need no bus.
func checkSessionBus() error { return nil }

// explainPlatform has nothing to add on macOS and Windows: their keychains report errors
// that go-keyring passes on as they are.
func explainPlatform(error) error { return nil }
