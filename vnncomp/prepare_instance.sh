#!/usr/bin/env bash
# VNN-COMP entry point: prepare_instance.sh v1 BENCHMARK ONNX VNNLIB
#
# No analysis: compiles the certifier into the cache (so run_instance.sh starts with it compiled),
# checks that the network and the property load and match (exit status 1 and one error line when they do
# not: an unsupported operator, a bad file) and, for a CF_CERTIFIER given as a .cf file, proves the rules
# this network runs (cached for run_instance.sh; exit status 3 when one is unsound, docs/trust.md).
# Environment as for run_instance.sh.
set -u
if [ "$#" -ne 4 ]; then
    echo "error: usage: prepare_instance.sh v1 BENCHMARK ONNX VNNLIB (got $# arguments)" >&2
    exit 1
fi
if [ "$1" != "v1" ]; then
    echo "error: prepare_instance.sh: unsupported version '$1' (expected v1)" >&2
    exit 1
fi
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${CF_PYTHON:-$ROOT/.venv/bin/python}"
exec "$PY" -m cfmlir.tools.instances prepare "${CF_CERTIFIER:-deeppoly}" "$3" "$4"
