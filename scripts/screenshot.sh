#!/usr/bin/env bash
# Runs the demo tray under a private Xvfb and saves the panel as a PNG once
# the demo has something cooling. Usage: scripts/screenshot.sh BIN OUT.png
set -euo pipefail
bin=${1:-./subpool}
out=${2:-docs/screenshot.png}
# Another run at the same time (two checkouts, two sessions) needs its own
# display and ports: SCREENSHOT_DISPLAY, SCREENSHOT_PORT (and the next one).
display=${SCREENSHOT_DISPLAY:-:97}
port=${SCREENSHOT_PORT:-18797}
log=/tmp/subpool-screenshot-$port.log
ulog=/tmp/subpool-screenshot-usage-$port.log
# await LOG PATTERN...: waits up to 30 s for every PATTERN to stand in LOG.
await() {
  local log=$1 p missing
  shift
  for _ in $(seq 1 60); do
    sleep 0.5
    missing=
    for p in "$@"; do grep -q "$p" "$log" || { missing=1; break; }; done
    [ -z "$missing" ] && return 0
  done
  return 0
}
# await_next LOG PATTERN: waits up to 30 s for one more line matching
# PATTERN than LOG holds now.
await_next() {
  local n
  n=$(grep -c "$2" "$1" || true)
  for _ in $(seq 1 60); do
    sleep 0.5
    [ "$(grep -c "$2" "$1" || true)" -gt "$n" ] && return 0
  done
  return 0
}
# shoot NAME OUT: saves the window whose xwininfo line holds NAME as OUT, or
# the whole screen if none does. Never hand import a name: when none
# matches it waits for a mouse click. Fyne's window is not always named for
# xwininfo, so the empty screen is cut away.
shoot() {
  local win
  win=$(DISPLAY=$display xwininfo -root -tree 2>/dev/null | awk -v name="$1" 'index($0, name) {print $1; exit}')
  DISPLAY=$display import -window "${win:-root}" "$2"
  convert "$2" -trim +repage "$2"
  echo "saved $2"
}
Xvfb "$display" -screen 0 1280x1100x24 -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
trap 'kill $demo $xvfb 2>/dev/null || true' EXIT
sleep 1
# The panel opens on the Gemini card, the last: a Google login with its day
# on per-model meters and a Gemini API key, below Claude's and ChatGPT's;
# tall enough for both.
DISPLAY=$display SUBPOOL_SECTION=google SUBPOOL_WINDOW=560x980 dbus-run-session -- \
  "$bin" demo --gui --listen "127.0.0.1:$port" --every 700ms >"$log" 2>&1 &
demo=$!
# The demo's story reaches its cooldowns and waits within ~15 s, Gemini's
# among them, and claude-max's 5h window its 90 % warning, where the demo's
# reserve holds it back, within ~20 s.
await "$log" "cooldown_started" "capacity wait" "usage_warning"
# Then the Google login's next rate limit: the shot shows it cooling for
# one model while its day's meters stand beside.
await_next "$log" "cooldown_started  *google/google-ai-pro"
sleep 1
shoot '"subpool"' "$out"

# The Usage tab (issue 16), from a second demo opened on it: the demo's
# made-up past month shows at once, and its own requests add to the running
# hour. Written beside the first, or to a third argument.
usage_out=${3:-$(dirname "$out")/screenshot-usage.png}
first=$(pgrep -P "$demo" || true)
kill $first "$demo" 2>/dev/null || true
# Its window must be gone before the next one is looked for.
for pid in $first $demo; do
  for _ in $(seq 1 40); do [ -e "/proc/$pid" ] || break; sleep 0.25; done
done
DISPLAY=$display SUBPOOL_TAB=usage dbus-run-session -- "$bin" demo --gui --listen "127.0.0.1:$((port + 1))" --every 700ms \
  >"$ulog" 2>&1 &
demo=$!
# A few of its requests finished (a rotation among them), and the tab has
# read the history again after them.
await "$ulog" "cooldown_started"
sleep 4
shoot '"subpool' "$usage_out"
