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
Xvfb "$display" -screen 0 1280x900x24 -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
trap 'kill $demo $xvfb 2>/dev/null || true' EXIT
sleep 1
DISPLAY=$display dbus-run-session -- "$bin" demo --gui --listen "127.0.0.1:$port" --every 700ms >"$log" 2>&1 &
demo=$!
# The demo's story reaches its cooldowns and waits within ~15 s, and
# claude-max's 5h window its 90 % warning, where the demo's reserve holds
# it back, within ~20 s: the meters then show every level.
for _ in $(seq 1 60); do
  sleep 0.5
  if grep -q "cooldown_started" "$log" && grep -q "capacity wait" "$log" &&
     grep -q "usage_warning" "$log"; then break; fi
done
sleep 2
# The panel window if it can be found by name, else the whole screen. Never
# hand import a name: when none matches it waits for a mouse click.
win=$(DISPLAY=$display xwininfo -root -tree 2>/dev/null | awk '/"subpool"/ {print $1; exit}')
DISPLAY=$display import -window "${win:-root}" "$out"
# Fyne's window is not always named for xwininfo; cut the empty screen away.
convert "$out" -trim +repage "$out"
echo "saved $out"

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
for _ in $(seq 1 60); do
  sleep 0.5
  if grep -q "cooldown_started" "$ulog"; then break; fi
done
sleep 4
win=$(DISPLAY=$display xwininfo -root -tree 2>/dev/null | awk '/"subpool/ {print $1; exit}')
DISPLAY=$display import -window "${win:-root}" "$usage_out"
convert "$usage_out" -trim +repage "$usage_out"
echo "saved $usage_out"
