// Package freeport gives tests a loopback address that nothing holds, for
// a server the test starts later (often in another process).
//
// Asking the kernel for port 0 and closing the listener is not enough: the
// next bind to port 0 anywhere on the machine (a simulated upstream started
// in between, say) may be handed the same port. So the port is drawn from
// below the kernel's ephemeral range, which bind(0) never uses.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// low is the first port drawn; below it sit well-known services.
const low = 10000

// Addr returns "127.0.0.1:port" for a port that was free a moment ago and
// that no bind to port 0 will take.
func Addr(t testing.TB) string {
	t.Helper()
	high := ephemeralStart()
	for range 200 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(low+rand.IntN(high-low)))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		ln.Close()
		return addr
	}
	t.Fatalf("no free loopback port in %d-%d", low, high-1)
	return ""
}

// ephemeralStart is the lowest port the kernel hands out for port 0.
// Without /proc, 32768 (Linux's default) is safe: macOS and Windows start
// theirs at 49152.
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		var lo, hi int
		if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &lo, &hi); err == nil && lo > low+1000 {
			return lo
		}
	}
	return 32768
}
