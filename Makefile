# Parley — one-command setup. `make run` starts a demo call; `make test` runs every test.
# Both install missing Debian packages first (only when absent, with sudo only when not root).

SWIFT       ?= swift
# One release build with testing enabled serves the tests, the benchmarks and `make install`: built once, fast codec
# loops.
BUILD_FLAGS := -c release -Xswiftc -enable-testing
BIN         := .build/release/parley
BENCH_BIN   := .build/release/parley-bench
# `make run` is a newcomer's first minutes, so it builds what is quickest to a call: the debug configuration, whose
# dependencies compile unoptimized in about half the release build's time, while Package.swift optimizes the two
# modules that touch every pixel in it (`optimizedInDebug`); no debug information. Only the `parley` product, into
# .build/debug: a later `make test` builds release beside it.
DEMO_FLAGS  := -c debug -debug-info-format none
DEMO_BIN    := .build/debug/parley
DEMO_LOG    := .build/build-parley.log
# What the first build takes on the 2-core development machine, in minutes (`make bench-first-run` measures it).
FIRST_BUILD_MINUTES := 5

# Needed to build and test (GStreamer is the independent RTP stack the encryption proof decodes a capture with;
# PostgreSQL 15 is the server the PostgreSQL store's tests start for themselves, as an unprivileged user; libwebm is
# the muxer recordings are written with, and FFmpeg the independent player the recording tests read them back with;
# iproute2's ip and tc make the network lab's namespaces and shape its links, nftables loses its packets;
# libvterm is the terminal emulator a shared terminal's screen is read from; OpenSSL and libsrtp2 are a browser
# guest's DTLS-SRTP, and a headless Chromium is the browser the WebRTC tests join with).
APT_PACKAGES := pkg-config binutils libopus-dev libvpx-dev libncurses-dev ncurses-base libvterm-dev tmux less \
                libssl-dev libsrtp2-dev libsqlite3-dev postgresql iproute2 nftables \
                portaudio19-dev libpulse-dev libasound2-dev libspeexdsp-dev libturbojpeg0-dev \
                pulseaudio pulseaudio-utils libasound2-plugins \
                gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad \
                libwebm-dev ffmpeg \
                libsixel-bin netpbm xterm kitty xvfb x11-apps xauth xdotool python3 chromium
# Reference tools the benchmarks compare against (the call benchmark paints baresip's x11 windows and a Chromium
# tab into Xvfb).
# The network benchmark runs Chromium calls in the lab through coturn.
BENCH_PACKAGES := vpx-tools opus-tools chafa baresip-core baresip-ffmpeg baresip-x11 xvfb chromium tshark valgrind \
                  coturn htop

PREFIX      ?= /usr/local

.PHONY: deps bench-deps build build-parley build-demo build-bench run test test-groups flakes bench bench-call bench-broadcast bench-mouth-to-ear bench-network bench-share bench-browser bench-first-run \
        install clean fuzz \
        fuzz-seeds format format-check

