#!/usr/bin/env bash
# Prints the path of a pinned Go tool, installing it first into a cache
# folder outside the repository (the real clients' way: go install
# MODULE@VERSION through the Go module proxy). go.mod stays as it is.
#
#   scripts/dist-tool.sh nfpm|actionlint [GO]
set -euo pipefail

case ${1:-} in
nfpm) pkg=github.com/goreleaser/nfpm/v2/cmd/nfpm version=v2.48.0 ;;
actionlint) pkg=github.com/rhysd/actionlint/cmd/actionlint version=v1.7.12 ;;
*) echo "dist-tool: want nfpm or actionlint" >&2; exit 2 ;;
esac
GO=${2:-go}
dir=${SUBPOOL_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/subpool/tools}/$1-$version
if [ ! -x "$dir/$1" ]; then
	echo "dist-tool: installing $1 $version into $dir" >&2
	GOBIN=$dir GOFLAGS= CGO_ENABLED=0 $GO install "$pkg@$version" >&2
fi
echo "$dir/$1"
