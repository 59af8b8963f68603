//go:build !linux && !darwin

package oauth

const isLinux = false

// birthtimeMs: not read on this OS; no owner record is written, as Claude
// Code writes none where it cannot tell a birth time.
func birthtimeMs(string) float64 { return 0 }
