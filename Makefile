# The two contract commands are `make demo` and `make test`; both install what they need first.
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
CMAKE_FLAGS ?=

.PHONY: all setup configure build test demo demo-ha lint format bench clang sanitize sanitize-asan \
        sanitize-asan-unit sanitize-tsan sanitize-ubsan-interposer fuzz mutate mutate-sample clean

all: build

setup:
	@bash scripts/setup.sh

$(BUILD_DIR)/build.ninja: | setup
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

configure: setup $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure --label-exclude gpu -j 2

demo: build
	bash scripts/demo.sh $(BUILD_DIR)

# The control plane on etcd: 3 members and 2 replicas on loopback, the leader killed mid-scenario
# (docs/ha.md).
demo-ha: build
	bash scripts/demo-ha.sh $(BUILD_DIR)

# The mutation check (docs/testing.md): applies each tests/mutations/*.patch (or PATCHES=...) to a
# scratch copy in build-mutate/, rebuilds what its tests need, runs them, and fails if any patch
# survives. Not part of `make test`: about 20 minutes for every patch on 2 cores once ccache holds
# the ordinary build's objects (docs/testing.md records the last run).
PATCHES ?=
mutate: setup
	python3 tools/mutate.py $(PATCHES)

# Mechanical mutants (docs/testing.md, "Mechanical mutants"): N generated single-line bugs drawn
# with SEED from DIR's production sources, each built in build-mutate/ and run against DIR's unit
# tests and the integration suites that drive it; prints the score and every survivor's diff.
# Not part of `make test`: one to three minutes per mutant on 2 cores.
DIR ?= src/server/autoscaling
N ?= 40
SEED ?= 1
mutate-sample: setup
	python3 tools/mutate_sample.py --dir $(DIR) -n $(N) --seed $(SEED)

bench: build
	bash scripts/bench.sh $(BUILD_DIR)

# Builds everything with Clang 14 too, so both supported compilers stay warning-free.
clang: setup
	cmake -S . -B build-clang -G Ninja -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ $(CMAKE_FLAGS)
	cmake --build build-clang

# ASan + UBSan over every test, then TSan over the concurrent suites (docs/testing.md).
sanitize: setup
	bash scripts/sanitize.sh all
sanitize-asan: setup
	bash scripts/sanitize.sh asan
sanitize-asan-unit: setup
	bash scripts/sanitize.sh asan-unit
sanitize-tsan: setup
	bash scripts/sanitize.sh tsan
sanitize-ubsan-interposer: setup
	bash scripts/sanitize.sh ubsan-interposer

# libFuzzer over every parser for FUZZ_SECONDS each (FUZZ_RUNS caps executions; FUZZ_TARGETS
# picks some). `make test` replays the committed corpora without it.
FUZZ_SECONDS ?= 60
FUZZ_RUNS ?= 0
fuzz: setup
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_RUNS=$(FUZZ_RUNS) bash scripts/fuzz.sh

lint: configure
	bash scripts/lint.sh $(BUILD_DIR)

format:
	git ls-files '*.h' '*.cc' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR) build-clang build-asan build-ubsan build-tsan build-fuzz
