#!/usr/bin/env bash
# VNN-COMP entry point: run_instance.sh v1 BENCHMARK ONNX VNNLIB RESULTS_FILE TIMEOUT
#
# Decides one instance with cf-run and leaves the competition's result file at RESULTS_FILE: the verdict
# (unsat, sat, unknown, timeout or error) on its first line and, for sat, the confirmed counterexample
# ((X_0 v) ... (Y_0 v) ...).  The analysis runs in a child process that cf-run kills after TIMEOUT seconds
# (counted from cf-run's start).  BENCHMARK is not used (one setting for every category).
# Environment: CF_CERTIFIER (shipped name or .cf file, default auto: alpha_deeppoly with its branch-and-bound
# root optimised, deeppoly on residual ReLU nets; tools/auto_certifier.py), CF_DEVICE (default cpu; cuda for
# the GPU), CF_DTYPE (float64 or float32, default float64), CF_PYTHON (default: the repository's .venv).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/entry_point.sh"
entry_args run_instance.sh "BENCHMARK ONNX VNNLIB RESULTS_FILE TIMEOUT" 6 "$@"
ONNX="$3"
VNNLIB="$4"
RESULTS="$5"
TIMEOUT="$6"
# a result file from an earlier run must never stand for this one
rm -f "$RESULTS"
"$PY" -m cfmlir.tools.cf_run --certifier "${CF_CERTIFIER:-auto}" --net "$ONNX" --vnnlib "$VNNLIB" \
    --results "$RESULTS" --timeout "$TIMEOUT" --device "${CF_DEVICE:-cpu}" --dtype "${CF_DTYPE:-float64}"
status=$?
if [ ! -s "$RESULTS" ]; then  # cf-run could not even start (bad arguments, no python): still a result
    echo "error" > "$RESULTS"
fi
exit $status
