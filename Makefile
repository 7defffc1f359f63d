# labkit: `make reproduce` and `make test` set everything up themselves.
# On a fresh machine with Python 3.11 and gcc/g++ they create .venv, install labkit
# (pip install -e ".[lab,bundle]", pinned by requirements.lock), which builds the
# extension and every native target, and register the Jupyter kernel. pyproject.toml is
# the one list of requirements, the build tools included. Everything else goes through
# the `labkit` command (labkit --help).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
LABKIT := $(VENV)/bin/labkit
QUICK ?= 0
RESUME ?= 0
ROOM ?= 0
# Debian packages: the Python headers the extension compiles against, and the real peer
# systems and the tools (installed when run as root).
DEB_PACKAGES := g++ python3-dev python3-venv libboost-context-dev libboost-fiber-dev libasio-dev \
	liburing-dev valgrind gcc-aarch64-linux-gnu qemu-user
# The learners' install: the lab and bundles; no room (Dask distributed) unless ROOM=1,
# no test-only packages (pytest, Playwright). `make test` adds both.
EXTRAS := lab,bundle
PIP := $(PY) -m pip install --quiet -c requirements.lock
# pyproject.toml's [build-system] requires: pip builds labkit with --no-build-isolation.
BUILD_REQUIRES = $$($(PYTHON) -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"])')

DEPS_STAMP := $(VENV)/.deps-stamp
BUILD_STAMP := $(VENV)/.build-stamp
ROOM_STAMP := $(VENV)/.room-stamp
TEST_STAMP := $(VENV)/.test-stamp
# Boost's version header is an input: installing Boost later rebuilds the peers.
BUILD_INPUTS := setup.py pyproject.toml $(wildcard labkit/core/*.pyx labkit/core/*.pxd \
	labkit/csrc/*.c labkit/csrc/*.h labkit/cxx/*.cpp labkit/cxx/*.h \
	labkit/servers/*.c labkit/servers/*.cpp labkit/servers/*.h labkit/core/native_build.py \
	/usr/include/boost/version.hpp)

.PHONY: setup system-deps test reproduce lab wheelhouse clean help

help:
	@echo "make reproduce [QUICK=1]  run every notebook, write data/ figures/ and the HTML report"
	@echo "   [ONLY='04_latency_ladder ...']  only these notebooks (the report keeps the others)"
	@echo "   [RESUME=1]                      continue an interrupted run"
	@echo "   [PARAMS='repeats 5']            notebook parameters (NAME VALUE pairs)"
	@echo "make test                 run the test suite"
	@echo "make setup [ROOM=1]       make .venv, install labkit and its build (no test tools;"
	@echo "                          ROOM=1: and the room's packages, for labkit room)"
	@echo "make system-deps          install the Debian packages the peers need (root)"
	@echo "make wheelhouse           download what make setup ROOM=1 installs into wheelhouse/"
	@echo "                          (then: PIP_NO_INDEX=1 PIP_FIND_LINKS=wheelhouse make setup ROOM=1)"
	@echo "make lab                  start JupyterLab on the lab's kernel"
	@echo "everything else:          $(LABKIT) --help"

setup: $(BUILD_STAMP) $(if $(filter 1 yes true,$(ROOM)),$(ROOM_STAMP))

$(DEPS_STAMP): pyproject.toml requirements.lock
	@test -n "$(PYTHON)" || { echo "error: no python3 found: install Python 3.11" >&2; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
		|| { echo "error: $(PYTHON) is older than 3.11: install Python 3.11 (or make PYTHON=python3.11)" >&2; exit 1; }
	@$(MAKE) --no-print-directory system-deps
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PIP) $(BUILD_REQUIRES)
	touch $@

# One build path: pip builds the extension and the table of labkit/core/native_build.py.
$(BUILD_STAMP): $(DEPS_STAMP) $(BUILD_INPUTS)
	$(PIP) --no-build-isolation -e ".[$(EXTRAS)]"
	$(PY) -m ipykernel install --sys-prefix --name labkit --display-name "labkit (Python 3)" > /dev/null
	touch $@

$(ROOM_STAMP): $(BUILD_STAMP)
	$(PIP) --no-build-isolation -e ".[$(EXTRAS),room]"
	touch $@

# The tests cover the room and the registry of machines too.
$(TEST_STAMP): $(BUILD_STAMP)
	$(PIP) --no-build-isolation -e ".[$(EXTRAS),room,registry,test]"
	touch $@

# Every wheel `make setup ROOM=1` installs, for a room without internet (docs/workshop.md):
# for laptops of this machine's Linux, architecture and Python version.
wheelhouse:
	$(PYTHON) -m pip download --quiet -c requirements.lock -d wheelhouse pip $(BUILD_REQUIRES) ".[$(EXTRAS),room]"

# Root with apt-get: install what is missing. Otherwise: say what to install; the lab
# still builds and runs, and every missing peer shows as a row that says why.
system-deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get > /dev/null; then \
		echo "installing Debian packages:$$missing"; \
		apt-get update -q > /dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing > /dev/null \
			|| echo "warning: apt-get could not install:$$missing (the peers that need them will be reported as missing)"; \
	else \
		echo "note: these Debian packages are missing:$$missing"; \
		echo "      as root run: apt-get install$$missing"; \
		echo "      (labkit builds without the peers' packages, which are then reported as missing;"; \
		echo "      not without python3-dev, unless this Python has its own headers)"; \
	fi

test: $(TEST_STAMP)
	$(PY) -m pytest -q

PARAMS ?=
reproduce: setup
	@set -- $(PARAMS); params=""; while [ $$# -ge 2 ]; do params="$$params -p $$1 $$2"; shift 2; done; \
	set -x; $(LABKIT) reproduce $(if $(filter 1 yes true,$(QUICK)),--quick,) \
		$(if $(filter 1 yes true,$(RESUME)),--resume,) $(if $(ONLY),--only $(ONLY),) $$params

# JupyterLab on .venv with the `labkit` kernel, opening on notebooks/start_here.ipynb (the
# settings in jupyter/ are added to the user's own). LAB_PORT: the port (empty: 8888, or
# the next free one). LAB_ARGS: more options, e.g. LAB_ARGS=--no-browser.
LAB_PORT ?=
LAB_ARGS ?=
lab: setup
	$(LABKIT) lab $(if $(LAB_PORT),--port $(LAB_PORT)) $(LAB_ARGS)

clean:
	rm -rf build $(VENV) labkit/core/_core.c labkit/core/*.so labkit/bin reports
