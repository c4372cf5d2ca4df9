#!/usr/bin/env bash
# Build llama-cpp-python once per machine into our own wheel folder, then install that wheel.
#
# Why not a plain `pip install llama-cpp-python`: PyPI has only the source package, and its default
# build uses -march=native. On these cloud CPUs cpuid advertises AMX, which the kernel does not
# enable, so a native build dies with "Illegal instruction" in the first batched matmul. We build
# for AVX2/FMA/F16C (every x86-64 CPU since 2013), and keep the wheel under a name that says so,
# because pip's own wheel cache would hand a native build back regardless of CMAKE_ARGS.
set -euo pipefail
PY=${1:?usage: install_llama_cpp.sh PYTHON}
VERSION=${LLAMA_CPP_VERSION:-0.3.36}
FLAGS=${VERIRAG_LLAMA_CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF}
TAG=$(printf '%s' "$VERSION $FLAGS $(uname -m)" | sha256sum | cut -c1-12)
WHEELS=${VERIRAG_WHEEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/verirag/wheels}/llama-cpp-$TAG

if "$PY" -c "import llama_cpp, sys; sys.exit(0 if llama_cpp.__version__ == '$VERSION' else 1)" 2>/dev/null \
   && [ -f "$(dirname "$PY")/../.llama-cpp-$TAG" ]; then
  exit 0
fi
if ! ls "$WHEELS"/llama_cpp_python-"$VERSION"-*.whl >/dev/null 2>&1; then
  echo "building llama-cpp-python $VERSION for this CPU family (once per machine, ~6-10 minutes)…"
  mkdir -p "$WHEELS.partial"
  CMAKE_ARGS="$FLAGS" "$PY" -m pip wheel --no-deps --no-cache-dir --no-binary llama-cpp-python \
    -w "$WHEELS.partial" "llama-cpp-python==$VERSION"
  rm -rf "$WHEELS" && mv "$WHEELS.partial" "$WHEELS"
fi
"$PY" -m pip install --disable-pip-version-check --force-reinstall --no-deps "$WHEELS"/llama_cpp_python-"$VERSION"-*.whl
"$PY" -m pip install --disable-pip-version-check "numpy>=1.20" "typing-extensions>=4.5" "diskcache>=5.6.1" "jinja2>=2.11.3"
touch "$(dirname "$PY")/../.llama-cpp-$TAG"
