#!/usr/bin/env bash
# make dist's packing: stages the Linux tree (bin/, share/applications,
# share/icons/hicolor, share/doc) once, and makes from it the tarball, the
# .deb and the .rpm, so all three hold the same files; then the headless
# tarball and the Windows zip. VERSION and SP_* come from scripts/dist.sh.
#
#   scripts/dist-pack.sh NFPM WORK
set -euo pipefail
nfpm=$1 work=$2
tool() { CGO_ENABLED=0 go run ./packaging/tool "$@"; }
# Reproducible tarballs: owner, order and times fixed.
tarball() { # OUT DIR (DIR's contents go under OUT's name without .tar.gz)
	local top
	top=$(basename "$1" .tar.gz)
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
		--transform "s,^\.,$top," -C "$2" -czf "$1" .
}

stage=$work/linux
mkdir -p "$stage/share/applications" "$stage/share/doc/subpool"
desktop=$stage/share/applications/$SP_ID.desktop
tool render packaging/subpool.desktop.tmpl "$desktop"
desktop-file-validate "$desktop"
tool icons assets/icon.png "$stage/share/icons/hicolor"
cp LICENSE "$stage/share/doc/subpool/copyright"

tarball "dist/subpool_${VERSION}_linux_amd64.tar.gz" "$stage"
STAGE=$stage tool render packaging/nfpm.yaml.tmpl "$work/nfpm.yaml"
for p in deb rpm; do
	case $p in
	deb) out=dist/subpool_${VERSION}_amd64.deb ;;
	rpm) out=dist/subpool-${VERSION}.x86_64.rpm ;;
	esac
	"$nfpm" package --config "$work/nfpm.yaml" --packager "$p" --target "$out" >/dev/null
done

head=$work/headless
mkdir -p "$head/share/doc/subpool"
cp LICENSE "$head/share/doc/subpool/copyright"
tarball "dist/subpool-headless_${VERSION}_linux_amd64.tar.gz" "$head"

win=$work/subpool_${VERSION}_windows_amd64
mv "$work/windows" "$win"
cp LICENSE "$win/LICENSE.txt"
tool zip "dist/subpool_${VERSION}_windows_amd64.zip" "$win"

git archive --format=tar.gz --prefix="subpool-$VERSION/" -o "dist/subpool_${VERSION}_src.tar.gz" HEAD
