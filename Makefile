# omniforge developer entry points (GNU make). `make` lists the targets.

SELF := $(abspath $(firstword $(MAKEFILE_LIST)))
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

BUILD_DIR  ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS       ?= 2
SANITIZE   ?= OFF
TSAN       ?= OFF
# Extra arguments: `make configure CMAKE_ARGS=-DFOO=1`, `make run ARGS=...`.
CMAKE_ARGS ?=
ARGS       ?=
# Tests of llm_integration_test that also hold against a real provider.
LIVE_LLM_FILTER ?= *Conformance*
# `make fuzz`: seconds per target, and which targets (default all; docs/fuzzing.md).
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
# `make asan`: extra ctest arguments, e.g. ASAN_CTEST_ARGS="-L 'e2e|faults'".
ASAN_CTEST_ARGS ?=

# ccache: relative paths under the repo so a fresh clone (CI) hits the cache.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := 1
CCACHE_DIR ?= $(if $(HOME),$(HOME),/tmp)/.cache/ccache
export CCACHE_DIR
$(shell mkdir -p "$(CCACHE_DIR)")

CONFIGURE_ARGS := $(strip -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DOMNIFORGE_SANITIZE=$(SANITIZE) \
  $(if $(filter ON,$(TSAN)),-DOMNIFORGE_TSAN=ON) $(CMAKE_ARGS))
CONFIGURE_STAMP := $(BUILD_DIR)/.omniforge-configure-args
FORMAT_DIRS := libs services cli tests bench fuzz
# The version the sources are formatted with (tests/lint/format_test.sh picks the same).
CLANG_FORMAT ?= $(shell command -v clang-format-14 || command -v clang-format)
export CLANG_FORMAT

.PHONY: help deps configure build test lint run up down image bench intent-eval live-llm asan tsan fuzz format api-release envoy-descriptor clean

help:
	@echo "omniforge make targets (variables: BUILD_DIR=$(BUILD_DIR) BUILD_TYPE=$(BUILD_TYPE) JOBS=$(JOBS) SANITIZE=$(SANITIZE))"
	@echo "  help       this list (default target)"
	@echo "  deps       install missing apt packages and npm test peers (scripts/deps.sh)"
	@echo "  configure  deps + cmake configure into \$$BUILD_DIR (only when needed)"
	@echo "  build      configure + compile everything"
	@echo "  test       build + run all tests with ctest"
	@echo "  run        build + start the local stack and walk the demo conversations (scripts/run.sh)"
	@echo "  up         build + start the whole stack (scripts/stack.sh up)"
	@echo "  down       stop the whole stack (scripts/stack.sh down)"
	@echo "  image      build + the container image omniforge:<version> from the built binaries (scripts/image.sh)"
	@echo "  bench      build + run the benchmarks (scripts/bench.sh)"
	@echo "  intent-eval  build + measure the intent service over gRPC (dev split, follow-ups)"
	@echo "  live-llm   the LLM conformance tests against a real endpoint (OMNIFORGE_LLM_* env)"
	@echo "  asan       ASan/UBSan build and test in build-asan"
	@echo "  fuzz       libFuzzer targets (clang, build-fuzz), each for FUZZ_SECONDS=$(FUZZ_SECONDS) (FUZZ_TARGETS=...)"

	@echo "  tsan       ThreadSanitizer build and run of the concurrency tests in build-tsan"
	@echo "  lint       format check + clang-tidy (.clang-tidy, thread-safety analysis) over the sources"
	@echo "  format     clang-format -i all *.cc/*.h in $(FORMAT_DIRS)"
	@echo "  api-release  VERSION=x.y.z: record the public API as released (api/releases/), the baseline of buf breaking"
	@echo "  envoy-descriptor  the public API's descriptor set for Envoy's transcoder: deploy/envoy/omniforge-chat.pb"
	@echo "  clean      remove \$$BUILD_DIR"

deps:
	@bash scripts/deps.sh

# Re-run cmake only when the build dir is missing/broken or the requested
# options changed; afterwards cmake re-runs itself when CMakeLists change.
configure: deps
	@if [ ! -f "$(BUILD_DIR)/CMakeCache.txt" ] || [ ! -f "$(CONFIGURE_STAMP)" ] \
	    || [ "$$(cat "$(CONFIGURE_STAMP)")" != "$(CONFIGURE_ARGS)" ]; then \
	  rm -f "$(CONFIGURE_STAMP)"; \
	  cmake -S . -B "$(BUILD_DIR)" $(CONFIGURE_ARGS); \
	  echo "$(CONFIGURE_ARGS)" > "$(CONFIGURE_STAMP)"; \
	fi

