# The two quickstart commands: `make run` and `make test`. Each creates .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test test-fast test-agents try-agent agent-clis lint bench corpus clean system-deps browser-deps

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@ $(VENV)/.installed

# Agents and checks run in bubblewrap: install it when missing (Debian and Ubuntu).
system-deps:
	@command -v bwrap >/dev/null || { \
	    if [ "$$(id -u)" = 0 ]; then SUDO=; elif sudo -n true 2>/dev/null; then SUDO=sudo; \
	    else echo "bubblewrap is missing: apt-get install bubblewrap (or RATCHET_SANDBOX=none)" >&2; exit 1; fi; \
	    $$SUDO apt-get install -y -q bubblewrap >/dev/null 2>&1 || { $$SUDO apt-get update -q >/dev/null \
	        && $$SUDO apt-get install -y -q bubblewrap >/dev/null; }; }

# The dashboard's browser tests drive Debian's chromium (Playwright never downloads a browser).
browser-deps:
	@command -v chromium >/dev/null || { \
	    if [ "$$(id -u)" = 0 ]; then SUDO=; elif sudo -n true 2>/dev/null; then SUDO=sudo; \
	    else echo "chromium is missing: apt-get install chromium (browser tests skip without it)" >&2; exit 0; fi; \
	    $$SUDO apt-get install -y -q chromium >/dev/null 2>&1 || { $$SUDO apt-get update -q >/dev/null \
	        && $$SUDO apt-get install -y -q chromium >/dev/null; }; }

run: $(VENV)/.installed system-deps
	$(BIN)/ratchet serve

# Four workers on two cores, as test-fast: most tests wait on processes, servers and leases about
# as long as they compute (two workers took 19.5 minutes for 1822 tests, with 11 of CPU). The
# 25 slowest tests are listed at the end: where to look first when the suite nears 15 minutes.
test: $(VENV)/.installed-dev system-deps browser-deps agent-clis
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python tests/action/lint_action.py  # actionlint: action.yml, docs/actions/*.yml
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -n 4 --durations=25 $(PYTEST_ARGS)

# The inner loop, under 2 minutes on 2 cores: lint, import contracts and every test that needs
# no PostgreSQL, Redis, RabbitMQ or browser (the `services` marker, set at collection by
# tests/conftest.py), less the `slow` rest of the end-to-end matrices, whose representatives
# run here (one crash point of each kind, one test of each end-to-end area). Four workers on two
# cores: the tests wait (agent and check timeouts, leases, subprocesses) about as long as they
# compute, so two workers would leave the cores idle half the time (about 165 s against 95 s).
# Bytecode is written even where the environment says not to: each worker otherwise rewrites
# every test module's asserts again on every run (about 3 s of CPU per worker).
test-fast: $(VENV)/.installed-dev system-deps
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -n 4 -m "not services and not slow and not agents" $(PYTEST_ARGS)

# The real agent CLIs (tests/agents/clis.py pins them) are installed from npm and PyPI into
# .cache/agents/ (RATCHET_AGENTS_CACHE), once per version; a registry that does not answer skips
# its CLIs' tests, an install that fails while it answers fails under CI=true.
agent-clis: $(VENV)/.installed-dev
	$(BIN)/python tests/agents/install.py

# Every preset end to end with its real CLI, sandbox on, against the scripted model API
# (tests/fakes/modelapi/). `make test` runs these too; `make test-fast` leaves them out.
test-agents: $(VENV)/.installed-dev system-deps agent-clis
	$(BIN)/python -m pytest -m agents tests/agents $(PYTEST_ARGS)

# One preset end to end with the CLI on your PATH (and your RATCHET_SANDBOX_RO), against the
# scripted model API: what it lacks on this host shows here, not on a real issue.
# `make try-agent AGENT=claude`.
try-agent: $(VENV)/.installed-dev system-deps
	RATCHET_AGENTS_FROM_PATH=1 $(BIN)/python -m pytest -m agents -x tests/agents/test_$(AGENT).py $(PYTEST_ARGS)

# The verification corpus (tests/verification/corpus/README.md): real commits of real repositories
# planned from local mirrors (RATCHET_CORPUS_MIRRORS), scored per repository against their CI.
corpus: $(VENV)/.installed-dev
	$(BIN)/python tests/verification/corpus/report.py -v

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

$(VENV)/.installed-bench: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev,bench]'
	touch $@ $(VENV)/.installed-dev $(VENV)/.installed

bench: $(VENV)/.installed-bench
	$(BIN)/python bench/ledger.py
	$(BIN)/python bench/verify.py
	$(BIN)/python bench/throughput.py
	$(BIN)/python bench/sandbox.py
	$(BIN)/python bench/github_calls.py
	$(BIN)/python bench/webhooks.py
	$(BIN)/python bench/config.py

clean:
	rm -rf $(VENV) .pytest_cache
