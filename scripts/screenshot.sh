#!/usr/bin/env bash
# Runs the demo tray under a private Xvfb and saves the panel as a PNG once
# the demo has something cooling. Usage: scripts/screenshot.sh BIN OUT.png
set -euo pipefail
bin=${1:-./subpool}
out=${2:-docs/screenshot.png}
display=:97
Xvfb "$display" -screen 0 1280x900x24 -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
trap 'kill $demo $xvfb 2>/dev/null || true' EXIT
sleep 1
DISPLAY=$display dbus-run-session -- "$bin" demo --gui --listen 127.0.0.1:18797 --every 700ms >/tmp/subpool-screenshot.log 2>&1 &
demo=$!
# The demo's story reaches its cooldowns and waits within ~15 s.
for _ in $(seq 1 60); do
  sleep 0.5
  if grep -q "cooldown_started" /tmp/subpool-screenshot.log && grep -q "capacity wait" /tmp/subpool-screenshot.log; then break; fi
done
sleep 2
# The panel window if it can be found by name, else the whole screen. Never
# hand import a name: when none matches it waits for a mouse click.
win=$(DISPLAY=$display xwininfo -root -tree 2>/dev/null | awk '/"subpool"/ {print $1; exit}')
DISPLAY=$display import -window "${win:-root}" "$out"
# Fyne's window is not always named for xwininfo; cut the empty screen away.
convert "$out" -trim +repage "$out"
echo "saved $out"
