#!/usr/bin/env bash
# VNN-COMP entry point: prepare_instance.sh v1 BENCHMARK ONNX VNNLIB
#
# No analysis: compiles the certifier into the cache (so run_instance.sh starts with it compiled),
# checks that the network and the property load and match (exit status 1 and one error line when they do
# not: an unsupported operator, a bad file) and, for a CF_CERTIFIER given as a .cf file, proves the rules
# this network runs (cached for run_instance.sh; exit status 3 when one is unsound, docs/trust.md).
# Environment as for run_instance.sh.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/entry_point.sh"
entry_args prepare_instance.sh "BENCHMARK ONNX VNNLIB" 4 "$@"
exec "$PY" -m cfmlir.tools.instances prepare "${CF_CERTIFIER:-auto}" "$3" "$4"
