#!/usr/bin/env bash
# Installs the system packages subpool's build and tests need, when they are
# missing and we may (root, or sudo without a password). Otherwise it says
# what to install and fails, so `make` stops with one clear line.
set -euo pipefail

# GUI build (Fyne, cgo): GL and X headers. Keychain tests: a real Secret
# Service (gnome-keyring) on a private D-Bus session (dbus-x11 brings
# dbus-run-session's companions). xvfb + imagemagick: make screenshot.
want=(gcc libgl1-mesa-dev xorg-dev libxkbcommon-dev gnome-keyring dbus-x11)
# nodejs + npm: the real-client tests (app/realclients) install and run
# Claude Code, Codex, opencode and the SDKs. Looked for as commands: a node
# from elsewhere (NodeSource, nvm) brings its own npm, and Debian's npm
# package would conflict with it.
command -v node >/dev/null 2>&1 || want+=(nodejs)
command -v npm >/dev/null 2>&1 || want+=(npm)
if [ "${1:-}" = "--screenshot" ]; then want+=(xvfb imagemagick x11-utils); fi
# make dist: mingw-w64 for the Windows tray's cgo, desktop-file-validate.
if [ "${1:-}" = "--dist" ]; then want+=(gcc-mingw-w64-x86-64 desktop-file-utils); fi

missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
else
  echo "deps: not a Debian/Ubuntu system; install the equivalents of: ${want[*]}" >&2
  exit 0
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  sudo=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo="sudo -n"
else
  echo "deps: missing packages; run: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
