# crashtui — two commands matter: `make demo` and `make test`. Both install what they need.
SHELL := /bin/bash
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
export PATH := $(PATH):/usr/local/go/bin
# go install puts dlv (the Stacks tab's debugger for Go programs) here.
export PATH := $(PATH):$(shell $(GO) env GOPATH 2>/dev/null)/bin
BUILD := build
BIN := $(BUILD)/crashtui
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
DEMO_SRC := $(wildcard demo/c/*.c)
DEMO_BIN := $(patsubst demo/c/%.c,$(BUILD)/demo/%,$(DEMO_SRC))
# Debian packages the tests and demo programs need (command:package): gcc for the C demo
# programs, gdb to read the cores crashtui writes, Open MPI for the real-MPI matrix test.
APT_NEEDS := gcc:gcc gdb:gdb mpirun:openmpi-bin mpicc:libopenmpi-dev

.PHONY: all build install demo test test-go test-slurm test-ppc64le test-arm64 bench soak cross deps apt-deps go-deps clean vet fmt

all: build

apt-deps:
	@missing=""; for pair in $(APT_NEEDS); do cmd=$${pair%%:*}; pkg=$${pair##*:}; \
	  command -v $$cmd >/dev/null 2>&1 || missing="$$missing $$pkg"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "need root to apt-get install$$missing" >&2; exit 1; fi; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing >/dev/null 2>&1 || \
	  { DEBIAN_FRONTEND=noninteractive apt-get update >/dev/null && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; }; \
	fi

go-deps:
	@$(GO) mod download
	@command -v dlv >/dev/null 2>&1 || { echo "installing: dlv"; $(GO) install github.com/go-delve/delve/cmd/dlv@v1.27.2; }

deps: apt-deps go-deps

$(BUILD)/demo/%: demo/c/%.c | apt-deps
	@mkdir -p $(BUILD)/demo
	@gcc -g -O1 -pthread -o $@ $< -ldl

build: go-deps $(DEMO_BIN)
	@$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/crashtui
	@echo "built $(BIN)"

# crashtui on your PATH: PREFIX/bin/crashtui (PREFIX=/usr/local by default; DESTDIR for
# staged installs). `go install ./cmd/crashtui` puts it in $(go env GOPATH)/bin instead.
PREFIX ?= /usr/local
install: build
	install -d "$(DESTDIR)$(PREFIX)/bin"
	install -m 0755 $(BIN) "$(DESTDIR)$(PREFIX)/bin/crashtui"

# The built-in demo job in the TUI (as root it shows everything; otherwise it says what it cannot).
demo: build
	$(BIN) demo

# All tests: unit and real-process tests with the race detector, a one-node Slurm cluster, the
# cross builds, and the ppc64le and arm64 stages on real kernels under QEMU (installing
# qemu-system-ppc and qemu-system-arm and fetching Debian's kernels when absent).
test: deps build test-go test-slurm cross test-ppc64le test-arm64

# The output is one line per package and per stage, with its time; the full logs go to
# $(LOGS), and what failed is printed in full.
LOGS := $(BUILD)/test-logs

test-go:
	@mkdir -p $(LOGS)
	@echo "go test -race ./... (log: $(LOGS)/go-test.log)"
	@set -o pipefail; $(GO) test -race -count=1 -timeout 20m -json ./... 2>&1 | \
	  $(GO) run ./cmd/testreport -log $(LOGS)/go-test.log

# stage NAME CMD: run CMD with its output in $(LOGS)/NAME.log; print its closing line, or the
# end of the log when it fails.
define stage
	@mkdir -p $(LOGS); start=$$(date +%s); \
	if $(2) > $(LOGS)/$(1).log 2>&1; then \
	  echo "ok   stage $(1) $$(( $$(date +%s) - start ))s: $$(grep -E 'passed, [0-9]+ failed|^SKIP' $(LOGS)/$(1).log | tail -1) (log: $(LOGS)/$(1).log)"; \
	else \
	  echo "FAIL stage $(1) $$(( $$(date +%s) - start ))s (log: $(LOGS)/$(1).log); its failures:"; \
	  grep -E -A15 -- '--- FAIL|panic:|FAIL' $(LOGS)/$(1).log | head -150; tail -30 $(LOGS)/$(1).log; exit 1; \
	fi
endef

# A one-node Slurm cluster of this machine (slurmctld, slurmd and munge installed with apt-get
# when absent), started for crashtui's Slurm tests and stopped after them: .ci/slurm.
test-slurm: deps
	$(call stage,slurm,GO=$(GO) LOGS=$(LOGS) .ci/slurm)

# The QEMU stages' C programs (glibc's own scv, the C crash suite) are built on the host with
# Debian's cross compilers and libcs (PATH:PACKAGE pairs), installed with apt-get when absent;
# QEMU and the kernels are the harness's to fetch (tracer/qemu).
QEMU_NEEDS_ppc64le := /usr/bin/powerpc64le-linux-gnu-gcc:gcc-powerpc64le-linux-gnu \
  /usr/powerpc64le-linux-gnu/lib/libc.a:libc6-dev-ppc64el-cross
QEMU_NEEDS_arm64 := /usr/bin/aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu \
  /usr/aarch64-linux-gnu/lib/libc.a:libc6-dev-arm64-cross

# apt_need PAIRS: apt-get install the packages of the PATH:PACKAGE pairs whose path is missing.
define apt_need
	@missing=""; for pair in $(1); do f=$${pair%%:*}; pkg=$${pair##*:}; \
	  test -e "$$f" || missing="$$missing $$pkg"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "need root to apt-get install$$missing" >&2; exit 1; fi; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing >/dev/null 2>&1 || \
	  { DEBIAN_FRONTEND=noninteractive apt-get update >/dev/null && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; }; \
	fi
endef

.PHONY: qemu-deps-ppc64le qemu-deps-arm64 guest
qemu-deps-ppc64le:
	$(call apt_need,$(QEMU_NEEDS_ppc64le))

qemu-deps-arm64:
	$(call apt_need,$(QEMU_NEEDS_arm64))

# Each stage ends with TestDemoGuest: `crashtui demo --guest ARCH --json` boots the guest once
# more, with sigpending under the guest's agent, and checkpoints it over the console.
demo_guest_test = CRASHTUI_QEMU=1 CRASHTUI_DEMO_GUEST=$(1) $(GO) test -count=1 -v -run TestDemoGuest ./cmd/crashtui

test-ppc64le: qemu-deps-ppc64le
	$(call stage,ppc64le,{ $(GO) run ./tracer/qemu/cmd/ppc64le-test && $(call demo_guest_test,ppc64le:power10); })

test-arm64: qemu-deps-arm64
	$(call stage,arm64,{ $(GO) run ./tracer/qemu/cmd/arm64-test && $(call demo_guest_test,arm64:max); })

# A guest for users (workshops: the scv bug on a laptop): boots ARCH (ppc64le, arm64) on CPU
# (power8, power9, power10; max; default power10 or max) with crashtui, busybox, the C test
# programs and the files in ADD on its PATH, runs RUN with sh -c and prints its output.
# $(BUILD)/guest exits with RUN's status (125 when the guest itself failed); make can only say
# 0 or 2. RUN reaches the guest as written: make does not expand it.
#   make guest ARCH=arm64 RUN='crashtui version; uname -m'
ARCH ?= ppc64le
guest: export CRASHTUI_GUEST_RUN = $(value RUN)
guest: qemu-deps-$(ARCH)
	@mkdir -p $(BUILD)
	@$(GO) build -o $(BUILD)/guest ./tracer/qemu/cmd/guest
	@$(BUILD)/guest -arch "$(ARCH)" $(if $(CPU),-cpu "$(CPU)") -run "$$CRASHTUI_GUEST_RUN" $(ADD)

# Every benchmark, as a table: each cost beside the floor measured in the same run, the ratio
# and the goal (cmd/testreport -bench); go test's own output goes to $(LOGS)/bench.log.
bench: build
	@mkdir -p $(LOGS)
	@echo "go test -bench . ./... (log: $(LOGS)/bench.log)"
	@set -o pipefail; $(GO) test -run '^$$' -bench . -benchtime 3x -timeout 20m ./... 2>&1 | \
	  $(GO) run ./cmd/testreport -bench -log $(LOGS)/bench.log

# 200 SIGKILLs of crashtui at random moments of matrix, checkpoint and a measured attach,
# against a 20-process job that checks its own registers, results and SIGTRAP handler; then
# 50 matrix runs under a SIGSTOP/SIGCONT storm.
soak: deps
	CRASHTUI_KILL9_TRIALS=200 CRASHTUI_STORM_RUNS=50 CRASHTUI_KILL9_REPORT=1 $(GO) test -count=1 -run '^(TestKill9DuringInjection|TestStopStormDuringMatrix)$$' -v -timeout 30m ./cmd/crashtui

cross:
	@GOOS=linux GOARCH=arm64 $(GO) build ./... && GOOS=linux GOARCH=arm64 $(GO) vet ./...
	@GOOS=linux GOARCH=ppc64le $(GO) build ./... && GOOS=linux GOARCH=ppc64le $(GO) vet ./...
	@echo "ok   cross: GOARCH=arm64 and ppc64le build and vet"

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }

clean:
	rm -rf $(BUILD)
