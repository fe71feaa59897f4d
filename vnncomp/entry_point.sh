# Sourced by the VNN-COMP entry points prepare_instance.sh and run_instance.sh: the checks of their
# arguments (entry_args) and ROOT (the repository) and PY (its python: CF_PYTHON, default .venv).

# entry_args SCRIPT "ARGUMENTS AFTER v1" COUNT "$@": exit status 1 and one error line unless the script got
# COUNT arguments, the first being the version v1.
entry_args() {
    local script="$1" usage="$2" count="$3"
    shift 3
    if [ "$#" -ne "$count" ]; then
        echo "error: usage: $script v1 $usage (got $# arguments)" >&2
        exit 1
    fi
    if [ "$1" != "v1" ]; then
        echo "error: $script: unsupported version '$1' (expected v1)" >&2
        exit 1
    fi
}

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${CF_PYTHON:-$ROOT/.venv/bin/python}"
