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
# What the demo needs (command:package, installed with apt-get when the command is missing): gcc
# compiles the demo's C programs, gdb is what g in the TUI opens on a core. make test adds Open
# MPI for the real-MPI matrix and stacks tests, and dlv (go install) for the Stacks tab's Go
# hand-off test; the Slurm and QEMU stages install their own (test-slurm, qemu-deps-*).
DEMO_NEEDS := gcc:gcc gdb:gdb
TEST_NEEDS := mpirun:openmpi-bin mpicc:libopenmpi-dev /usr/lib/debug/.build-id:libc6-dbg eu-stack:elfutils
DLV := github.com/go-delve/delve/cmd/dlv@v1.27.2

.PHONY: all build install demo test test-go test-slurm test-ppc64le test-arm64 bench soak cross deps test-deps apt-deps go-deps dlv clean vet fmt testreport

all: build

# apt_need PAIRS: apt-get install the packages of the NEED:PACKAGE pairs whose NEED (a command,
# or an absolute path) is missing, saying what it installs and how long that took.
define apt_need
	@missing=""; for pair in $(1); do f=$${pair%%:*}; pkg=$${pair##*:}; \
	  case $$f in /*) test -e "$$f" ;; *) command -v "$$f" >/dev/null 2>&1 ;; esac || missing="$$missing $$pkg"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing (apt-get)"; t=$$(date +%s); \
	  if [ "$$(id -u)" != 0 ]; then echo "need root to apt-get install$$missing" >&2; exit 1; fi; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing >/dev/null 2>&1 || \
	  { DEBIAN_FRONTEND=noninteractive apt-get update >/dev/null && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; } || exit 1; \
	  echo "installed:$$missing ($$(( $$(date +%s) - t ))s)"; \
	fi
endef

apt-deps:
	$(call apt_need,$(DEMO_NEEDS))

# Go modules: downloaded (and said so) only when the module cache lacks them.
go-deps:
	@GOPROXY=off $(GO) list -deps -test ./... >/dev/null 2>&1 || { \
	  echo "downloading: Go modules (go mod download)"; t=$$(date +%s); $(GO) mod download && \
	  echo "downloaded: Go modules ($$(( $$(date +%s) - t ))s)"; }

dlv:
	@command -v dlv >/dev/null 2>&1 || { echo "installing: dlv (go install $(DLV))"; t=$$(date +%s); \
	  $(GO) install $(DLV) && echo "installed: dlv ($$(( $$(date +%s) - t ))s)"; }

# What make demo needs; test-deps is that and what the tests add.
deps: apt-deps go-deps
test-deps: deps dlv
	$(call apt_need,$(TEST_NEEDS))

$(BUILD)/demo/%: demo/c/%.c | apt-deps
	@mkdir -p $(BUILD)/demo
	@gcc -g -O1 -pthread -o $@ $< -ldl

build: go-deps $(DEMO_BIN)
	@t=$$(date +%s); $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/crashtui && \
	  echo "built $(BIN) ($$(( $$(date +%s) - t ))s)"

# crashtui on your PATH: PREFIX/bin/crashtui (PREFIX=/usr/local by default; DESTDIR for
# staged installs). `go install ./cmd/crashtui` puts it in $(go env GOPATH)/bin instead.
PREFIX ?= /usr/local
install: build
	install -d "$(DESTDIR)$(PREFIX)/bin"
	install -m 0755 $(BIN) "$(DESTDIR)$(PREFIX)/bin/crashtui"

# The built-in demo job in the TUI (as root it shows everything; otherwise it says what it cannot).
# It installs only what the demo uses (deps: gcc, gdb, the Go modules).
demo: deps build
	$(BIN) demo

# All tests, as five stages that all run even when one fails: test-go (unit and real-process
# tests with the race detector), test-slurm (a one-node Slurm cluster), cross (the arm64 and
# ppc64le builds), test-ppc64le and test-arm64 (real kernels under QEMU, installing
# qemu-system-ppc and qemu-system-arm and fetching Debian's kernels when absent). Each stage
# prints its progress lines and an ok or FAIL line with its time, its whole output goes to
# $(LOGS)/STAGE.log, and the summary at the end has one line per stage and the totals; make
# test fails if any stage did.
STAGES := test-go test-slurm cross test-ppc64le test-arm64
LOGS := $(BUILD)/test-logs
RESULTS := $(LOGS)/stages.jsonl
TESTREPORT := $(BUILD)/testreport

# Time limits: each stage's own (LIMIT_stage), and make test's whole budget (TEST_BUDGET
# minutes from its start: CI gives 90 minutes in all), whichever ends first. A stage past it is
# stopped (SIGQUIT: go test's binaries print their goroutines; SIGKILL a minute later) and
# fails saying so, and the stages after it still run while the budget lasts: a hang costs a
# stage, never the whole run's report.
TEST_BUDGET ?= 80
LIMIT_test-go ?= 45m
LIMIT_test-slurm ?= 10m
LIMIT_cross ?= 10m
LIMIT_test-ppc64le ?= 15m
LIMIT_test-arm64 ?= 10m
STAGE_GRACE ?= 1m

test: testreport
	@rm -f $(RESULTS)
	@export CRASHTUI_TEST_DEADLINE=$$(( $$(date +%s) + $(TEST_BUDGET) * 60 )); \
	  for s in $(STAGES); do $(MAKE) --no-print-directory $$s; done; \
	  $(TESTREPORT) -summary $(RESULTS) $(STAGES)

testreport:
	@mkdir -p $(LOGS)
	@$(GO) build -o $(TESTREPORT) ./cmd/testreport

# stage NAME [-all]: run the recipe of the target stage-NAME as the stage NAME (cmd/testreport
# -stage): its output in $(LOGS)/NAME.log, its progress lines on the console, then its ok or
# FAIL line, and its result in $(RESULTS) for make test's summary.
stage = @$(TESTREPORT) -stage $(1) $(2) -log $(LOGS)/$(1).log -results $(RESULTS) \
  $(if $(LIMIT_$(1)),-limit $(LIMIT_$(1))) -grace $(STAGE_GRACE) -deadline "$${CRASHTUI_TEST_DEADLINE:-0}" -- \
  $(MAKE) --no-print-directory -s stage-$(1)

# go test's output is one line per package with its time (cmd/testreport), and a line naming
# the running test when a package is silent for a minute; go test's whole output goes to
# $(LOGS)/go-test.log, and what failed is printed in full. The timeout is per package and
# generous (cmd/crashtui's real-process tests take 6 minutes on a loaded CI machine, several
# times that under heavy load) yet well inside the stage's limit, so that a hung package's
# goroutines are printed by go test itself.
test-go: test-deps build testreport
	$(call stage,test-go,-all)

stage-test-go:
	@set -o pipefail; $(GO) test -race -count=1 -timeout 30m -json ./... 2>&1 | \
	  $(TESTREPORT) -log $(LOGS)/go-test.log

# A one-node Slurm cluster of this machine (slurmctld, slurmd and munge installed with apt-get
# when absent), started for crashtui's Slurm tests and stopped after them: .ci/slurm.
test-slurm: deps testreport
	$(call stage,test-slurm)

stage-test-slurm:
	@GO=$(GO) LOGS=$(LOGS) .ci/slurm

# The arm64 and ppc64le builds and vets, one progress line (with its time) per step.
cross: testreport
	$(call stage,cross)

stage-cross:
	@for arch in arm64 ppc64le; do for step in build vet; do t=$$(date +%s); \
	  GOOS=linux GOARCH=$$arch $(GO) $$step ./... || exit 1; \
	  echo "progress: GOARCH=$$arch go $$step ./... ok ($$(( $$(date +%s) - t ))s)"; done; done; \
	echo "progress: GOARCH=arm64 and ppc64le: go build and go vet ./... clean"

# The QEMU stages' C programs (glibc's own scv, the C crash suite) are built on the host with
# Debian's cross compilers and libcs (PATH:PACKAGE pairs), installed with apt-get when absent;
# QEMU and the kernels are the harness's to fetch (tracer/qemu).
QEMU_NEEDS_ppc64le := /usr/bin/powerpc64le-linux-gnu-gcc:gcc-powerpc64le-linux-gnu \
  /usr/powerpc64le-linux-gnu/lib/libc.a:libc6-dev-ppc64el-cross
QEMU_NEEDS_arm64 := /usr/bin/aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu \
  /usr/aarch64-linux-gnu/lib/libc.a:libc6-dev-arm64-cross

.PHONY: qemu-deps-ppc64le qemu-deps-arm64 guest stage-test-go stage-test-slurm stage-cross stage-test-ppc64le stage-test-arm64
qemu-deps-ppc64le:
	$(call apt_need,$(QEMU_NEEDS_ppc64le))

qemu-deps-arm64:
	$(call apt_need,$(QEMU_NEEDS_arm64))

# Each stage ends with TestDemoGuest: `crashtui demo --guest ARCH --json` boots the guest once
# more, with sigpending under the guest's agent, and checkpoints it over the console.
demo_guest_test = { echo "progress: TestDemoGuest: crashtui demo --guest $(1) --json"; t=$$(date +%s); \
  CRASHTUI_QEMU=1 CRASHTUI_DEMO_GUEST=$(1) $(GO) test -count=1 -v -timeout 30m -run TestDemoGuest ./cmd/crashtui && \
  echo "progress: TestDemoGuest ok ($$(( $$(date +%s) - t ))s)"; }

test-ppc64le: qemu-deps-ppc64le testreport
	$(call stage,test-ppc64le)

stage-test-ppc64le:
	@$(GO) run ./tracer/qemu/cmd/ppc64le-test && $(call demo_guest_test,ppc64le:power10)

test-arm64: qemu-deps-arm64 testreport
	$(call stage,test-arm64)

stage-test-arm64:
	@$(GO) run ./tracer/qemu/cmd/arm64-test && $(call demo_guest_test,arm64:max)

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
bench: build test-deps
	@mkdir -p $(LOGS)
	@# BenchmarkStopHold reads the scheduler's events from a tracefs instance of its own; a
	@# fresh machine has tracefs unmounted (as root it is mounted here, else that one skips).
	@if [ "$$(id -u)" = 0 ] && [ ! -d /sys/kernel/tracing/instances ]; then \
	  mount -t tracefs nodev /sys/kernel/tracing && echo "mounted tracefs at /sys/kernel/tracing"; fi
	@echo "go test -bench . ./... (log: $(LOGS)/bench.log)"
	@set -o pipefail; $(GO) test -run '^$$' -bench . -benchtime 3x -timeout 45m ./... 2>&1 | \
	  $(GO) run ./cmd/testreport -bench -log $(LOGS)/bench.log

# 200 SIGKILLs of crashtui at random moments of matrix, checkpoint, stacks and a measured attach,
# against a 20-process job that checks its own registers, results, SIGTRAP handler and the
# signals it sends itself (none lost); then
# 50 matrix runs under a SIGSTOP/SIGCONT storm.
soak: test-deps
	CRASHTUI_KILL9_TRIALS=200 CRASHTUI_STORM_RUNS=50 CRASHTUI_KILL9_REPORT=1 $(GO) test -count=1 -run '^(TestKill9DuringInjection|TestStopStormDuringMatrix)$$' -v -timeout 30m ./cmd/crashtui

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }

clean:
	rm -rf $(BUILD)
