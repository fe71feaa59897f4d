#!/bin/bash
# The GPU rows of the benchmarks, in one lease of a GPU machine (the device tool of this workplace; issue 29
# acceptance 4, issue 26 acceptance 5).  Stage first with `bash bench/gpu_stage.sh`, then run there, from the
# repository root, carrying .gpu and .whl:
#
#   bash bench/gpu_session.sh [BUDGET_S=540]
#
# 1. installs the carried wheels into /tmp/site, maps the top-level folders onto the import packages as
#    pyproject's package-dir does (symlinks: cfmlir/dialects -> dialects, cfruntime -> runtime, ...), and makes
#    .gpu/shared the ../shared the bench scripts read;
# 2. bench/peer_compare.py --device cuda, widened (what users get), rows $PEER_ROWS (all), half of BUDGET_S at most;
# 3. bench/bab_compare.py --device cuda: ours ($BAB_OURS_ARGS: float32, widened) against alpha-beta-CROWN
#    ($BAB_TOOLS) on the GPU sample of gpu_stage.sh ($BAB_BENCHMARKS), $BAB_LIMIT (20) s per instance;
# 4. bench/peer_compare.py --device cuda on the rows $PEER_ROWS_LAST (none), with what is left of BUDGET_S.
# EXTRA (a command line) runs first, after the set-up; an empty PEER_ROWS or BAB_BENCHMARKS skips that step;
# ALPHA_ROWS (none by default; e.g. mnist_6x100,mnist_convsmall_diffai) adds the alpha rows before step 3.
# Each step writes its JSON and log under $OUT (what the device tool brings back) as it goes, and is bounded by
# `timeout`, so a slow step costs only itself.  Without CUDA (PY, DEVICE and OUT set by hand) it runs on the
# CPU: that is how the script is checked before a lease.
set -u
export PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
R=$(pwd)
PY=${PY:-python3}
DEVICE=${DEVICE:-cuda}
OUT=${OUT:?the folder the results go to}
BUDGET=${1:-540}
PEER_ROWS=${PEER_ROWS-all}
PEER_ROWS_LAST=${PEER_ROWS_LAST:-}
BAB_BENCHMARKS=${BAB_BENCHMARKS-mnistfc,eran}
BAB_LIMIT=${BAB_LIMIT:-20}
BAB_OURS_ARGS=${BAB_OURS_ARGS---dtype float32}
BAB_TOOLS=${BAB_TOOLS:-ours,abcrown}
ALPHA_ROWS=${ALPHA_ROWS-}
T0=$(date +%s)
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }

if [ -z "${SKIP_INSTALL:-}" ]; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        || { echo "error: wheels did not install"; exit 1; }
fi
ln -sfn ../dialects cfmlir/dialects; ln -sfn ../passes cfmlir/passes; ln -sfn ../tools cfmlir/tools
ln -sfn runtime cfruntime
[ -e ../shared ] || ln -s "$R/.gpu/shared" ../shared
export PYTHONPATH=$R:/tmp/site:$R/.gpu/stub:$R/.gpu/shared/peers/auto_LiRPA
export CFMLIR_CACHE_DIR=$R/.gpu/cache
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv 2>/dev/null
  $PY -c 'import torch, xdsl; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), "xdsl ok")'
  $PY -c 'import cfmlir, cfruntime, auto_LiRPA, onnx2pytorch; print("imports ok")'; nproc; } 2>&1 | tee "$OUT/env.txt"

if [ -n "${EXTRA:-}" ]; then  # a diagnosis of one's own, with the same set-up (a command line)
    echo "== $EXTRA, $(left) s left"
    timeout $(( $(left) * 30 / 100 )) bash -c "$EXTRA" 2>&1 | tee "$OUT/extra.log"
fi

if [ -n "$PEER_ROWS" ]; then
    echo "== peer rows on $DEVICE (widened), $(left) s left"
    timeout $(( $(left) * 50 / 100 )) $PY bench/peer_compare.py --device "$DEVICE" --widen on --rows "$PEER_ROWS" \
        --out "$OUT/peer_compare_cuda_widened.json" 2>&1 | tee "$OUT/peer.log"
fi

if [ -n "$ALPHA_ROWS" ]; then  # alpha_deeppoly optimised against alpha-CROWN (issue 25.1), on the device
    echo "== alpha rows on $DEVICE, $(left) s left"
    timeout $(( $(left) * 50 / 100 )) $PY bench/peer_compare.py --alpha --device "$DEVICE" --rows "$ALPHA_ROWS" \
        --out "$OUT/peer_compare_alpha_cuda.json" 2>&1 | tee "$OUT/alpha.log"
fi

if [ -n "$BAB_BENCHMARKS" ]; then
    echo "== branch and bound on $DEVICE, $(left) s left"
    timeout $(( $(left) * 80 / 100 )) $PY bench/bab_compare.py "$R/.gpu/bench" --benchmarks "$BAB_BENCHMARKS" \
        --timeout "$BAB_LIMIT" --device "$DEVICE" --ours-args "$BAB_OURS_ARGS" --tools "$BAB_TOOLS" --abcrown "$R/.gpu/abcrown" \
        --abcrown-python "$PY" --reference "$R/.gpu/results" --out "$OUT/bab_compare_cuda.json" 2>&1 | tee "$OUT/bab.log"
fi

if [ -n "$PEER_ROWS_LAST" ]; then
    echo "== $PEER_ROWS_LAST on $DEVICE, $(left) s left"
    timeout $(( $(left) - 10 )) $PY bench/peer_compare.py --device "$DEVICE" --widen on --rows "$PEER_ROWS_LAST" \
        --out "$OUT/peer_compare_cuda_widened_last.json" 2>&1 | tee "$OUT/peer_last.log"
fi
echo "== done in $(( $(date +%s) - T0 )) s"