build: configure
	@cmake --build "$(BUILD_DIR)" -j$(JOBS)

# ctest's summary line ("100% tests passed, ...") is moved to the very end of
# the output; pipefail makes the recipe fail exactly when ctest fails.
SUMMARY_LAST := awk '/tests passed, [0-9]+ tests? failed out of [0-9]+/ { summary = $$0; next } \
  { print; fflush() } END { if (summary != "") print summary }'
test: build
	@cd "$(BUILD_DIR)" && ctest --output-on-failure -j$(JOBS) --timeout 600 2>&1 | $(SUMMARY_LAST)

# clang-tidy reads the compile commands and needs the generated protobuf
# headers, nothing else of the build; files unchanged since a clean run are
# skipped (scripts/lint.py, cache in ~/.cache/omniforge-tidy).
PROTO_TARGETS := $(addprefix omniforge_,$(addsuffix _proto,conversation health reflection llm intent executor orchestrator))
# Both checks run; either failing fails the target.
lint: configure
	@status=0; \
	bash tests/lint/format_test.sh || status=1; \
	cmake --build "$(BUILD_DIR)" -j$(JOBS) --target $(PROTO_TARGETS) >/dev/null; \
	python3 scripts/lint.py --build-dir "$(BUILD_DIR)" --jobs $(JOBS) $(ARGS) || status=1; \
	exit $$status

run: build
	@bash scripts/run.sh $(ARGS)

up: build
	@bash scripts/stack.sh up $(ARGS)

down:
	@bash scripts/stack.sh down $(ARGS)

# ARGS=postgres also makes omniforge-postgres:15 (PostgreSQL from Debian's
# packages) for hosts that cannot pull postgres:15.
image: build
	@BUILD_DIR="$(BUILD_DIR)" bash scripts/image.sh $(ARGS)

# The public API as released: buf breaking (tests/deploy) checks every later
# change against the newest image in api/releases.
api-release:
	@test -n "$(VERSION)" || { echo "usage: make api-release VERSION=x.y.z" >&2; exit 2; }
	@mkdir -p api/releases
	@tests/node/node_modules/.bin/buf build --path protos/omniforge/orchestrator -o api/releases/$(VERSION).binpb
	@echo "api/releases/$(VERSION).binpb: the public API of $(VERSION)"

# The descriptor set Envoy's grpc_json_transcoder loads (docs/gateway.md):
# built by CMake (protos/CMakeLists.txt), copied where the recipe mounts it.
envoy-descriptor: configure
	@cmake --build "$(BUILD_DIR)" --target omniforge_chat_descriptor
	@cp "$(BUILD_DIR)/protos/omniforge-chat.pb" deploy/envoy/omniforge-chat.pb
	@echo "deploy/envoy/omniforge-chat.pb: ChatService and its HTTP rules, for Envoy's transcoder"

bench: build
	@bash scripts/bench.sh $(ARGS)

# Accuracy, confusion matrix, follow-up resolution and latency of a freshly
# started intent service in local mode; the last line is its RESULT.
intent-eval: build
	@"$(BUILD_DIR)/bin/omniforge-intent-eval" --spawn $(ARGS)

# The LLM conformance suite against a real provider instead of the fake:
#   OMNIFORGE_LLM_BASE_URL=https://api.openai.com/v1 OMNIFORGE_LLM_API_KEY=sk-...
#   OMNIFORGE_LLM_MODEL=gpt-4o-mini [OMNIFORGE_LLM_API=openai|anthropic] make live-llm
live-llm: build
	@if [ -z "$${OMNIFORGE_LLM_BASE_URL:-}" ] || [ -z "$${OMNIFORGE_LLM_MODEL:-}" ]; then \
	  echo "live-llm: set OMNIFORGE_LLM_BASE_URL, OMNIFORGE_LLM_MODEL and OMNIFORGE_LLM_API_KEY (and OMNIFORGE_LLM_API=anthropic for Anthropic)" >&2; \
	  exit 2; \
	fi
	@OMNIFORGE_LLM_LIVE=1 "$(BUILD_DIR)/tests/llm_integration_test" --gtest_filter='$(LIVE_LLM_FILTER)'

