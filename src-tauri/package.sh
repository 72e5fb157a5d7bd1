#!/usr/bin/env bash
# Build the installable app with the Tauri CLI from ui/node_modules (no download): a .deb on
# Linux, the .app and .dmg on macOS (Metal on by default there, see Cargo.toml). Prints where the
# bundles are and, for the .deb, checks that it holds the app binary, its desktop entry and icon.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ -x ui/node_modules/.bin/tauri ] || (cd ui && npm ci --no-audit --no-fund)
target="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
case "$(uname)" in
  Darwin) bundles=app,dmg ;;
  *) bundles=deb ;;
esac
(cd src-tauri && ../ui/node_modules/.bin/tauri build --ci --bundles "$bundles")
if [ "$bundles" = deb ]; then
  deb="$(ls -t "$target"/release/bundle/deb/*.deb | head -1)"
  contents="$(dpkg-deb -c "$deb")"
  for want in usr/bin/readout-app usr/share/applications/Readout.desktop usr/share/icons/hicolor/128x128/apps/readout-app.png; do
    grep -q "$want" <<<"$contents" || { echo "$deb lacks $want" >&2; exit 1; }
  done
  dpkg-deb -I "$deb" | sed -n '/Package:/,/Description:/p'
  echo "built $deb"
fi
