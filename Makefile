# Two commands on a fresh machine:
#   make train   installs everything into .venv and runs the main job
#   make test    installs the same and runs the test suite
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# Main job. CPU defaults sized to finish within minutes on a 2-core machine while the reward
# climbs; on a GPU machine drop them (`make train TRAIN_ARGS=`) to use the task's own settings.
TRAIN_ARGS ?= num_envs=1024 train.params.config.minibatch_size=8192 max_iterations=300
PYTEST_ARGS ?=

.PHONY: install train test lint bench clean

install: $(STAMP)

$(STAMP): setup.py constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -c constraints.txt -e '.[dev]'
	touch $(STAMP)

train: install
	$(BIN)/python train.py task=Ant $(TRAIN_ARGS)

test: install
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: install
	$(BIN)/python bench/env_throughput.py
	$(BIN)/python bench/ppo_overhead.py
	$(BIN)/python bench/learning_curves.py

clean:
	rm -rf $(VENV) *.egg-info
