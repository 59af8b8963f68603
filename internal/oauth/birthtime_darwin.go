package oauth

import "syscall"

const isLinux = false

// birthtimeMs is path's birth time as Node reports it (birthtimeMs).
func birthtimeMs(path string) float64 {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return 0
	}
	return float64(st.Birthtimespec.Sec)*1e3 + float64(st.Birthtimespec.Nsec)/1e6
}
