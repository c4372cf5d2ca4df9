#!/usr/bin/env bash
# Build ik_llama.cpp's two libraries for this CPU, for measuring the `ik` engine (issue 48, item 5).
#
# Why: the `ik` extra's wheel (ik-llama-cpp-python on PyPI) is built for AVX2 only, so on an AVX-512
# machine it reads prompts slower than this project's llama.cpp build. Its source package does not
# build through pip here (the build-info step of its `common` library needs a file the package lacks),
# but the two libraries the engine loads (llama, ggml) build with CMake. -march=native is safe for
# this fork: it has no AMX code (the reason install_llama_cpp.sh never builds llama.cpp natively).
# The build is kept per CPU (its flags are part of the folder's name); use it with the printed export.
set -euo pipefail
PY=${1:?usage: build_ik_llama_cpp.sh PYTHON}
VERSION=${IK_LLAMA_CPP_VERSION:-0.1.5}
CPU_FLAGS=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
TAG=$(printf '%s' "$VERSION native $CPU_FLAGS $(uname -m)" | sha256sum | cut -c1-12)
OUT=${XDG_CACHE_HOME:-$HOME/.cache}/verirag/ik-llama-cpp-native-$TAG
LIB=$OUT/build/vendor/ik_llama.cpp/src/libllama.so
# built in place (the library finds libggml by the build folder's path), done when the stamp exists
if [ ! -f "$OUT/built" ]; then
  CMAKE=$(command -v cmake || true)
  if [ -z "$CMAKE" ]; then  # no system CMake: PyPI's, into the Python environment
    "$PY" -m pip install --disable-pip-version-check "cmake>=3.21" >&2
    CMAKE=$(dirname "$PY")/cmake
  fi
  SRC=$(mktemp -d)
  trap 'rm -rf "$SRC"' EXIT
  echo "building ik_llama.cpp $VERSION for this CPU (once per machine, ~15 minutes on 2 cores)…" >&2
  "$PY" -m pip download --disable-pip-version-check --no-deps --no-binary :all: -d "$SRC" "ik-llama-cpp-python==$VERSION" >&2
  tar xzf "$SRC/ik_llama_cpp_python-$VERSION.tar.gz" -C "$SRC"
  rm -rf "$OUT/build"
  "$CMAKE" -S "$SRC/ik_llama_cpp_python-$VERSION" -B "$OUT/build" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF >&2
  "$CMAKE" --build "$OUT/build" -j"$(nproc)" --target llama ggml >&2
  touch "$OUT/built"
fi
echo "export IK_LLAMA_CPP_LIB_PATH=$LIB"