define apt_install
	@missing=""; \
	for p in $(1); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "Installing missing packages:$$missing"; \
		if [ "$$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi; \
		$$SUDO apt-get update -qq && \
		$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
endef

deps:
	$(call apt_install,$(APT_PACKAGES))

bench-deps: deps
	$(call apt_install,$(BENCH_PACKAGES))

build: deps
	$(SWIFT) build $(BUILD_FLAGS) --build-tests

# The `parley` product alone, release (what `make install` installs and the benchmarks start).
build-parley: deps
	$(SWIFT) build $(BUILD_FLAGS) --product parley

# `make run`'s build says in one line what it is doing and how far it is; the compiler's lines go to $(DEMO_LOG) and
# are shown (their last 40) only when the build fails.
build-demo: deps
	@mkdir -p .build
	@if [ -x $(DEMO_BIN) ]; then echo "Building Parley (only what changed since the last build)"; \
	else echo "Building Parley: the first build takes about $(FIRST_BUILD_MINUTES) minutes on 2 cores (this machine has \
	$$(nproc))."; echo "The compiler's lines go to $(DEMO_LOG)."; fi
	@started=$$(date +%s); \
	{ $(SWIFT) build $(DEMO_FLAGS) --product parley 2>&1; echo $$? > $(DEMO_LOG).status; } | tee $(DEMO_LOG) | \
		awk 'BEGIN { srand(); start = srand() } \
			/^(Fetching|Cloning) / { name = $$2; sub(/.*\//, "", name); sub(/\.git$$/, "", name); \
				printf "\r\033[K  getting the packages: %s", name; fflush() } \
			/^\[[0-9]+\/[0-9]+\]/ { split(substr($$1, 2), n, "/"); p = int(100 * n[1] / n[2]); \
				if (p > shown) { srand(); now = srand(); printf "\r\033[K  compiling: %d %% (%d:%02d)", p, \
					(now - start) / 60, (now - start) % 60; fflush(); shown = p } } \
			END { printf "\r\033[K" }'; \
	status=$$(cat $(DEMO_LOG).status); \
	if [ "$$status" != 0 ]; then tail -n 40 $(DEMO_LOG); \
		echo "The build failed (swift build exited with $$status); all its lines are in $(DEMO_LOG)"; exit 1; fi; \
	echo "Built in $$(( $$(date +%s) - started )) s: $(DEMO_BIN)"

# The benchmarks' own program, the `parley` it starts and the probe the render benchmark draws through.
build-bench: deps
	$(SWIFT) build $(BUILD_FLAGS) --product parley
	$(SWIFT) build $(BUILD_FLAGS) --product parley-bench
	$(SWIFT) build $(BUILD_FLAGS) --product parley-tui-probe

run: build-demo
	$(DEMO_BIN) demo

# Every suite runs in one process, `swift test` with no filter, and passes: suites that must not share the machine
# carry a lane (`.lane(.processes)`: Sources/ParleyTestLanes/TestLane.swift says which lane is for what and why), and
# the lanes take turns. `make test` goes further and runs each lane as a `swift test` process of its own, in the
# order below, so a lane also never shares the machine with the quick suites that have none (those run in `main`,
# with the `timing` lane). Tests/Tools/lanes.py reads a lane's suites from the sources: a suite's lane is written once.
lanes = $(shell python3 Tests/Tools/lanes.py $(1))
TEST        := PARLEY_BIN=$(abspath $(BIN)) $(SWIFT) test $(BUILD_FLAGS) --skip-build
# The main group runs at most 8 tests at once. Unbounded, Swift Testing starts all 840 together, the synchronous ones
# run back to back on the async runtime's two threads, and an async test's next step waits behind them: beside a
# build of another clone, a task that slept 10 ms in the first seconds of the group woke 3.7, 8.4 and 9.8 s later
# (three runs), and relay tests whose clients had to log in within 3 to 10 s failed. At 8: at most 0.9 s, and the
# group takes as long as before (41 s with that 40 s probe test; 44 s unbounded).
# The groups in the order `make test` runs them, each one `swift test` process: its name and its arguments.
TEST_GROUPS      := blocking main stores processes lab recording database simulations lossy real-time browsers
OWN_LANES        := $(filter-out main,$(TEST_GROUPS))
GROUP_main        = --experimental-maximum-parallelization-width 8 --skip '$(call lanes,$(OWN_LANES))'
$(foreach lane,$(OWN_LANES),$(eval GROUP_$(lane) = --filter '$$(call lanes,$(lane))'))
define newline


endef
# The format check first: it takes seconds, the build does not.
test: format-check build
	$(foreach group,$(TEST_GROUPS),$(TEST) $(GROUP_$(group))$(newline))

# One line a group, NAME ARGUMENTS: what the flake finder runs.
test-groups:
	@$(foreach group,$(TEST_GROUPS),echo "$(group) $(GROUP_$(group))";)

# The flake finder: `make test`'s groups RUNS times after one build, each test's failures counted over the runs
# with its first failure line (Tests/Tools/flakes.py; logs in .build/flakes). BESIDE runs a command over and over
# beside every run (say BESIDE='make -C ../other clean build' for
# a build of another clone from scratch, again and again); CPU=1 keeps one core
# busy instead.
RUNS   ?= 10
BESIDE ?=
CPU    ?=
flakes: build
	python3 Tests/Tools/flakes.py --runs $(RUNS) $(if $(BESIDE),--beside "$(BESIDE)") $(if $(CPU),--cpu)

bench: bench-deps build-bench
	$(BENCH_BIN) all --parley $(BIN) --markdown docs/benchmarks.md

bench-call: bench-deps build-bench
	$(BENCH_BIN) call --parley $(BIN) --markdown docs/benchmarks.md

bench-browser: bench-deps build-bench
	$(BENCH_BIN) browser --parley $(BIN) --markdown docs/benchmarks.md

bench-broadcast: build-bench
	$(BENCH_BIN) broadcast --parley $(BIN) --markdown docs/benchmarks.md

# Every named network scenario as a call in the network lab (root: namespaces; iproute2 and nftables are in
# APT_PACKAGES), Parley's and then Chromium's (bench tools), ~9 min. PARLEY_NETWORK_SCENARIOS=a,b runs those alone.
bench-network: bench-deps build-bench
	$(BENCH_BIN) network --parley $(BIN) --markdown docs/benchmarks.md

# A shared terminal: keystroke to the viewer's screen, CPU, bytes against VP8 of the same screens (~3 min).
bench-share: bench-deps build-bench
	$(BENCH_BIN) share --parley $(BIN) --markdown docs/benchmarks.md

# The first run as a newcomer meets it: this commit cloned into an empty folder, `make run` in a 100x30 tmux pane,
# seconds to the first video cell; once with an empty SwiftPM package cache, then three times with the cache that
# filled (PARLEY_FIRST_RUN_COLD/_WARM change the counts), ~25 min. Not part of `bench` (`all`).
bench-first-run: build-bench
	$(BENCH_BIN) first-run --parley $(BIN) --markdown docs/benchmarks.md

# A click a second for 60 s through Parley, baresip, a Chromium tab and PulseAudio's own loop on one private sound
# server (pulseaudio is in APT_PACKAGES; baresip and Chromium are bench tools).
bench-mouth-to-ear: bench-deps build-bench
	$(BENCH_BIN) mouth-to-ear --parley $(BIN) --markdown docs/benchmarks.md

# One formatter configuration (.swift-format: 4 spaces, 120 columns), applied to all Swift code with the toolchain's
# swift-format. `make format` rewrites the tree; `make format-check` (part of `make test`) formats a copy and fails,
# listing the files, when the tree is not formatted.
FORMAT_PATHS := Sources Tests Package.swift
format:
	$(SWIFT) format format --in-place --recursive --parallel $(FORMAT_PATHS)

format-check:
	@rm -rf .build-format && mkdir -p .build-format && cp -R $(FORMAT_PATHS) .swift-format .build-format/
	@cd .build-format && $(SWIFT) format format --in-place --recursive --parallel $(FORMAT_PATHS)
	@unformatted=$$(for p in $(FORMAT_PATHS); do diff -rq $$p .build-format/$$p; done); \
	if [ -n "$$unformatted" ]; then echo "$$unformatted"; echo "Not formatted: run make format"; exit 1; fi
	@rm -rf .build-format
	@echo "Formatted: every Swift file matches .swift-format"

# The binary in $(PREFIX)/bin, what it ships (key map, theme, sample media) in $(PREFIX)/share/parley.
# libFuzzer on the parsers: one instrumented binary (address sanitizer) from the parsers' sources, each target run
# FUZZ_SECONDS with its seed corpus, or exactly FUZZ_RUNS executions when that is set (FUZZ_RUNS=10000000 is the
# figure in docs/benchmarks.md); the working corpus and any crash stay in .build-fuzz. A crash fails the run:
# fix it and copy the input to Tests/Fuzz/Crashes/TARGET/, which `make test` replays from then on.
# The browser parsers (ParleyWebRTC's SDP/ and ICE/) come without STUNIntegrity.swift, which needs swift-crypto:
# Tests/Fuzz/STUNIntegrityStandIn.swift takes its place (not cryptographic); DTLS/ needs OpenSSL and stays out.
FUZZ_SECONDS ?= 60
FUZZ_RUNS    ?=
FUZZ_BUDGET  := $(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS),-max_total_time=$(FUZZ_SECONDS))
FUZZ_TARGETS := rtp rtcp vp8 opus signaling bind jitter y4m wav feedback share marks sdp stun
FUZZ_SOURCES := $(shell find Sources/ParleyWire Sources/ParleyBytes -name "*.swift" | sort) \
                $(addprefix Sources/ParleyMedia/,WAV.swift Y4M.swift AudioFrame.swift VideoFrame.swift MediaFile.swift MediaFileError.swift MediaSource.swift) \
                $(shell find Sources/ParleyWebRTC/SDP Sources/ParleyWebRTC/ICE -name "*.swift" ! -name STUNIntegrity.swift | sort) \
                Tests/Fuzz/STUNIntegrityStandIn.swift
