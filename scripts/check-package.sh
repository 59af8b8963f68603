#!/usr/bin/env bash
# Checks what `make package` built: the archive holds the binary, the icon
# and a .desktop entry that names the app and that icon.
set -euo pipefail
pkg=${1:-subpool.tar.xz}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xJf "$pkg" -C "$tmp"
desktop=$(find "$tmp" -name '*.desktop' | head -1)
[ -n "$desktop" ] || { echo "check-package: no .desktop entry in $pkg" >&2; exit 1; }
grep -qx 'Name=subpool' "$desktop" || { echo "check-package: $desktop does not name the app" >&2; exit 1; }
icon=$(sed -n 's/^Icon=//p' "$desktop")
[ -n "$icon" ] && find "$tmp" -name "$icon.png" | grep -q . || { echo "check-package: icon '$icon' missing from $pkg" >&2; exit 1; }
find "$tmp" -path '*/bin/subpool' -perm -u+x | grep -q . || { echo "check-package: no executable bin/subpool in $pkg" >&2; exit 1; }
echo "check-package: $pkg has bin/subpool, $(basename "$desktop") (Name=subpool, Icon=$icon) and its icon"
