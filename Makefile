# labkit: `make reproduce` and `make test` set everything up themselves.
# On a fresh machine with Python 3.11 and gcc/g++ they create .venv, install labkit
# (pip install -e ".[lab,bundle]", pinned by requirements.lock), which builds the
# extension and every native target, and register the Jupyter kernel. Everything else
# goes through the `labkit` command (labkit --help).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
LABKIT := $(VENV)/bin/labkit
QUICK ?= 0
RESUME ?= 0
# Debian packages for the real peer systems and the tools (installed when run as root).
DEB_PACKAGES := g++ python3-venv libboost-context-dev libboost-fiber-dev libasio-dev liburing-dev \
	valgrind gcc-aarch64-linux-gnu qemu-user
# The learners' install: the lab and bundles, no test-only packages (pytest, Playwright).
EXTRAS := lab,bundle
PIP := $(PY) -m pip install --quiet -c requirements.lock

DEPS_STAMP := $(VENV)/.deps-stamp
BUILD_STAMP := $(VENV)/.build-stamp
TEST_STAMP := $(VENV)/.test-stamp
# Boost's version header is an input: installing Boost later rebuilds the peers.
BUILD_INPUTS := setup.py pyproject.toml $(wildcard labkit/core/*.pyx labkit/core/*.pxd \
	labkit/csrc/*.c labkit/csrc/*.h labkit/cxx/*.cpp labkit/cxx/*.h \
	labkit/servers/*.c labkit/servers/*.cpp labkit/servers/*.h labkit/core/native_build.py \
	/usr/include/boost/version.hpp)

.PHONY: setup system-deps test reproduce lab clean help

help:
	@echo "make reproduce [QUICK=1]  run every notebook, write data/ figures/ and the HTML report"
	@echo "   [ONLY='04_latency_ladder ...']  only these notebooks (the report keeps the others)"
	@echo "   [RESUME=1]                      continue an interrupted run"
	@echo "   [PARAMS='repeats 5']            notebook parameters (NAME VALUE pairs)"
	@echo "make test                 run the test suite"
	@echo "make setup                make .venv, install labkit and its build (no test tools)"
	@echo "make system-deps          install the Debian packages the peers need (root)"
	@echo "make lab                  start JupyterLab on the lab's kernel"
	@echo "everything else:          $(LABKIT) --help"

setup: $(BUILD_STAMP)

$(DEPS_STAMP): requirements.txt requirements.lock
	@test -n "$(PYTHON)" || { echo "error: no python3 found: install Python 3.11" >&2; exit 1; }
	@$(MAKE) --no-print-directory system-deps
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PIP) -r requirements.txt
	touch $@

# One build path: pip builds the extension and the table of labkit/core/native_build.py.
$(BUILD_STAMP): $(DEPS_STAMP) $(BUILD_INPUTS)
	$(PIP) --no-build-isolation -e ".[$(EXTRAS)]"
	$(PY) -m ipykernel install --sys-prefix --name labkit --display-name "labkit (Python 3)" > /dev/null
	touch $@

$(TEST_STAMP): $(BUILD_STAMP)
	$(PIP) --no-build-isolation -e ".[$(EXTRAS),test]"
	touch $@

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
		echo "      (labkit builds without them; the peers that need them are reported as missing)"; \
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
