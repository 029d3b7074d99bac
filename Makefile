# Two set-up commands: `make train` runs the main job, `make test` runs the tests. Both install what they need.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: install test train lint

$(VENV)/.installed: pyproject.toml $(wildcard plugins/*/pyproject.toml) .ci/constraints.txt
	$(PYTHON) -m venv $(VENV)
	# CPU build of torch first: an unpinned torch pulls a CUDA build of several GB.
	$(PY) -m pip install torch==2.13.0
	$(PY) -m pip install -c .ci/constraints.txt -e ".[test]"
	for plugin in plugins/*/; do $(PY) -m pip install -c .ci/constraints.txt -e "$$plugin" || exit 1; done
	touch $@

install: $(VENV)/.installed

test: install
	$(PY) -m pytest tests plugins -q; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests: treat as a failure" >&2; exit 1; fi; exit $$rc

train: install
	$(VENV)/bin/sb3-hir train

lint: install
	$(VENV)/bin/ruff check .
