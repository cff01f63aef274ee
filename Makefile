# Two commands on a fresh machine:
#   make train   installs everything into .venv and runs the main job
#   make test    installs the same and runs the test suite
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# Main job: Ant split across 3 GMIs. CPU defaults sized to finish within minutes on a 2-core
# machine while the reward climbs (numEnvs is per GMI: 3 x 512 envs); on a GPU machine drop them
# (`make train TRAIN_ARGS=`) to use the task's own settings. With fewer cores than GMIs the GMIs
# share the cores (gmi.cores=auto); `make train GMI_ARGS=gmi.per_gpu=auto` lets the planner
# choose GMIs per device by measuring (docs/planner.md).
GMI_ARGS ?= gmi.per_gpu=3
TRAIN_ARGS ?= num_envs=512 train.params.config.minibatch_size=4096 max_iterations=300
PYTEST_ARGS ?=
# the suite runs in one process; TEST_WORKERS=N runs it on N workers, the tests that need the
# machine to themselves alone at the end (docs/testing.md: no faster on 2 cores, measured)
TEST_WORKERS ?= 0

.PHONY: install train test lint bench clean

install: $(STAMP)

$(STAMP): setup.py constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -c constraints.txt -e '.[dev]'
	touch $(STAMP)

train: install
	$(BIN)/python train.py task=Ant $(GMI_ARGS) $(TRAIN_ARGS)

test: install
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: install
	$(BIN)/python bench/env_throughput.py
	$(BIN)/python bench/ppo_overhead.py
	$(BIN)/python bench/learning_curves.py
	$(BIN)/python bench/task_learning.py
	$(BIN)/python bench/gmi_scaling.py
	$(BIN)/python bench/planner_vs_grid.py
	$(BIN)/python bench/reduction_latency.py
	$(BIN)/python bench/learning_parity.py
	$(BIN)/python bench/intra_gpu_reduction.py
	$(BIN)/python bench/channel_transfer.py
	$(BIN)/python bench/async_channels.py
	$(BIN)/python bench/async_lag.py
	$(BIN)/python bench/async_vs_sync.py
	$(BIN)/python bench/serve_scaling.py
	$(BIN)/python bench/randomization_overhead.py
	$(BIN)/python bench/randomization_overhead.py --backend mjx --envs 256 --steps 20 --rounds 4
	$(BIN)/python bench/randomized_learning.py
	$(BIN)/python bench/sweep_packing.py
	$(BIN)/python bench/report.py

clean:
	rm -rf $(VENV) *.egg-info
