# hear — build, test, benchmark. `make help` lists the targets.
SWIFT ?= swift
BUILD := .build/release
PLUGIN := $(BUILD)/libhear.so
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Debian packages the tests and the benchmark use (pipewire, wireplumber, dbus-daemon: the control
# test inside a private PipeWire session, Tests/HearPluginTests/ControlPipeWireTests.swift).
DEB_TEST := ladspa-sdk pipewire wireplumber dbus-daemon
DEB_BENCH := swh-plugins lsp-plugins-ladspa

.PHONY: all build test bench deps help clean

all: build

help:
	@echo "make deps    install the Debian packages the tests and benchmarks need (apt, sudo when not root)"
	@echo "make         build $(PLUGIN) (release, Swift runtime linked in, stripped)"
	@echo "make test    build, then run every test in release mode"
	@echo "make bench   ns/sample per stage and chain next to swh sc4m/mbeq and lsp compressor_mono"
	@echo "make clean   remove .build"

build:
	$(SWIFT) build -c release
	@if ldd $(PLUGIN) | grep -q libswift; then \
	  echo "error: $(PLUGIN) links the Swift runtime dynamically; PipeWire could not load it without a toolchain"; exit 1; fi

deps:
	$(SUDO) apt-get update
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y --no-install-recommends $(DEB_TEST) $(DEB_BENCH)

test: build
	HEAR_PLUGIN=$(CURDIR)/$(PLUGIN) $(SWIFT) test -c release

bench: build
	HEAR_PLUGIN=$(CURDIR)/$(PLUGIN) Tests/Benchmarks/bench.sh

clean:
	rm -rf .build
