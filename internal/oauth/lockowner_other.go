//go:build !unix

package oauth

import "strconv"

func itoa(n int) string { return strconv.Itoa(n) }

// processGone: without a way to probe a pid here, no holder is proven
// gone, and its lock is taken only when stale.
func processGone(int, string) bool { return false }
