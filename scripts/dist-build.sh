#!/usr/bin/env bash
# make dist's builds, into WORK/: the Linux tray (cgo), the static
# headless build, and for Windows the tray (cgo through mingw-w64,
# -H=windowsgui so no console opens) and the headless exe. Each build's
# time is printed: the Windows tray's first build compiles Fyne and GLFW
# for Windows, many minutes on two busy cores; later ones come from the
# Go build cache. No -trimpath: it would key every package apart from
# `make build`'s and compile Fyne and GLFW again for each.
#
#   scripts/dist-build.sh GO LDFLAGS WORK
set -euo pipefail
GO=$1 ld=$2 work=$3
build() { # NAME OUT LDFLAGS VAR=VALUE...
	local name=$1 out=$2 flags=$3 t
	shift 3
	t=$(date +%s)
	env "$@" "$GO" build -ldflags "$flags" -o "$out" .
	echo "dist: built the $name in $(($(date +%s) - t)) s ($(du -h "$out" | cut -f1))" >&2
}
build "Linux tray" "$work/linux/bin/subpool" "$ld" CGO_ENABLED=1
build "Linux headless build" "$work/headless/bin/subpool" "$ld" CGO_ENABLED=0
build "Windows headless exe" "$work/windows/subpool-headless.exe" "$ld" CGO_ENABLED=0 GOOS=windows GOARCH=amd64
build "Windows tray" "$work/windows/subpool.exe" "$ld -H=windowsgui" \
	CGO_ENABLED=1 GOOS=windows GOARCH=amd64 CC=x86_64-w64-mingw32-gcc