FUZZ_SWIFTC  := swiftc -swift-version 6 -parse-as-library
fuzz: deps
	mkdir -p .build-fuzz
	$(FUZZ_SWIFTC) -sanitize=fuzzer,address -O -module-name ParleyFuzz $(FUZZ_SOURCES) \
		Sources/ParleyFuzzTargets/FuzzTargets.swift Tests/Fuzz/FuzzEntry.swift -o .build-fuzz/parley-fuzz 2>&1 \
		| grep -v "Cannot export local symbol" || true
	@printf '| Target | Executions | Executions/s | Seconds |\n|---|---|---|---|\n' > .build-fuzz/table.md
	@for t in $(FUZZ_TARGETS); do \
		mkdir -p .build-fuzz/corpus/$$t; \
		started=$$(date +%s); \
		PARLEY_FUZZ_TARGET=$$t .build-fuzz/parley-fuzz $(FUZZ_BUDGET) -rss_limit_mb=2048 -timeout=10 \
			-print_final_stats=1 -artifact_prefix=.build-fuzz/crash-$$t- .build-fuzz/corpus/$$t Tests/Fuzz/Corpus/$$t \
			> .build-fuzz/$$t.log 2>&1 || { tail -40 .build-fuzz/$$t.log; echo "fuzz target $$t failed: see .build-fuzz/$$t.log"; exit 1; }; \
		runs=$$(sed -n 's/^stat::number_of_executed_units: *//p' .build-fuzz/$$t.log); \
		rate=$$(sed -n 's/^stat::average_exec_per_sec: *//p' .build-fuzz/$$t.log); \
		echo "| $$t | $$runs | $$rate | $$(( $$(date +%s) - started )) |" | tee -a .build-fuzz/table.md; \
	done
	@cat .build-fuzz/table.md

# Rewrites Tests/Fuzz/Corpus from Parley's own serializers (Tests/Fuzz/Seeds.swift).
fuzz-seeds:
	mkdir -p .build-fuzz
	$(FUZZ_SWIFTC) -module-name ParleySeeds $(FUZZ_SOURCES) Tests/Fuzz/Seeds.swift -o .build-fuzz/seeds
	.build-fuzz/seeds Tests/Fuzz/Corpus

install: build-parley
	install -D -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/parley
	mkdir -p $(DESTDIR)$(PREFIX)/share/parley
	cp -R Resources/. $(DESTDIR)$(PREFIX)/share/parley/

clean:
	rm -rf .build
