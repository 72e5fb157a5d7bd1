#!/usr/bin/env bash
# The real app in a real window under Xvfb, on the real default model, driven through its webview
# by WebDriver: ui/tests/window.mjs first does the five-minute task as a person does it (scores
# examples/support-tickets.csv, reads the verdict and the summary per question, exports the answers
# for a spreadsheet through the real Save dialog, finds the scoring in Results); then scores the bundled example (every rotation of its options; then
# with no answer under 50% confidence),
# shows a bad eval set's line and field, runs authored144 (3 shots, cyclic), saves the result into
# a bench folder beside copies of the CLI's files, checks the Results table (and opens a committed
# run's risk–coverage curve and position bias), the loaded model's
# device and the DERIVED figures on the Models page and that the CSP is in force, has `readout
# compare` read the app's file, finds the device and default model kept across a restart, then
# downloads Gemma 3 270M from a hub on loopback (progress, Cancel, resume), chooses its chat
# template (gemma) and scores the example with it; last, downloads the real judge
# (Qwen2.5-Coder-1.5B-Instruct) from the catalogue with one click and scores the example with it.
# Review: it scores examples/support-tickets.csv, labels the five texts the judge is least sure of
# with the keyboard, and after the restart continues that review with its five labels and reads
# its agreement and corrected shares; labels the other fifteen texts, fits the judge to the labels
# ("Fit the judge to my labels", checked against `readout calibrate` on the app's run) and scores
# the texts again with the temperature. Results: the real judge's agreement with gold, and the
# labels-curve chart.
# Screenshots go to src-tauri/screenshots/window-*.png.
#
# Needs: xvfb, webkit2gtk-driver and xdotool (Debian; xdotool answers the native Save dialog), tauri-driver (`cargo install tauri-driver --locked`),
# ui/node_modules (`npm ci` in ui), the default model (models/fetch) and Gemma 3 270M
# (models/fetch gemma3-270m), and both release binaries
# (`cargo build --release` at the top and in src-tauri). .ci/run sets all of this up.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$(pwd)"
target="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
app="$target/release/readout-app"
cli="$target/release/readout"
for f in "$app" "$cli"; do
  [ -x "$f" ] || { echo "$f is missing: build it with cargo build --release (top level and src-tauri)" >&2; exit 2; }
done
command -v tauri-driver >/dev/null || { echo "tauri-driver is missing: cargo install tauri-driver --locked" >&2; exit 2; }
command -v WebKitWebDriver >/dev/null || { echo "WebKitWebDriver is missing: apt-get install -y webkit2gtk-driver" >&2; exit 2; }
command -v xdotool >/dev/null || { echo "xdotool is missing: apt-get install -y xdotool" >&2; exit 2; }
model="$repo/models/$(awk '!/^#/{print $2; exit}' models/manifest)"
[ -f "$model" ] || { echo "the default model is missing: run models/fetch" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# A fresh home for the app: its settings and data folders, and a bench folder with the CLI's files.
mkdir -p "$work/config/dev.readout.desktop" "$work/data" "$work/bench/results" "$work/bench/evalsets"
cp bench/results/authored144_*.json "$work/bench/results/"
# The labels curve measured on the real judge's run (how many labels a person needs), to open.
cp bench/results/labels-curve-*.json "$work/bench/results/"
# A committed run with the judge-quality figures (risk–coverage curve, position bias), to open.
export QUALITY_FILE="smollm2-135m-instruct.q4_1_3shot_cyclic.json"
cp "bench/results/quality/$QUALITY_FILE" "$work/bench/results/"
export PAIRWISE_FILE="pairwise24_smollm2-135m-instruct.q4_1_readout_0shot_cyclic.json"
cp "bench/results/pairwise/$PAIRWISE_FILE" "$work/bench/results/"
cp bench/evalsets/authored144.jsonl "$work/bench/evalsets/"
# A bad eval set where a user keeps sets: the window must show its line and field and go on.
cp tests/bad-inputs/evalsets/empty-options.jsonl "$work/bench/evalsets/bad-options.jsonl"
# A second model in the list, for the test to make it the default and find it kept after a restart.
second="$work/tiny.gguf"
"$cli" bench make-model --shape tiny-llama --gguf q8_0 -o "$second" >/dev/null
cat >"$work/config/dev.readout.desktop/settings.json" <<JSON
{ "benchDir": "$work/bench/results", "defaultModel": "$model", "device": "cpu", "models": ["$second"] }
JSON

# Gemma 3 270M (a base model: no chat template) on a hub served on loopback, for the app to
# download into an empty Hugging Face cache of its own.
gemma="$repo/models/gemma-3-270m-q4_k_m.gguf"
[ -f "$gemma" ] || { echo "Gemma 3 270M is missing: run models/fetch gemma3-270m" >&2; exit 2; }
# And the real judge, Qwen2.5-Coder-1.5B-Instruct, under its catalogue entry's repository and file.
qwen="$repo/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
[ -f "$qwen" ] || { echo "Qwen2.5-Coder-1.5B-Instruct is missing: run models/fetch qwen2.5-coder-1.5b" >&2; exit 2; }
node ui/tests/fake-hub.mjs "$work/hub-url" "google/gemma-3-270m-GGUF:gemma-3-270m-q4_k_m.gguf=$gemma" \
  "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF:qwen2.5-coder-1.5b-instruct-q4_k_m.gguf=$qwen" &
hub_pid=$!
trap 'kill $hub_pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do [ -s "$work/hub-url" ] && break; sleep 0.2; done
[ -s "$work/hub-url" ] || { echo "the loopback hub did not start" >&2; exit 1; }
export HF_ENDPOINT="$(cat "$work/hub-url")" HF_HUB_CACHE="$work/hf-cache" HF_TOKEN= HF_HUB_OFFLINE=
export HUB_SPEC="google/gemma-3-270m-GGUF:gemma-3-270m-q4_k_m.gguf"
export QWEN_SPEC="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF:qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"

export XDG_CONFIG_HOME="$work/config" XDG_DATA_HOME="$work/data"
export APP="$app" READOUT_CLI="$cli" BENCH="$work/bench/results" SECOND_MODEL="$second"
export CLI_CYCLIC="$work/bench/results/authored144_smollm2-135m-instruct.q4_1_readout_3shot_cyclic.json"
export SHOTS_DIR="$repo/src-tauri/screenshots"
# WebKit in a VM without a GPU: software GL. (Turning compositing off makes WebDriver screenshots hang.)
export LIBGL_ALWAYS_SOFTWARE=1

xvfb-run -a -s "-screen 0 1280x900x24" bash -c '
  tauri-driver --port 4444 >"$0/tauri-driver.log" 2>&1 &
  driver=$!
  for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/4444) 2>/dev/null && break; sleep 0.2; done
  status=0
  node ui/tests/window.mjs || status=$?
  kill $driver 2>/dev/null || true
  # The same app with the system in dark mode (WebKitGTK takes GTK_THEME=…:dark as the dark
  # preference): every page screenshotted dark.
  if [ $status = 0 ]; then
    GTK_THEME=Adwaita:dark tauri-driver --port 4446 --native-port 4447 >"$0/tauri-driver-dark.log" 2>&1 &
    dark=$!
    for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/4446) 2>/dev/null && break; sleep 0.2; done
    DRIVER=http://127.0.0.1:4446/ node ui/tests/window-dark.mjs || status=$?
    kill $dark 2>/dev/null || true
  fi
  [ $status = 0 ] || { echo "--- tauri-driver log"; tail -40 "$0/tauri-driver.log"; }
  exit $status
' "$work"
