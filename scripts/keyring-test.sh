#!/usr/bin/env bash
# Runs a command against a real Secret Service: a private D-Bus session with a throwaway,
# unlocked gnome-keyring, so the OS keychain tests never touch the user's own keyring.
#
#   scripts/keyring-test.sh go test -race ./...
#
# The keyring lives in a temporary directory (XDG_DATA_HOME and XDG_RUNTIME_DIR point there
# while the daemon starts), so it works whether or not ~/.local/share/keyrings exists, never
# meets a keyring with another password, and two runs, even at once, do not share a daemon.
# Needs dbus-run-session and dbus-send (Debian: dbus, dbus-bin) and gnome-keyring-daemon
# (gnome-keyring). Sets SUBPOOL_KEYRING_TESTS=1, which turns the keychain package's OS tests
# on, and SUBPOOL_KEYRING_TEST_PASSWORD, the throwaway keyring's password, which the test
# that locks the keyring uses to unlock it again.
set -euo pipefail

if [ $# -eq 0 ]; then
	echo "usage: $0 COMMAND [ARG...]   (for example: $0 go test -race ./...)" >&2
	exit 2
fi
for tool in dbus-run-session dbus-send gnome-keyring-daemon; do
	if ! command -v "$tool" >/dev/null; then
		echo "keyring-test: $tool not found; on Debian/Ubuntu: apt-get install dbus dbus-bin gnome-keyring" >&2
		exit 1
	fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/subpool-keyring.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p -m 700 "$tmp/data/keyrings" "$tmp/run"

# The command should see the caller's environment, not the daemon's temporary one: remember
# what to restore once the daemon runs.
for v in XDG_DATA_HOME XDG_RUNTIME_DIR DISPLAY WAYLAND_DISPLAY; do
	if [ -n "${!v+set}" ]; then
		export "SUBPOOL_KT_SAVED_$v=${!v}"
	fi
done
export SUBPOOL_KEYRING_TESTS=1 SUBPOOL_KEYRING_TEST_PASSWORD=subpool-throwaway
export SUBPOOL_KT_TMP=$tmp

# Without a display, an unlock prompt fails instead of opening a dialog on the developer's
# screen; dbus-daemon passes this environment to the services it starts.
inner='
set -euo pipefail
daemon=
stop() {
	if [ -n "$daemon" ]; then
		kill "$daemon" 2>/dev/null || true
		wait "$daemon" 2>/dev/null || true
	fi
}
trap stop EXIT

# --foreground keeps the daemon our child, so it can be stopped and reaped at the end; with
# --unlock it reads the password of a new or existing login keyring from stdin.
printf %s "$SUBPOOL_KEYRING_TEST_PASSWORD" |
	gnome-keyring-daemon --foreground --unlock --components=secrets >"$SUBPOOL_KT_TMP/daemon.log" 2>&1 &
daemon=$!

# The daemon takes its bus name a moment after it starts; a client that came first would make
# dbus-daemon start a second, locked gnome-keyring.
ready=
for _ in $(seq 100); do
	if dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
		org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q "boolean true"; then
		ready=1
		break
	fi
	if ! kill -0 "$daemon" 2>/dev/null; then
		break
	fi
	sleep 0.1
done
if [ -z "$ready" ]; then
	echo "keyring-test: gnome-keyring-daemon did not come up on the session bus:" >&2
	cat "$SUBPOOL_KT_TMP/daemon.log" >&2
	exit 1
fi

for v in XDG_DATA_HOME XDG_RUNTIME_DIR DISPLAY WAYLAND_DISPLAY; do
	saved=SUBPOOL_KT_SAVED_$v
	if [ -n "${!saved+set}" ]; then
		export "$v=${!saved}"
		unset "$saved"
	else
		unset "$v"
	fi
done
unset SUBPOOL_KT_TMP

status=0
"$@" || status=$?
exit "$status"
'
env -u DISPLAY -u WAYLAND_DISPLAY XDG_DATA_HOME="$tmp/data" XDG_RUNTIME_DIR="$tmp/run" \
	dbus-run-session -- bash -c "$inner" keyring-test "$@"
