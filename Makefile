# Two set-up commands: `make train` runs the main job, `make test` runs the tests. Both install what they need.
#
# Two install profiles, each in its own virtual environment, pinned by its own constraints file:
#   .venv          "dagger":  gymnasium 0.29 with imitation 1.0 (the 'dagger' extra) and gymnasium-robotics 1.2;
#                             everything, the main job included.
#   Both install the 'sweep' extra (Ray Tune, Optuna) for `sb3-hir sweep`.
#   .venv-current  "current": the newest SB3 / sb3-contrib and gymnasium 1.x with gymnasium-robotics 1.4 and SBX, plus
#                             DAgger as a user of that stack gets it: the 'dagger-gymnasium1' extra (imitation's
#                             runtime needs there) and `pip install --no-deps imitation==1.0.0`, since imitation 1.0
#                             pins gymnasium 0.29. The DAgger tests run in both profiles; `make test` checks that
#                             sb3_hir.dagger imports in each, so they cannot skip unnoticed.
PYTHON ?= python3
VENV ?= .venv
VENV_CURRENT ?= .venv-current
PLUGINS := $(wildcard plugins/*/)
# Extra flags for the install's pip calls. CI passes --no-compile with bytecode writing on (.ci/run): Python then
# compiles only the modules something imports, once, where pip would compile every module of every package. Leave it
# empty where PYTHONDONTWRITEBYTECODE is set: nothing would write the .pyc files pip leaves out.
PIP_FLAGS ?=
# What `make test` hands pytest in each profile (the whole suite; narrow it while developing).
PYTEST_ARGS ?= tests plugins -q --durations=15

.PHONY: install test test-dagger test-current train lint typecheck docs

# $(1): venv, $(2): extras, $(3): constraints file, $(4): packages installed last with --no-deps (may be empty).
# The package and the plugins go in one pip call: one resolution instead of one per plugin.
define install_profile
	$(PYTHON) -m venv $(1)
	# CPU build of torch first: an unpinned torch pulls a CUDA build of several GB.
	$(1)/bin/python -m pip install $(PIP_FLAGS) torch==2.13.0
	$(1)/bin/python -m pip install $(PIP_FLAGS) -c $(3) -e ".[$(2)]" $(foreach plugin,$(PLUGINS),-e "$(plugin)")
	$(if $(4),$(1)/bin/python -m pip install $(PIP_FLAGS) --no-deps -c $(3) $(4))
	touch $(1)/.installed
endef

$(VENV)/.installed: pyproject.toml $(wildcard plugins/*/pyproject.toml) .ci/constraints-dagger.txt
	$(call install_profile,$(VENV),test$(comma)dagger$(comma)sweep,.ci/constraints-dagger.txt)

$(VENV_CURRENT)/.installed: pyproject.toml $(wildcard plugins/*/pyproject.toml) .ci/constraints-current.txt
	$(call install_profile,$(VENV_CURRENT),test$(comma)sweep$(comma)dagger-gymnasium1$(comma)sbx,.ci/constraints-current.txt,imitation)

comma := ,

# The two profiles are independent targets: `make -j2 install` (as CI runs it) builds them at once.
install: $(VENV)/.installed $(VENV_CURRENT)/.installed

# Both profiles run, at once (one per core of a 2-core runner; each suite is mostly single-threaded), even when one
# fails; each one's output is printed whole after both end. pytest's "no tests collected" (5) counts as a failure.
# The suites run as background jobs, which ignore SIGINT: the tests that Ctrl-C a subprocess restore it there.
# A test of a layer the profiles do not change runs in one of them (`--profile-run`, tests/conftest.py): the tests
# marked `once(profile)` (the command line and the examples drive the library through its public API, which the rest
# of the suite tests in both; the benchmark scripts' tiny runs choose theirs in tests/experiment/test_benchmarks_run.py)
# and those marked `ray` (Ray's scheduling does not depend on the profile's gymnasium or SB3; the dagger profile unless
# marked once(...)). Which profile takes which keeps the two, which run at once, ending together.
test: install
	@rc=0; logs=$$(mktemp -d); \
	for venv in $(VENV) $(VENV_CURRENT); do \
	  n=$$(echo $$venv | tr / _); \
	  ( echo "== profile $$venv: $$($$venv/bin/python -c 'import gymnasium, stable_baselines3 as s, imitation; print("gymnasium", gymnasium.__version__, "SB3", s.__version__, "imitation", imitation.__version__)')"; \
	    $$venv/bin/python -c 'import sb3_hir.dagger' || { echo "sb3_hir.dagger does not import in $$venv: its DAgger tests would skip" >&2; echo 1 > $$logs/$$n.import; }; \
	    if [ $$venv = $(VENV_CURRENT) ]; then $$venv/bin/python -c 'import sbx' || { echo "sbx does not import in $$venv: its SBX tests would skip" >&2; echo 1 > $$logs/$$n.import; }; fi; \
	    set -- --profile-run dagger; if [ $$venv = $(VENV_CURRENT) ]; then set -- --profile-run current; fi; \
	    start=$$(date +%s); $$venv/bin/python -m pytest $(PYTEST_ARGS) "$$@"; r=$$?; \
	    echo "== profile $$venv: pytest took $$(( $$(date +%s) - start ))s, exit code $$r"; echo $$r > $$logs/$$n.rc \
	  ) > $$logs/$$n.log 2>&1 & \
	done; wait; \
	for venv in $(VENV) $(VENV_CURRENT); do \
	  n=$$(echo $$venv | tr / _); cat $$logs/$$n.log; r=$$(cat $$logs/$$n.rc 2>/dev/null || echo 1); \
	  if [ -f $$logs/$$n.import ]; then rc=1; fi; \
	  if [ $$r -eq 5 ]; then echo "pytest collected no tests in $$venv: treat as a failure" >&2; r=1; fi; \
	  if [ $$r -ne 0 ]; then rc=$$r; fi; \
	done; rm -rf $$logs; exit $$rc

test-dagger: $(VENV)/.installed
	$(VENV)/bin/python -m pytest tests plugins -q

test-current: $(VENV_CURRENT)/.installed
	$(VENV_CURRENT)/bin/python -m pytest tests plugins -q

train: $(VENV)/.installed
	$(VENV)/bin/sb3-hir train

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .

# mypy over sb3_hir/, plugins/ and benchmarks/ ([tool.mypy] in pyproject.toml), in the dagger profile, where CI's
# tools run (sbx and jax, which only the current profile has, are imported without types there). About a CPU-minute
# from a cold cache.
typecheck: $(VENV)/.installed
	@start=$$(date +%s); \
	$(VENV)/bin/mypy || exit 1; \
	echo "== make typecheck took $$(( $$(date +%s) - start ))s"

# The documentation site: warnings are errors, then every ```python block of docs/**/*.md runs in a fresh
# interpreter (docs/run_snippets.py). The docs tools are pinned in docs/requirements.txt, installed into $(VENV).
docs: $(VENV)/.installed
	$(VENV)/bin/python -m pip install -q -r docs/requirements.txt
	@start=$$(date +%s); \
	PYTHONPATH=$(CURDIR) $(VENV)/bin/sphinx-build -W --keep-going -b html docs docs/_build/html || exit 1; \
	PYTHONPATH=$(CURDIR) $(VENV)/bin/python docs/run_snippets.py || exit 1; \
	echo "== make docs: build and snippets took $$(( $$(date +%s) - start ))s"
