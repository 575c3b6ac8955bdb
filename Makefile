# Two commands do all set-up on a fresh machine with Python 3.11 and make:
#   make run    create .venv, install, migrate the embedded SQLite database, start the service
#   make test   install and run the whole suite (lint and type checks included)
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
EVAL_DIR ?= ../shared/eval

.PHONY: install run test lint eval bench clean

$(STAMP): pyproject.toml setup.py native/native.c native/xxhash.h
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: install
	$(BIN)/contam db upgrade
	$(BIN)/contam demo
	$(BIN)/contam serve

lint: install
	$(BIN)/ruff check app indexer contam tests bench migrations
	$(BIN)/ruff format --check app indexer contam tests bench migrations
	$(BIN)/mypy

test: lint
	$(BIN)/python -m pytest

eval: install
	$(BIN)/python bench/eval.py $(EVAL_DIR)

bench: install
	$(BIN)/python bench/index_speed.py

clean:
	rm -rf $(VENV) data .pytest_cache .mypy_cache .ruff_cache
