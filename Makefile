# labkit: `make reproduce` and `make test` set everything up themselves.
# On a fresh machine with Python 3.11 and gcc/g++ they create .venv, install
# requirements.txt, build the extension and register the Jupyter kernel.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
QUICK ?= 0
# Debian packages for the real peer systems and the tools (installed when run as root).
DEB_PACKAGES := g++ python3-venv libboost-context-dev libboost-fiber-dev libasio-dev liburing-dev \
	valgrind gcc-aarch64-linux-gnu qemu-user

DEPS_STAMP := $(VENV)/.deps-stamp
BUILD_STAMP := $(VENV)/.build-stamp
# Boost's version header is an input: installing Boost later rebuilds the peers.
BUILD_INPUTS := setup.py pyproject.toml $(wildcard labkit/*.pyx labkit/*.pxd \
	labkit/csrc/*.c labkit/csrc/*.h labkit/cxx/*.cpp labkit/cxx/*.h \
	labkit/servers/*.c labkit/servers/*.cpp labkit/servers/*.h labkit/servers/build.py \
	/usr/include/boost/version.hpp)

.PHONY: setup system-deps test reproduce lab clean help

help:
	@echo "make reproduce [QUICK=1]  run every notebook, write data/ figures/ and the HTML report"
	@echo "   [ONLY='04_latency_ladder ...']  only these notebooks (the report keeps the others)"
	@echo "make test                 run the test suite"
	@echo "make setup                make .venv, install requirements, build the extension"
	@echo "make system-deps          install the Debian packages the peers need (root)"
	@echo "make lab                  start JupyterLab on the lab's kernel"

setup: $(BUILD_STAMP)

$(DEPS_STAMP): requirements.txt
	@test -n "$(PYTHON)" || { echo "error: no python3 found: install Python 3.11" >&2; exit 1; }
	@$(MAKE) --no-print-directory system-deps
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m ipykernel install --sys-prefix --name labkit --display-name "labkit (Python 3)" > /dev/null
	touch $@

$(BUILD_STAMP): $(DEPS_STAMP) $(BUILD_INPUTS)
	$(PY) setup.py --quiet build_ext --inplace
	$(PY) -m pip install --quiet --no-build-isolation --no-deps -e .
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

test: setup
	$(PY) -m pytest -q

reproduce: setup
	$(PY) -m labkit.reproduce $(if $(filter 1 yes true,$(QUICK)),--quick,) $(if $(ONLY),--only $(ONLY),)

# JupyterLab on .venv with the `labkit` kernel, opening on notebooks/start_here.ipynb. The
# settings in jupyter/ are added to the user's own (a user's settings still win).
# LAB_PORT: the port (empty: 8888, or the next free one). LAB_ARGS: more options, e.g.
# LAB_ARGS=--no-browser on a machine without a desktop. As root (a VM, a container) the
# server must be told that it may run as root.
LAB_PORT ?=
LAB_ARGS ?=
lab: setup
	JUPYTER_CONFIG_PATH="$(CURDIR)/jupyter$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH}" \
		$(VENV)/bin/jupyter lab --ServerApp.root_dir="$(CURDIR)/notebooks" \
		$(if $(LAB_PORT),--port=$(LAB_PORT)) $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

clean:
	rm -rf build $(VENV) labkit/_core.c labkit/*.so reports
