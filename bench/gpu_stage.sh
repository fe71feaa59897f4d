#!/bin/bash
# Stage what one lease of a GPU machine needs (bench/gpu_session.sh runs there) into .gpu/ and .whl/ of this
# checkout: both ignored by git (.git/info/exclude) and carried by the device tool (`carry: [".gpu", ".whl"]`),
# together with the tracked files under its 64 MiB limit.  The machine has python3 3.12 with torch (CUDA),
# onnx, onnxruntime, numpy, scipy, yaml, torchvision, and no package index; everything else travels:
#
#   .whl/            wheels for Python 3.12: xdsl and its two small dependencies (cfmlir), onnx2pytorch,
#                    appdirs, graphviz (auto_LiRPA's harness), termcolor, onnxoptimizer, skl2onnx (abcrown)
#   .gpu/shared/     the nets and data of bench/peer_compare.py's rows, MANIFEST.json, auto_LiRPA 0.7.1 and
#                    its harness (becomes ../shared there, where the bench scripts look)
#   .gpu/abcrown/    alpha-beta-CROWN's code without its datasets and test models (src/complete_verifier)
#   .gpu/bench/      the VNN-COMP 2021 instances of the GPU branch-and-bound sample (one CSV per benchmark)
#   .gpu/results/    the competition's results CSVs, cut to those benchmarks (the reference answers)
#   .gpu/cache/      our compile cache (CFMLIR_CACHE_DIR), so the shipped certifiers are not compiled there
#   .gpu/stub/       a stand-in gurobipy: abcrown imports it at start-up, and no MIP feature is used
#
#   bash bench/gpu_stage.sh [ABCROWN_DIR=../abcrown] [VNNCOMP2021_DIR=/work/vnncomp2021]
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
ABCROWN=${1:-$REPO/../abcrown}
VNN=${2:-/work/vnncomp2021}
SHARED=$REPO/../shared
G=$REPO/.gpu
cd "$REPO"
mkdir -p .git/info
for p in /.gpu/ /.whl/; do grep -qxF "$p" .git/info/exclude 2>/dev/null || echo "$p" >> .git/info/exclude; done
rm -rf "$G" && mkdir -p "$G"/{shared/nets,shared/data,shared/peers,abcrown/src,bench,results,cache,stub/gurobipy}

# wheels (pure Python but onnxoptimizer, which is abi3)
mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl xdsl==0.74.0 immutabledict==4.3.1 ordered-set==4.1.0 \
    onnx2pytorch==0.5.1 appdirs==1.4.4 graphviz==0.21 termcolor==3.3.0 onnxoptimizer==0.4.2 skl2onnx==1.20.0 \
    2>&1 | grep -v "^WARNING: Location" || true

# the shared nets and data of the peer rows
for n in mnist_relu_6_100 mnist_relu_9_200 mnist_relu_6_500 mnist_convSmallRELU__DiffAI cifar10_convSmallRELU__PGDK \
         cifar10_convMedRELU cifar10_convBigRELU; do cp "$SHARED/nets/$n.onnx" "$G/shared/nets/"; done
cp "$SHARED/nets/MANIFEST.json" "$G/shared/nets/"
cp "$SHARED/data/mnist_test.csv" "$SHARED/data/cifar10_test.csv" "$G/shared/data/"
cp -r "$SHARED/peers/auto_LiRPA" "$SHARED/peers/lirpa_bounds.py" "$G/shared/peers/"
mkdir -p "$G/shared/peers/abcrown" && cp "$SHARED"/peers/abcrown/*.yaml "$G/shared/peers/abcrown/"
find "$G/shared/peers" -name __pycache__ -prune -exec rm -rf {} +

# alpha-beta-CROWN's code (already patched by ../shared/peers/abcrown/setup.sh)
(cd "$ABCROWN/src" && tar -c --exclude=complete_verifier/datasets --exclude=complete_verifier/models \
    --exclude=complete_verifier/examples_abcrown --exclude=__pycache__ complete_verifier) | tar -x -C "$G/abcrown/src"
printf '# stand-in: imported by alpha-beta-CROWN at start-up; no MIP or cut feature is used\n' \
    > "$G/stub/gurobipy/__init__.py"

# the branch-and-bound sample: instances both tools left open or decided slowly on 2 CPU cores
# (bench/results/bab_compare.json), where a GPU's batch of subdomains matters
sample() {  # benchmark, then CSV lines onnx,vnnlib,limit
    local b=$1; shift; mkdir -p "$G/bench/$b"
    printf '%s\n' "$@" > "$G/bench/$b/${b}_instances.csv"
    for line in "$@"; do
        IFS=, read -r onnx vnnlib _ <<< "$line"
        for f in "$onnx" "$vnnlib"; do mkdir -p "$G/bench/$b/$(dirname "$f")"; cp "$VNN/benchmarks/$b/$f" "$G/bench/$b/$f"; done
    done
    grep -h "^$b," "$VNN"/results_csv/*.csv > "$G/results/$b.csv" || true
}
sample mnistfc mnist-net_256x2.onnx,prop_0_0.03.vnnlib,120 mnist-net_256x4.onnx,prop_9_0.05.vnnlib,120 \
    mnist-net_256x6.onnx,prop_12_0.03.vnnlib,120
sample eran nets/mnist_relu_9_200.onnx,specs/mnist/mnist_spec_idx_5520_eps_0.01500.vnnlib,300

# the compile cache of the shipped certifiers the rows use
cp "${CFMLIR_CACHE_DIR:-$HOME/.cache/cfmlir}"/{ibp,crown_ibp,deeppoly}-*.py "$G/cache/" 2>/dev/null || true
du -sh "$G" .whl
git ls-files -z | xargs -0 du -cb | tail -1
