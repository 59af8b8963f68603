#!/usr/bin/env bash
# Checks the headless build (issue 17): CGO_ENABLED=0 builds a subpool that
# links no Fyne and, on Linux, no libGL/libX11 (a static binary); bare
# `subpool` says in one line that it has no tray; and the same build
# compiles and vets for macOS and Windows, so code for those systems
# cannot rot unseen.
#
#   scripts/check-headless.sh [GO]
set -euo pipefail

GO=${1:-go}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/subpool-headless.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export CGO_ENABLED=0
fail() { echo "check-headless: $*" >&2; exit 1; }

# Nothing outside the tray's own (cgo-tagged) files may pull Fyne in.
if fyne=$($GO list -deps . | grep '^fyne\.io/'); then
	fail "the cgo-free build still imports Fyne:"$'\n'"$fyne"
fi

bin="$tmp/subpool"
$GO build -o "$bin" .
if [ "$($GO env GOOS)" = linux ]; then
	deps=$(ldd "$bin" 2>&1 || true)
	if echo "$deps" | grep -Eq 'libGL|libX11'; then
		fail "the headless binary links GL/X11:"$'\n'"$deps"
	fi
	echo "$deps" | grep -q 'not a dynamic executable' ||
		fail "the headless binary is not static:"$'\n'"$deps"
fi

# Bare `subpool` in this build: one line, exit 1, no stack trace.
set +e
out=$(DISPLAY= WAYLAND_DISPLAY= SUBPOOL_HOME="$tmp/home" "$bin" 2>&1)
code=$?
set -e
[ "$code" -eq 1 ] || fail "\`subpool\` without a tray exited $code, want 1: $out"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "\`subpool\` without a tray printed more than one line: $out"
case $out in
*"no tray"*"subpool serve"*) ;;
*) fail "\`subpool\` without a tray does not say so: $out" ;;
esac

# Every package but the tray's own (ui/ is Fyne through and through),
# tests included.
pkgs=$($GO list ./... | grep -v '/ui\(/\|$\)')
for target in darwin/arm64 windows/amd64; do
	echo "check-headless: $target" >&2
	GOOS=${target%/*} GOARCH=${target#*/} $GO build -o "$tmp/cross" . ||
		fail "the headless build does not compile for $target"
	# shellcheck disable=SC2086 # one word per package
	GOOS=${target%/*} GOARCH=${target#*/} $GO vet $pkgs ||
		fail "go vet fails for $target"
done
echo "check-headless: ok (static, no Fyne; darwin/arm64 and windows/amd64 build and vet)" >&2
