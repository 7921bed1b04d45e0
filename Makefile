# Thin wrapper: `make demo` and `make test` install what is missing, configure once, build,
# then run the default workload or the test suite. Everything else is meson.
BUILD ?= build
PKGS := libglib2.0-dev libjson-glib-dev libcairo2-dev libpango1.0-dev libcriterion-dev \
        libsqlite3-dev meson ninja-build pkg-config fonts-dejavu-core
LHSIM := $(BUILD)/cli/lhsim

.PHONY: all deps setup build demo test bench clean

all: build

# Installs the Debian packages pkg-config or the shell cannot find (needs root or sudo).
deps:
	@missing=""; \
	for t in meson ninja pkg-config; do command -v $$t >/dev/null 2>&1 || missing=1; done; \
	if [ -z "$$missing" ]; then \
	  pkg-config --exists glib-2.0 gmodule-2.0 json-glib-1.0 cairo pangocairo sqlite3 criterion || missing=1; \
	  [ -d /usr/share/fonts/truetype/dejavu ] || missing=1; \
	fi; \
	if [ -n "$$missing" ]; then \
	  echo "lhsim: installing build dependencies: $(PKGS)"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends \
	    build-essential $(PKGS); \
	fi

setup: deps
	@[ -f $(BUILD)/build.ninja ] || meson setup $(BUILD)

build: setup
	ninja -C $(BUILD)

# The main job on the built-in default workload (moe-offload): every scheduler side by side,
# then XLA's async-compute knob from 1 to 4, with pictures under $(BUILD)/demo/.
demo: build
	@mkdir -p $(BUILD)/demo
	$(LHSIM) compare --sched serial,lhs,iree,iree-cost,heft,cpath,search:evals=2000 -o $(BUILD)/demo/compare.png
	$(LHSIM) sweep --sched lhs -p async-compute-limit=1:4 -o $(BUILD)/demo/sweep.png
	@echo "pictures: $(BUILD)/demo/compare.png $(BUILD)/demo/sweep.png"

test: build
	meson test -C $(BUILD) --print-errorlogs

bench: build
	bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD)
