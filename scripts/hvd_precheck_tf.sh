#!/usr/bin/env bash
# Compile horovod 0.28.1's two TensorFlow sources alone against a venv's TensorFlow, with the
# flags its CMake build uses (TF's compile flags, C++17, Gloo, TENSORFLOW_VERSION): ~1 minute on
# one core instead of a 25-minute `pip install horovod`, to find a new TF's compile errors
# before building (docs/stacks.md). Objects go to a temporary folder and are thrown away.
#   scripts/hvd_precheck_tf.sh VENV_PYTHON HOROVOD_SRC_DIR [mpi_ops.cc|xla_mpi_ops.cc ...]
# HOROVOD_SRC_DIR: an unpacked horovod-0.28.1 sdist (patched or not; scripts/hvd_env.sh tf-new
# leaves its patched one in .cache/hvd-src-tfnew/horovod-0.28.1). Exit 1 when a file fails; each
# file's first compiler error is printed.
set -uo pipefail
PY=$1; S=$2; shift 2
FILES=("$@"); ((${#FILES[@]})) || FILES=(xla_mpi_ops.cc mpi_ops.cc)
VER="$("$PY" -c 'import tensorflow as tf; print(tf.__version__)' 2>/dev/null)"
CF="$("$PY" -c 'import tensorflow as tf; print(" ".join(tf.sysconfig.get_compile_flags()))' 2>/dev/null)"
IFS=. read -r a b c <<<"$VER"; c=${c%%[!0-9]*}
DEC=$(printf '%d%03d%03d000' "$a" "$b" "$c")   # cmake/Utilities.cmake's PARSE_VERSION
INC=(-I"$S" -I"$S/third_party/HTTPRequest/include" -I"$S/third_party/gloo"
     -I"$S/third_party/flatbuffers/include" -I"$S/third_party/lbfgs/include")
for d in "$S"/third_party/boost/*/include; do INC+=(-I"$d"); done
OUT="$(mktemp -d)"; trap 'rm -rf "$OUT"' EXIT
rc=0
for f in "${FILES[@]}"; do
    # shellcheck disable=SC2086  # CF is a list of flags
    if nice -n 19 g++ -c -O1 -fPIC -std=c++17 $CF "${INC[@]}" -DEIGEN_MPL2_ONLY=1 -DHAVE_GLOO=1 \
        -DHOROVOD_CPU_OPERATIONS_DEFAULT=71 -DTENSORFLOW_VERSION="$DEC" \
        "$S/horovod/tensorflow/$f" -o "$OUT/$f.o" 2>"$OUT/$f.log"; then
        echo "precheck: TF $VER: $f compiles ($(grep -c 'warning:' "$OUT/$f.log") warnings)"
    else
        echo "precheck: TF $VER: $f FAILS: $(grep -m1 -E 'error:' "$OUT/$f.log")"
        rc=1
    fi
done
exit $rc
