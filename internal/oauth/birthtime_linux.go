package oauth

import "golang.org/x/sys/unix"

const isLinux = true

// birthtimeMs is path's birth time as Node reports it (birthtimeMs), 0
// when the filesystem does not keep one.
func birthtimeMs(path string) float64 {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME, &st); err != nil || st.Mask&unix.STATX_BTIME == 0 {
		return 0
	}
	return float64(st.Btime.Sec)*1e3 + float64(st.Btime.Nsec)/1e6
}
