#!/usr/bin/env bash
# Build llama-cpp-python once per machine into our own wheel folder, then install that wheel.
#
# Why not a plain `pip install llama-cpp-python`: PyPI has only the source package, and its default
# build uses -march=native. On these cloud CPUs cpuid advertises AMX, which the kernel does not
# enable, so a native build dies with "Illegal instruction" in the first batched matmul. We build
# for AVX2/FMA/F16C (every x86-64 CPU since 2013), and keep the wheel under a name that says so,
# because pip's own wheel cache would hand a native build back regardless of CMAKE_ARGS.
set -euo pipefail
# VERIRAG_LLAMA_BUILD=avx2 forces the portable build (e.g. the baseline of benchmarks/bench_prune.py);
# a second argument --wheel-only builds the wheel into the cache without installing it.
PY=${1:?usage: install_llama_cpp.sh PYTHON [--wheel-only]}
WHEEL_ONLY=${2:-}
VERSION=${LLAMA_CPP_VERSION:-0.3.36}
PORTABLE="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF"
# Where the CPU advertises the AVX-512 subsets llama.cpp's kernels use, prompt reading is ~1.26x
# faster (qwen2.5-1.5b Q4_K_M, 2 threads). AMX stays off everywhere: cpuid advertises it on these
# cloud CPUs but the kernel does not enable it, and a build using it dies with "Illegal instruction".
CPU_FLAGS=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
has() { case " $CPU_FLAGS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
if [ "${VERIRAG_LLAMA_BUILD:-auto}" != avx2 ] && has avx512f && has avx512bw && has avx512vl && has avx512dq && has avx512vbmi && has avx512_vnni && has avx512_bf16; then
  BUILD=avx512
  CHOSEN="$PORTABLE -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
else
  BUILD=avx2
  CHOSEN="$PORTABLE"
fi
FLAGS=${VERIRAG_LLAMA_CMAKE_ARGS:-$CHOSEN}
[ -n "${VERIRAG_LLAMA_CMAKE_ARGS:-}" ] && BUILD=custom
TAG=$(printf '%s' "$VERSION $FLAGS $(uname -m)" | sha256sum | cut -c1-12)
# The build's name is part of the cache key, so an AVX2 wheel is never handed to an AVX-512 machine
# (or the reverse) from a shared wheel folder.
WHEELS=${VERIRAG_WHEEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/verirag/wheels}/llama-cpp-$BUILD-$TAG

if [ "$WHEEL_ONLY" != --wheel-only ] && "$PY" -c "import llama_cpp, sys; sys.exit(0 if llama_cpp.__version__ == '$VERSION' else 1)" 2>/dev/null \
   && [ -f "$(dirname "$PY")/../.llama-cpp-$TAG" ]; then
  exit 0
fi
if ! ls "$WHEELS"/llama_cpp_python-"$VERSION"-*.whl >/dev/null 2>&1; then
  echo "building llama-cpp-python $VERSION ($BUILD build; once per machine, ~6-10 minutes)…"
  mkdir -p "$WHEELS.partial"
  CMAKE_ARGS="$FLAGS" "$PY" -m pip wheel --no-deps --no-cache-dir --no-binary llama-cpp-python \
    -w "$WHEELS.partial" "llama-cpp-python==$VERSION"
  rm -rf "$WHEELS" && mv "$WHEELS.partial" "$WHEELS"
fi
if [ "$WHEEL_ONLY" = --wheel-only ]; then
  ls "$WHEELS"/llama_cpp_python-"$VERSION"-*.whl
  exit 0
fi
"$PY" -m pip install --disable-pip-version-check --force-reinstall --no-deps "$WHEELS"/llama_cpp_python-"$VERSION"-*.whl
"$PY" -m pip install --disable-pip-version-check "numpy>=1.20" "typing-extensions>=4.5" "diskcache>=5.6.1" "jinja2>=2.11.3"
touch "$(dirname "$PY")/../.llama-cpp-$TAG"
