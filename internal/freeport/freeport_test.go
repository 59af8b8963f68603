package freeport

import (
	"net"
	"strconv"
	"testing"
)

// The address is free, and its port lies outside what bind(0) hands out:
// a hundred port-0 listeners held open at once never land on it.
func TestAddrIsOutsideTheEphemeralRange(t *testing.T) {
	addr := Addr(t)
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(p)
	if port < low || port >= ephemeralStart() {
		t.Fatalf("port %d is outside %d-%d", port, low, ephemeralStart()-1)
	}
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		if ln.Addr().String() == addr {
			t.Fatalf("bind(0) was given %s", addr)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("%s is not free: %v", addr, err)
	}
	ln.Close()
}
