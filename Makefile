# The two commands of the README: `make run` and `make test`. Both need only Python 3.11+.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PORT ?= 8501
HOST ?= 0.0.0.0
# Python may write its bytecode caches (ignored by git): without them every test worker and every
# `zhixing` process a test starts compiles the project, and pytest rewrites each test file, again.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install constraints run serve serve-team test test-fast real-model test-real test-real-task lint format bench bench-llm clean

$(BIN)/python:
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Zhixing needs Python 3.11 or newer"'
	$(PYTHON) -m venv $(VENV)

# pip compiles every installed module in one process (half its time); compileall does the same
# on every core (70 s -> 36 + 15 s here). A file it cannot compile (a package's Python 2
# fixtures) is left to Python, which never imports it.
# constraints.txt pins the versions the tests passed with, transitive ones included (pyproject.toml
# keeps the ranges): a fresh clone installs what was tested, not whatever is newest that day.
$(STAMP): pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-compile -c constraints.txt -e '.[dev]'
	# rapidocr-onnxruntime (OCR) asks for opencv-python, whose cv2 needs libGL.so.1, which a bare
	# machine lacks; opencv-python-headless is the same cv2 without it.
	$(BIN)/python -m pip uninstall --quiet -y opencv-python
	$(BIN)/python -m pip install --quiet --no-compile --no-deps --force-reinstall \
		-c constraints.txt opencv-python-headless
	$(BIN)/python -m compileall -j 0 -qq $(VENV)/lib || true
	touch $(STAMP)

install: $(STAMP)

run: install
	$(BIN)/streamlit run app/main.py --server.port $(PORT)

# For the intranet: refuses to start until a user exists (`zhixing user add NAME --role admin`).
serve: install
	$(BIN)/python -m zhixing.cli.main serve --host $(HOST) --port $(PORT)

# A team on one machine (cli/team.py): a catalog on PostgreSQL (Debian's binaries, data in
# $(TEAM_DATA)/postgres) and a Milvus server (Milvus Lite's gRPC server on $(MILVUS_PORT)) beside
# the app, each unless ZHIXING_CATALOG_URI / ZHIXING_MILVUS_URI already name one. It prints the
# line a second instance (PORT=8502 make serve) or a `zhixing` command exports to join; Ctrl-C
# stops them all.
MILVUS_PORT ?= 19530
TEAM_DATA ?= $(or $(ZHIXING_HOME),data)/team
serve-team: install
	$(BIN)/python -m zhixing.cli.team --data $(TEAM_DATA) --host $(HOST) --port $(PORT) \
		--milvus-port $(MILVUS_PORT)

# pytest workers (pytest-xdist), one test file per worker at a time: a browser file's tests walk
# one served app in order. One worker more than the cores (at most 4): browser and process tests
# leave their core idle while they wait, and the third worker fills it (2 cores: 283 s -> 260 s).
# PYTEST_WORKERS=0 runs in this process (for pdb).
PYTEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(min((os.cpu_count() or 1) + 1, 4))')
XDIST = -n $(PYTEST_WORKERS) --dist loadfile

# mypy checks the types beside the tests, which leave part of the machine idle while they wait
# on browsers and processes; its report follows theirs, and either failing fails the target.
test: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@$(BIN)/mypy > $(VENV)/mypy.out 2>&1 & mypy=$$!; \
	echo "$(BIN)/mypy (beside the tests; its report follows them)"; \
	echo "$(BIN)/pytest $(XDIST) -m 'not real_llm'"; $(BIN)/pytest $(XDIST) -m "not real_llm"; tests=$$?; \
	wait $$mypy; typed=$$?; echo "$(BIN)/mypy:"; cat $(VENV)/mypy.out; \
	[ $$tests -eq 0 ] && [ $$typed -eq 0 ]

# The unit and page tests only: no browser, no `zhixing` processes, nothing slow (< 90 s).
test-fast: install
	$(BIN)/ruff check .
	$(BIN)/pytest $(XDIST) -m "not browser and not process and not slow and not real_llm"

# The real model (issue 34): llama.cpp's llama-server built from source and
# Qwen2.5-Coder-0.5B-Instruct fetched and hash-checked, cached once per machine under
# $${XDG_CACHE_HOME:-~/.cache}/zhixing/llama (the first build takes 10-20 minutes on two cores).
real-model: install
	$(BIN)/python tests/real_model_setup.py

# The LLM path end to end on that model (tests/test_real_llm.py), one test at a time: the
# server has one slot on one thread. Skipped without the model, except under CI=true.
# The task run on the showcase project is its own target (about 25 minutes and 70 model calls
# on two cores); CI runs both.
REAL_TASK = tests/test_real_llm.py::test_the_task_run_reports_all_seven_planted_issues_and_none_on_a_look_alike
test-real: install
	$(BIN)/pytest -p no:xdist -m real_llm -s tests/test_real_llm.py --deselect $(REAL_TASK)

test-real-task: install
	$(BIN)/pytest -p no:xdist -m real_llm -s $(REAL_TASK)

# After a change of versions has passed `make test`: pin what this environment holds of what
# zhixing[dev] needs (tests/freeze_constraints.py), for `make install` and the container.
constraints: install
	$(BIN)/python tests/freeze_constraints.py

lint: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: install
	$(BIN)/python benchmarks/bench_build.py

# The real model beside offline on the shared eval sets (needs `make real-model`).
bench-llm: real-model
	$(BIN)/python benchmarks/bench_llm.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
