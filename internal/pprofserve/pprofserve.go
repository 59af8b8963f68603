// Package pprofserve is the profiling endpoint of a binary built with
// -tags pprof (app/pprof.go, the only importer, so the binary a user runs
// carries none of it). The runtime's profiles show the heap's contents and
// every goroutine's stack, so the endpoint gets what the proxy gets: a
// loopback listener only, and the same Host and browser guard (issue 43:
// it bound any address it was given and answered any Host, so a page
// rebinding its name to 127.0.0.1 could read them).
package pprofserve

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"

	"github.com/subpool/subpool/proxy/guard"
)

// Listen opens addr, which must name a loopback address ("127.0.0.1:6060",
// "[::1]:6060", "localhost:6060"); the address bound is checked as well,
// since a name may resolve elsewhere.
func Listen(addr string) (net.Listener, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil || !guard.HostAllowed(addr, false) {
		return nil, fmt.Errorf("SUBPOOL_PPROF=%q: profiles are served on a loopback address only, e.g. 127.0.0.1:6060", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("SUBPOOL_PPROF=%q bound %s, which is not a loopback address", addr, ln.Addr())
	}
	return ln, nil
}

// Handler serves the runtime's profiles under /debug/pprof/ behind the
// proxy's guard: a Host that does not name this machine, or a request a
// browser marks as coming from a page, gets a 403.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		guard.SecurityHeaders(w.Header())
		// The proxy's checks, in its order, with no allow_remote and no
		// allowed origins: neither applies here.
		if !guard.HostAllowed(r.Host, false) || guard.Browser(r, nil) {
			http.Error(w, "refused: profiles answer only a local program, at 127.0.0.1, ::1 or localhost", http.StatusForbidden)
			return
		}
		mux.ServeHTTP(w, r)
	})
}
