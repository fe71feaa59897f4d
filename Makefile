# cfmlir developer entry points.  `make demo` and `make test` set everything up on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup demo test test-unit test-lit bench clean

setup: $(STAMP)

# One virtual environment with the package (editable), the test tools and Ray (`cf-run --ray`, tested in CI):
# the ranges of pyproject.toml, the exact versions CI uses from constraints.txt.
$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip setuptools wheel
	$(PY) -m pip install -q -c constraints.txt -e '.[test,ray]'
	touch $(STAMP)

# The main job on the embedded default: certify the shipped MNIST net on the shipped images.
demo: setup
	$(VENV)/bin/cf-run

# Both suites always run; the target fails if either failed.
test: setup
	@status=0; \
	$(PY) -m pytest -W error -q test/unit || status=1; \
	$(PY) test/run_lit.py || status=1; \
	exit $$status

test-unit: setup
	$(PY) -m pytest -W error -q test/unit

test-lit: setup
	$(PY) test/run_lit.py

bench: setup
	$(PY) bench/gbscr_ops.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
