#!/usr/bin/env bash
# Prints the path of a pinned Go tool, or with ARGS runs it, installing it
# first into a cache folder outside the repository (the real clients'
# way: go install MODULE@VERSION through the Go module proxy). go.mod
# stays as it is.
#
#   scripts/dist-tool.sh nfpm|actionlint [GO [ARGS...]]
set -euo pipefail

name=${1:-}
case $name in
nfpm) pkg=github.com/goreleaser/nfpm/v2/cmd/nfpm version=v2.48.0 ;;
actionlint) pkg=github.com/rhysd/actionlint/cmd/actionlint version=v1.7.12 ;;
*) echo "dist-tool: want nfpm or actionlint" >&2; exit 2 ;;
esac
GO=${2:-go}
shift $(($# < 2 ? $# : 2))
dir=${SUBPOOL_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/subpool/tools}/$name-$version
if [ ! -x "$dir/$name" ]; then
	echo "dist-tool: installing $name $version into $dir" >&2
	GOBIN=$dir GOFLAGS= CGO_ENABLED=0 $GO install "$pkg@$version" >&2
fi
[ $# -eq 0 ] && { echo "$dir/$name"; exit 0; }
exec "$dir/$name" "$@"
