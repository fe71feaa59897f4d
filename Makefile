# cfmlir developer entry points.  `make demo` and `make test` set everything up on a fresh machine.
SHELL  := /bin/bash
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

# Both suites always run; the target fails if either failed.  When a suite failed, its closing lines are
# printed again at the end (so the tail of a CI log names the failure), the lit count last.
test: setup
	@$(PY) -m pytest -W error -q test/unit --durations=40 2>&1 | tee .unit.log; unit=$${PIPESTATUS[0]}; \
	$(PY) test/run_lit.py 2>&1 | tee .lit.log; lit=$${PIPESTATUS[0]}; \
	if [ $$unit -ne 0 ]; then echo "--- pytest exited with status $$unit; its last lines:"; tail -n 30 .unit.log; fi; \
	if [ $$lit -ne 0 ] || [ $$unit -ne 0 ]; then tail -n 1 .lit.log; fi; \
	[ $$unit -eq 0 ] && [ $$lit -eq 0 ]

test-unit: setup
	$(PY) -m pytest -W error -q test/unit

test-lit: setup
	$(PY) test/run_lit.py

bench: setup
	$(PY) bench/gbscr_ops.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
