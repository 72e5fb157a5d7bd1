#!/usr/bin/env bash
# Start the real app in a real window under Xvfb and save a screenshot of what it shows after it
# loads (the Score page, empty). Needs xvfb and imagemagick (Debian), ui/dist built, and the
# release binary (`cargo build --release` here).
# Usage: src-tauri/screenshot-window.sh [OUT.png]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out="${1:-src-tauri/screenshots/real-window-score-empty.png}"
bin="$(cd src-tauri && cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release/readout-app"
xvfb-run -a -s "-screen 0 1280x900x24" bash -c "'$bin' & app=\$!; sleep 12; import -window root '$out'; kill \$app"
echo "wrote $out"
