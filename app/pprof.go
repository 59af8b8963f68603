//go:build pprof

package app

import (
	"log"
	"net/http"
	"os"
	"runtime"
	"strconv"

	"github.com/subpool/subpool/internal/pprofserve"
)

// A binary built with -tags pprof serves the runtime's profiles on
// SUBPOOL_PPROF (a loopback address such as 127.0.0.1:6060) when it is set, to
// profile `subpool serve` as the bench runs it (issue 27: where 256
// streams spend their time). Off the tag none of this is compiled in: the
// binary a user runs carries no profiling endpoint.
//
// SUBPOOL_PPROF_BLOCK and SUBPOOL_PPROF_MUTEX, when set, are the block
// profile's rate (ns) and the mutex profile's fraction; both cost time on
// every contended wait, so they are off unless asked for.
// SUBPOOL_PPROF_MEMRATE is the heap profile's sampling rate in bytes (1
// records every allocation): the default 512 KiB sees a heap of a few MiB
// in coarse lumps.
func init() {
	addr := os.Getenv("SUBPOOL_PPROF")
	if addr == "" {
		return
	}
	if n, err := strconv.Atoi(os.Getenv("SUBPOOL_PPROF_MEMRATE")); err == nil && n > 0 {
		runtime.MemProfileRate = n
	}
	if n, err := strconv.Atoi(os.Getenv("SUBPOOL_PPROF_BLOCK")); err == nil {
		runtime.SetBlockProfileRate(n)
	}
	if n, err := strconv.Atoi(os.Getenv("SUBPOOL_PPROF_MUTEX")); err == nil {
		runtime.SetMutexProfileFraction(n)
	}
	// Loopback only, behind the proxy's Host guard (internal/pprofserve).
	ln, err := pprofserve.Listen(addr)
	if err != nil {
		log.Printf("subpool: pprof: %v", err)
		return
	}
	go func() {
		if err := http.Serve(ln, pprofserve.Handler()); err != nil {
			log.Printf("subpool: pprof on %s: %v", addr, err)
		}
	}()
}
