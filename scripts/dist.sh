#!/usr/bin/env bash
# make dist: everything a release carries, into dist/ (issue 45).
#
#   subpool_V_amd64.deb, subpool-V.x86_64.rpm   nfpm, packaging/nfpm.yaml
#   subpool_V_linux_amd64.tar.gz                 the same files, under a prefix
#   subpool-headless_V_linux_amd64.tar.gz        CGO_ENABLED=0, static
#   subpool_V_windows_amd64.zip                  tray (mingw) and headless exe
#   subpool_V_src.tar.gz, subpool.rb, subpool-app.rb   Homebrew formula, cask
#   SHA256SUMS, SHA256SUMS.sig                   ed25519 over SHA256SUMS
#
# The signing key comes from SUBPOOL_SIGNING_KEY (base64 ed25519 seed);
# without it a throwaway key signs, and the binaries trust that key only.
#   scripts/dist.sh [GO]
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${1:-go}
say() { echo "dist: $*" >&2; }
took() { say "$1: $(($(date +%s) - $2)) s"; }

scripts/deps.sh --dist
nfpm=$(scripts/dist-tool.sh nfpm "$GO")
tool() { CGO_ENABLED=0 $GO run ./packaging/tool "$@"; }
eval "$(tool env)"

# VERSION: the tag without its v; past a tag, git describe's form; with
# no tag at all, the same form counted from 0.0.0.
if desc=$(git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null); then
	VERSION=${desc#v}
else
	VERSION=0.0.0-$(git rev-list --count HEAD)-g$(git rev-parse --short=7 HEAD)
	git diff --quiet HEAD 2>/dev/null || VERSION+=-dirty
fi
export VERSION
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
commit=$(git rev-parse --short=12 HEAD)
built=$(date -u +%Y-%m-%dT%H:%M:%SZ)
ld="-s -w -X github.com/subpool/subpool/daemon.Version=$VERSION -X github.com/subpool/subpool/daemon.Commit=$commit -X github.com/subpool/subpool/daemon.Date=$built"

if [ -z "${SUBPOOL_SIGNING_KEY:-}" ]; then
	{ read -r SUBPOOL_SIGNING_KEY; read -r pub; } < <(tool keygen)
	export SUBPOOL_SIGNING_KEY
	say "no SUBPOOL_SIGNING_KEY: signing with a THROWAWAY key; these binaries trust only it ($pub)"
else
	pub=$(tool pubkey)
fi
release=$(sed -n 's/^const releaseKey = "\(.*\)"$/\1/p' internal/update/key.go)
if [ "$pub" != "$release" ]; then
	# SUBPOOL_RELEASE=1 (release.yml): only the key the code names may sign.
	[ "${SUBPOOL_RELEASE:-}" != 1 ] || { say "SUBPOOL_SIGNING_KEY is not the release key internal/update/key.go names"; exit 1; }
	ld+=" -X github.com/subpool/subpool/internal/update.publicKey=$pub"
fi

rm -rf dist && mkdir dist
work=$(mktemp -d "${TMPDIR:-/tmp}/subpool-dist.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Files built elsewhere (release.yml's macOS app zip) join the release:
# they get checksums and fill the cask.
if [ -n "${SUBPOOL_DIST_EXTRA:-}" ]; then cp "$SUBPOOL_DIST_EXTRA"/* dist/; fi

scripts/dist-build.sh "$GO" "$ld" "$work"
scripts/dist-pack.sh "$nfpm" "$work"
tool render packaging/homebrew/subpool.rb.tmpl dist/subpool.rb dist
tool render packaging/homebrew/subpool-app.rb.tmpl dist/subpool-app.rb dist
grep -q ':no_check' dist/subpool-app.rb && say "cask: no subpool_${VERSION}_darwin_universal.zip here, so subpool-app.rb has sha256 :no_check (release.yml fills it)"

tool sign dist
(cd dist && sha256sum --quiet -c SHA256SUMS)
SUBPOOL_DIST=$PWD/dist CGO_ENABLED=0 $GO test -count=1 -ldflags "$ld" -run 'TestDistSignatureVerifies' ./packaging/tool >/dev/null
say "SHA256SUMS checks out and its signature verifies with the key the binaries carry"
for f in dist/*; do printf '  %10d  %s\n' "$(stat -c %s "$f")" "${f#dist/}"; done
