#!/usr/bin/env bash
# Create (once) the Horovod run environment used by the `horovod` test tier and
# by `horovodize verify`:
#   .cache/hvd-venv  -- Python 3.11, tensorflow-cpu 2.15.1, horovod 0.28.1 (Gloo, no MPI),
#                       matplotlib (programs that plot: displays on rank 0 only), ray 2.6.3
#                       (horovod.ray.RayExecutor: the Ray recipe of `horovodize launch`)
# or, with the argument `tf-new`, the second stack: the newest Horovod 0.28.1 builds against
# (docs/stacks.md), used by the `stack2` and `stack_tfnew` tests (`make test-stack2`):
#   .cache/hvd-venv-tfnew -- Python 3.11, tensorflow-cpu 2.21.0, Keras 3.15.1 (`import keras`),
#   tf_keras 2.21.0 (the Keras 2 that TF_USE_LEGACY_KERAS=1 selects), horovod 0.28.1 built from
#   its sdist, patched (xla_mpi_ops.cc's XLA includes moved to xla/...), with Debian's highwayhash
#   and farmhash headers, which TF 2.21's wheel includes but does not ship; its build log is kept
#   in .cache/hvd-venv-tfnew.build.log.
# HVD_ENV_JOBS sets the build's parallelism (make -jN; default: every core).
# Idempotent: a stamp file is written only after `horovodrun --check-build`
# reports TensorFlow and Gloo, so a second run returns at once.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

PROFILE="${1:-tf215}"
case "$PROFILE" in
    tf215)
        VENV=.cache/hvd-venv
        # (matplotlib: the display programs; ray: `horovodize launch --emit ray`, whose driver
        # runs on Horovod 0.28.1's Ray integration: ray 2.6.3 is of that release's time, and its
        # dependencies resolve next to these pins without moving numpy or protobuf)
        TF_PINS=(numpy==1.26.4 tensorflow-cpu==2.15.1 matplotlib==3.8.4 ray==2.6.3)
        ;;
    tf-new)
        VENV=.cache/hvd-venv-tfnew
        # TF 2.21's own dependencies at the versions it resolved to on 2026-11-29, pinned.
        TF_PINS=(numpy==2.4.6 tensorflow-cpu==2.21.0 keras==3.15.1 ml-dtypes==0.6.0
                 h5py==3.14.0 protobuf==7.36.2 absl-py==2.5.1 flatbuffers==25.12.19
                 gast==0.7.0 grpcio==1.85.3 optree==0.20.0 wrapt==2.5.2)
        # The horovod 0.28.1 sdist, by hash (it is patched before the build).
        HVD_SDIST_SHA256=92a43f5a94c43907a56805bad15f19700c62ffc83b7ca483f9e104e229f67ef0
        # tf_keras 2.21.0 requires the `tensorflow` distribution (the GPU one, 600 MB) by name,
        # which tensorflow-cpu provides: installed without its dependencies.
        NO_DEPS_PINS=(tf_keras==2.21.0)
        ;;
    *) echo "hvd-env: unknown profile $PROFILE (tf215 or tf-new)" >&2; exit 2 ;;
esac
# Bump this key whenever a pin below changes: it invalidates the stamp.
if [[ "$PROFILE" == tf215 ]]; then
    KEY="py3.11 tensorflow-cpu==2.15.1 horovod==0.28.1 numpy==1.26.4 matplotlib==3.8.4 ray==2.6.3 gloo v3"
else
    KEY="py3.11 ${TF_PINS[*]} ${NO_DEPS_PINS[*]} horovod==0.28.1+xla-include-patch gloo v1"
fi
STAMP="$VENV/.hvd-env-ok"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$KEY" && -x "$VENV/bin/horovodrun" ]]; then
    echo "hvd-env: up to date ($VENV)"
    exit 0
fi

log() { echo "hvd-env: $*"; }

# The second stack keeps its build log (a build, not a cached install, is what may
# fail there).
if [[ "$PROFILE" != tf215 ]]; then
    mkdir -p .cache
    exec > >(tee "$VENV.build.log") 2>&1
    log "$(date -u '+%F %T UTC'): building $VENV ($KEY)"
fi

# --- system build tools (only when missing) --------------------------------
missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v g++   >/dev/null 2>&1 || missing+=(g++)
command -v make  >/dev/null 2>&1 || missing+=(make)
# TF 2.21's headers (xla/printer.h, tsl/platform/fingerprint.h) include highwayhash and farmhash
# headers that its wheel does not ship: Debian's -dev packages put them on the default include path.
if [[ "$PROFILE" == tf-new ]]; then
    [[ -f /usr/include/highwayhash/arch_specific.h ]] || missing+=(libhighwayhash-dev)
    [[ -f /usr/include/farmhash.h ]] || missing+=(libfarmhash-dev)