# Every test but the Docker ones (their images hold the product's binaries,
# not sanitized ones) under ASan and UBSan in build-asan (docs/tests.md,
# "AddressSanitizer"). UBSan only reports by default; halt_on_error makes
# undefined behaviour fail the test. Every process writes its reports to
# build-asan/sanitizer-logs (log_path), the service binaries the tests
# start included, and a report there fails the run
# (scripts/sanitizer_logs.sh). Set ASAN_OPTIONS, UBSAN_OPTIONS or
# LSAN_OPTIONS yourself to override.
#
# $(call sanitized,DIR,COMMAND): COMMAND with the sanitizers' report
# directory DIR emptied first; fails when COMMAND does, and when any process
# left a report in DIR.
sanitized = rm -rf "$(1)" && mkdir -p "$(1)" && status=0; $(2) || status=$$?; \
  bash "$(CURDIR)/scripts/sanitizer_logs.sh" "$(1)" || status=1; exit $$status
ASAN_LOGS := $(CURDIR)/build-asan/sanitizer-logs
ASAN_TEST_OPTIONS := ASAN_OPTIONS="$${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:log_path=$(ASAN_LOGS)/asan:log_exe_name=1}" \
  UBSAN_OPTIONS="$${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:log_path=$(ASAN_LOGS)/ubsan:log_exe_name=1}" \
  LSAN_OPTIONS="$${LSAN_OPTIONS:-suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0}"
asan:
	@$(MAKE) --no-print-directory -f "$(SELF)" build BUILD_DIR=build-asan SANITIZE=ON
	@cd build-asan && $(call sanitized,$(ASAN_LOGS),$(ASAN_TEST_OPTIONS) ctest -LE docker \
	  $(ASAN_CTEST_ARGS) --output-on-failure -j$(JOBS) --timeout 1200 2>&1 | $(SUMMARY_LAST))

# The libFuzzer targets of fuzz/ in build-fuzz (clang-14), one after the
# other; fails on a crash, a leak, a timeout or a broken property.
fuzz: deps
	@FUZZ_SECONDS="$(FUZZ_SECONDS)" FUZZ_TARGETS="$(FUZZ_TARGETS)" JOBS="$(JOBS)" bash scripts/fuzz.sh

# The concurrency-heavy tests (OMNIFORGE_TSAN's list in CMakeLists.txt)
# under ThreadSanitizer; any report fails the run, a service binary's
# included (build-tsan/sanitizer-logs). Run before merging a change to
# threads or locks, and nightly (docs/tests.md, "ThreadSanitizer").
TSAN_LOGS := $(CURDIR)/build-tsan/sanitizer-logs
TSAN_OPTIONS_DEFAULT := halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp \
  log_path=$(TSAN_LOGS)/tsan log_exe_name=1
tsan:
	@$(MAKE) --no-print-directory -f "$(SELF)" configure BUILD_DIR=build-tsan TSAN=ON
	@cmake --build build-tsan -j$(JOBS) --target omniforge_tsan_tests
	@cd build-tsan && $(call sanitized,$(TSAN_LOGS),TSAN_OPTIONS="$${TSAN_OPTIONS:-$(TSAN_OPTIONS_DEFAULT)}" \
	  ctest -R "$$(cat tsan-tests.regex)" --output-on-failure -j$(JOBS) --timeout 900)

format:
	@[ -n "$(CLANG_FORMAT)" ] || { echo "format: clang-format not installed (make deps)" >&2; exit 1; }
	@dirs=(); for d in $(FORMAT_DIRS); do [ -d "$$d" ] && dirs+=("$$d"); done; \
	if [ $${#dirs[@]} -gt 0 ]; then \
	  find "$${dirs[@]}" \( -type d \( -name build -o -name 'build-*' -o -name .cache \) -prune \) \
	    -o -type f \( -name '*.cc' -o -name '*.h' \) -print0 | xargs -0 -r "$(CLANG_FORMAT)" -i; \
	fi

clean:
	@case "$(BUILD_DIR)" in ""|"."|"/"|"..") echo "clean: refusing to remove BUILD_DIR='$(BUILD_DIR)'" >&2; exit 1;; esac
	rm -rf "$(BUILD_DIR)"
