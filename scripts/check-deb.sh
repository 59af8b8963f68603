#!/usr/bin/env bash
# Issue 45's Show 2, rerunnable (root; not part of make test, since it
# installs into this machine): dpkg -i the .deb make dist built, check
# `subpool version`, the desktop entry and its icon, `subpool update`'s
# refusal, `subpool service install`/`uninstall` from the installed
# binary, then dpkg -r and check that every file the package listed is
# gone.
#
#   scripts/check-deb.sh [dist/subpool_VERSION_amd64.deb]
set -euo pipefail
deb=${1:-$(ls dist/subpool_*_amd64.deb | head -1)}
fail() { echo "check-deb: FAIL: $*" >&2; exit 1; }
step() { echo "check-deb: $*"; }
[ "$(id -u)" -eq 0 ] || fail "run as root (dpkg -i)"
dpkg-query -W subpool >/dev/null 2>&1 && fail "a subpool package is already installed; dpkg -r subpool first"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-deb.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# The package's files, from the .deb itself (dirs that other packages
# share, like /usr/bin, are not its own).
dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { sub(/^\./, "", $6); print $6 }' | sort >"$tmp/files"
step "$(wc -l <"$tmp/files") files in $(basename "$deb"): $(tr '\n' ' ' <"$tmp/files" | cut -c1-160)…"

step "dpkg -i $(basename "$deb")"
if ! dpkg -i "$deb" >"$tmp/dpkg.log" 2>&1; then
	step "dpkg -i left dependencies open; apt-get -f install"
	DEBIAN_FRONTEND=noninteractive apt-get -f install -y -qq >/dev/null
fi
dpkg-query -W -f='${Status}\n' subpool | grep -q "install ok installed" || fail "subpool is not installed: $(cat "$tmp/dpkg.log")"
step "dpkg -s: $(dpkg-query -W -f='${Version}; Depends: ${Depends}' subpool)"
# What a fresh Debian's apt-get -f install would fetch: every dependency
# must name a package the archive has.
for d in $(dpkg-query -W -f='${Depends}' subpool | tr -d ','); do
	apt-cache show --no-all-versions "$d" >/dev/null 2>&1 || fail "dependency $d is no package apt knows"
done

[ "$(command -v subpool)" = /usr/bin/subpool ] || fail "subpool on PATH is $(command -v subpool), not /usr/bin/subpool"
step "subpool version: $(/usr/bin/subpool version | tr '\n' ';')"

desktop=$(grep '^/usr/share/applications/.*\.desktop$' "$tmp/files")
[ -f "$desktop" ] || fail "no desktop entry installed"
desktop-file-validate "$desktop" || fail "$desktop does not validate"
icon=$(sed -n 's/^Icon=//p' "$desktop")
for size in 48x48 256x256; do
	[ -f "/usr/share/icons/hicolor/$size/apps/$icon.png" ] || fail "no $size icon $icon.png"
done
step "desktop entry $desktop validates; Icon=$icon in hicolor ($(grep -c "hicolor/.*/$icon.png" "$tmp/files") sizes)"

out=$(SUBPOOL_HOME="$tmp/home" /usr/bin/subpool update 2>&1) && fail "subpool update ran on a package install: $out"
case $out in *"Debian package subpool"*) step "subpool update: $out" ;; *) fail "subpool update said: $out" ;; esac

# The service runs as the person; a machine without a per-user service
# manager (a container: no systemd as PID 1) gets the binary's one-line
# refusal, which is checked instead.
if out=$(/usr/bin/subpool service install --home "$tmp/home" 2>&1); then
	step "subpool service install: $out"
	/usr/bin/subpool service status --home "$tmp/home" 2>&1 | grep -q /usr/bin/subpool ||
		fail "the service does not run /usr/bin/subpool: $(/usr/bin/subpool service status --home "$tmp/home" 2>&1)"
	step "subpool service uninstall: $(/usr/bin/subpool service uninstall --home "$tmp/home" 2>&1 | tr '\n' ' ')"
else
	case $out in
	*"no per-user service manager"*) step "subpool service install, from /usr/bin/subpool, on this machine: $out" ;;
	*) fail "subpool service install: $out" ;;
	esac
fi

step "dpkg -r subpool"
dpkg -r subpool >/dev/null
left=$(while read -r f; do if [ -e "$f" ]; then echo "$f"; fi; done <"$tmp/files")
[ -z "$left" ] || fail "dpkg -r left: $left"
if dpkg-query -W -f='${Status}' subpool 2>/dev/null | grep -q "ok installed"; then fail "subpool is still installed"; fi
step "ok: dpkg -r removed all $(wc -l <"$tmp/files") files"
