# The two set-up commands (README):
#   make perf   build, then AllReduce over local ranks (one per GPU, else 4 on host memory), checked
#   make test   build, then every ctest test (CI runs all labels but gpu)
# Others: make asan (ASan+UBSan build of the host tests), make tsan, make format, make clean.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all build perf test asan tsan format clean deps

all: build

deps:
	@./.ci/install-deps

build:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

# One rank per GPU when the machine has GPUs, else 4 ranks on host memory.
NGPUS := $(shell nvidia-smi -L 2>/dev/null | grep -c '^GPU')
PERF_RANKS ?= $(if $(filter-out 0,$(NGPUS)),$(NGPUS),4)

perf: build
	$(BUILD)/bin/baton-run -n $(PERF_RANKS) $(BUILD)/bin/baton-perf allreduce -b 8 -e 64M -f 2 -c 1

# Labels left out: gpu (no GPU in CI); the sanitized build also leaves out static (checks of
# the sources: format, layering, which the plain build has run already).
TEST_EXCLUDE ?= gpu

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE '$(TEST_EXCLUDE)'

asan:
	$(MAKE) test BUILD=build-asan TEST_EXCLUDE='gpu|static' CMAKE_FLAGS="-DBATON_CUDA=OFF $(CMAKE_FLAGS) -DBATON_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=RelWithDebInfo"

# ThreadSanitizer cannot follow a fork after threads started, so it runs the tests whose
# ranks are threads (labels threads and tsan). Without CUDA, as the sanitized build: TSan sees
# no GPU, and nvcc's links of the device-API tests leave the sanitizer's runtime out.
tsan:
	cmake -S . -B build-tsan -DBATON_CUDA=OFF $(CMAKE_FLAGS) -DBATON_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build build-tsan -j $(JOBS)
	cd build-tsan && ctest --output-on-failure -L 'threads|tsan'

format:
	clang-format -i --style=file $$(git ls-files --cached --others --exclude-standard 'src/*.[ch]' 'src/*.cu' 'include/*.h' 'tools/*.c' 'tests/*.[ch]')

clean:
	rm -rf build build-asan build-tsan