fi
# `make test` builds this environment next to the editor's (scripts/vscode_env.sh): their apt
# steps take turns on one lock file.
mkdir -p .cache
APT_LOCK="$PWD/.cache/apt.lock"
if ((${#missing[@]})); then
    log "installing ${missing[*]} with apt-get"
    sudo=""
    if [[ $(id -u) -ne 0 ]]; then sudo=sudo; fi
    flock "$APT_LOCK" $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive flock "$APT_LOCK" $sudo apt-get install -y -q "${missing[@]}"
fi

# --- a Python 3.11 interpreter ---------------------------------------------
PY311="${HVD_ENV_PYTHON:-}"
if [[ -z "$PY311" ]]; then
    for cand in python3.11 python3; do
        if command -v "$cand" >/dev/null 2>&1 &&
           "$cand" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
            PY311="$(command -v "$cand")"
            break
        fi
    done
fi
apt_install() {
    local sudo=""
    if [[ $(id -u) -ne 0 ]]; then sudo=sudo; fi
    flock "$APT_LOCK" $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive flock "$APT_LOCK" $sudo apt-get install -y -q "$@"
}
if [[ -z "$PY311" ]]; then
    # Debian 12's own python3 is 3.11: install it with headers (horovod builds a C++ extension).
    log "no Python 3.11 on PATH; installing python3.11 with apt-get"
    apt_install python3.11 python3.11-venv python3.11-dev
    PY311=/usr/bin/python3.11
fi
if ! "$PY311" -c 'import venv, ensurepip' 2>/dev/null; then
    log "installing python3.11-venv with apt-get"
    apt_install python3.11-venv
fi
if [[ ! -f "$("$PY311" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h" ]]; then
    log "installing python3.11-dev (Python.h) with apt-get"
    apt_install python3.11-dev
fi

# --- the venv ----------------------------------------------------------------
if [[ ! -x "$VENV/bin/python" ]]; then
    log "creating $VENV with $PY311"
    mkdir -p .cache
    "$PY311" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)

log "installing build dependencies and TensorFlow"
"${PIP[@]}" install -q pip==24.0
"${PIP[@]}" install -q \
    setuptools==69.5.1 wheel==0.43.0 packaging==24.0 \
    psutil==5.9.8 cloudpickle==3.0.0 pyyaml==6.0.1 cffi==1.16.0 \
    "${TF_PINS[@]}"
if [[ -n "${NO_DEPS_PINS:-}" ]]; then
    "${PIP[@]}" install -q --no-deps "${NO_DEPS_PINS[@]}"
fi

# Build horovod only when it is missing or lacks the TensorFlow/Gloo ops.
if ! "$VENV/bin/python" -c 'import horovod, horovod.tensorflow as h; assert horovod.__version__ == "0.28.1"; assert h.gloo_built()' 2>/dev/null; then
    log "building horovod 0.28.1 (TensorFlow + Gloo, no MPI); this takes a few minutes"
    jobs="${HVD_ENV_JOBS:-$(nproc 2>/dev/null || echo 2)}"
    HVD_SPEC=horovod==0.28.1
    if [[ "$PROFILE" == tf-new ]]; then
        # horovod 0.28.1's horovod/tensorflow/xla_mpi_ops.cc (always compiled for TF >= 2.6: no
        # switch turns it off) includes tensorflow/compiler/xla/...; TF 2.21 ships those headers
        # under xla/ only, and xla_builder.h moved to xla/hlo/builder/. Build from the sdist
        # (checked by hash) with the includes moved; nothing else in it changes.
        SRC=.cache/hvd-src-tfnew
        rm -rf "$SRC" && mkdir -p "$SRC"
        echo "horovod==0.28.1 --hash=sha256:$HVD_SDIST_SHA256" >"$SRC/req.txt"
        "${PIP[@]}" download -q --no-deps --no-binary :all: --require-hashes -r "$SRC/req.txt" -d "$SRC"
        tar -xzf "$SRC/horovod-0.28.1.tar.gz" -C "$SRC"
        XLA_CC="$SRC/horovod-0.28.1/horovod/tensorflow/xla_mpi_ops.cc"
        sed -i -e 's|"tensorflow/compiler/xla/client/xla_builder.h"|"xla/hlo/builder/xla_builder.h"|' \
               -e 's|"tensorflow/compiler/xla/|"xla/|' "$XLA_CC"
        if grep -q 'tensorflow/compiler/xla/' "$XLA_CC" || ! grep -q '"xla/hlo/builder/xla_builder.h"' "$XLA_CC"; then
            log "patching $XLA_CC did not take" >&2
            exit 1
        fi
        log "patched $XLA_CC: $(grep -c '^#include "xla/' "$XLA_CC") includes moved to xla/"
        HVD_SPEC="$PWD/$SRC/horovod-0.28.1"
    fi
    # No debug info: Horovod's CMake builds RelWithDebInfo ("-O3 -g"); compilers that add -g0 last
    # (the last -g option wins) leave the code as it is and compile the TensorFlow-heavy sources
    # faster (mpi_ops.cc: 18% less CPU time, measured alone).
    G0="$PWD/.cache/g0-compilers"
    mkdir -p "$G0"
    printf '#!/bin/sh\nexec %s "$@" -g0\n' "$(command -v g++)" >"$G0/g++"
    chmod +x "$G0/g++"
    PATH="$PWD/$VENV/bin:$PATH" CXX="$G0/g++" \
    MAKEFLAGS="-j$jobs" \
    HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_MPI=1 \
    HOROVOD_WITHOUT_PYTORCH=1 HOROVOD_WITHOUT_MXNET=1 \
        "${PIP[@]}" install --no-cache-dir --no-build-isolation --force-reinstall --no-deps "$HVD_SPEC"
fi

# --- check --------------------------------------------------------------------
log "checking the build"
check="$(PATH="$PWD/$VENV/bin:$PATH" "$VENV/bin/horovodrun" --check-build)"
echo "$check"
if ! grep -Eq '\[X\] TensorFlow' <<<"$check" || ! grep -Eq '\[X\] Gloo' <<<"$check"; then
    log "horovodrun --check-build does not list TensorFlow and Gloo" >&2
    exit 1
fi

echo "$KEY" >"$STAMP"
log "ready: $VENV/bin/horovodrun"
