#!/usr/bin/env bash
# Start the Readout app from a checkout, on the default model: fetch the model if it is missing,
# build the web UI, then build and open the app. The first start builds for a few minutes; later
# starts take seconds. System libraries (Debian/Ubuntu):
#   apt-get install libwebkit2gtk-4.1-dev libgtk-3-dev librsvg2-dev libayatana-appindicator3-dev libxdo-dev libssl-dev pkg-config
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ "$(uname)" = Linux ] && ! pkg-config --exists webkit2gtk-4.1 2>/dev/null; then
  echo "WebKitGTK 4.1 is missing. On Debian/Ubuntu: sudo apt-get install libwebkit2gtk-4.1-dev libgtk-3-dev librsvg2-dev libayatana-appindicator3-dev libxdo-dev libssl-dev pkg-config" >&2
  exit 2
fi
models/fetch
(cd ui && { [ -d node_modules ] || npm ci --no-audit --no-fund; } && npm run build)
cd src-tauri && exec cargo run --release -- "$@"
