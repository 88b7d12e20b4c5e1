# vramguard: one non-recursive Makefile. `make` builds build/libvramguard.so; `make test` builds and runs the CPU
# suite against the test double of libcuda.so.1 (tests/fakecuda); `make demo` runs the quota demo.
CUDA_HOME ?= /usr/local/cuda
CC ?= cc
CFLAGS ?= -O2 -g
BUILD ?= build

VG_CPPFLAGS := -I. -I$(CUDA_HOME)/include $(if $(UTHASH_INCLUDE),-I$(UTHASH_INCLUDE))
VG_CFLAGS := -std=gnu11 -Wall -Wextra -fPIC -fvisibility=hidden -ftls-model=initial-exec -pthread
VG_LDFLAGS := -shared -Wl,-Bsymbolic-functions -Wl,-z,now -Wl,-soname,libvramguard.so -pthread
VG_LIBS := -Wl,--no-as-needed -ldl -lpthread

# config/ is the bottom layer, linked whole into the library, the command and every test that parses a variable.
CONFIG_SRCS := $(wildcard config/*.c)
CONFIG_HDRS := $(wildcard config/*.h)
# The report (report/): what writing one takes, in the library and the command alike (REPORT_WRITE_SRCS), and
# what reading one back adds, in the command only (REPORT_READ_SRCS). `vramguard diff` is DIFF_SRCS.
REPORT_WRITE_SRCS := report/strbuf.c report/json_out.c report/schema.c report/report.c report/text.c report/json_write.c
REPORT_READ_SRCS := report/json.c report/json_read.c
DIFF_SRCS := cli/diff.c cli/diff_compare.c
# The shared-memory regions (accounting/region*.c): the library's part; the command adds region_scan.c.
REGION_SRCS := accounting/region.c accounting/region_path.c accounting/region_proc.c accounting/region_slots.c \
	accounting/region_charge.c accounting/region_limit.c accounting/region_usage.c

LIB_SRCS := interposer/init.c interposer/route.c interposer/charge.c interposer/hook_mem.c interposer/hook_pool.c \
	interposer/hook_vmm.c interposer/hook_array.c interposer/hook_ctx.c interposer/hook_stream.c interposer/devmem.c interposer/snapshot.c \
	interposer/reporter.c interposer/shared.c interposer/nvml.c interposer/nvml_hooks.c accounting/quota.c accounting/table.c accounting/sites.c \
	accounting/unwind.c $(REGION_SRCS) $(CONFIG_SRCS) report/log.c $(REPORT_WRITE_SRCS) report/symbolize.c report/path.c
LIB_SRCS += interposer/softlimit.c
LIB_ASM := interposer/dlsym.S
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o) $(LIB_ASM:%.S=$(BUILD)/obj/%.o)
LIB := $(BUILD)/libvramguard.so
HEADERS := $(wildcard interposer/*.h accounting/*.h config/*.h report/*.h)

CLI := $(BUILD)/vramguard
CLI_SRCS := cli/vramguard.c cli/run.c cli/report_cmd.c cli/dump.c cli/check.c $(DIFF_SRCS) cli/top.c cli/limit.c \
	cli/region.c cli/cli.c cli/scan.c cli/table.c cli/view_json.c cli/top_snap.c cli/top_text.c cli/top_json.c \
	$(REPORT_READ_SRCS) $(REPORT_WRITE_SRCS) $(CONFIG_SRCS) $(REGION_SRCS) accounting/region_scan.c
PREFIX ?= /usr/local
DESTDIR ?=

all: $(LIB) $(CLI)

# The build needs the CUDA headers and uthash; say which is missing, once, before compiling anything. (A check,
# not a parse-time error, so a prebuilt build/ can be used where neither is installed.)
$(BUILD)/.deps-ok:
	@test -f $(CUDA_HOME)/include/cuda.h -a -f $(CUDA_HOME)/include/cudaTypedefs.h || { echo "error: cuda.h and \
cudaTypedefs.h not found under CUDA_HOME=$(CUDA_HOME): install the CUDA toolkit headers or set CUDA_HOME" >&2; exit 1; }
	@test -f /usr/include/uthash.h -o -f "$(UTHASH_INCLUDE)/uthash.h" || { echo "error: uthash.h not found: \
install Debian's uthash-dev (apt-get install uthash-dev, or bash scripts/setup.sh) or set UTHASH_INCLUDE" >&2; exit 1; }
	@mkdir -p $(BUILD) && touch $@

$(BUILD)/obj/%.o: %.c $(HEADERS) Makefile | $(BUILD)/.deps-ok
	@mkdir -p $(dir $@)
	$(CC) $(VG_CPPFLAGS) -include interposer/glibc_compat.h $(VG_CFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/obj/%.o: %.S Makefile
	@mkdir -p $(dir $@)
	$(CC) $(VG_CPPFLAGS) -fPIC -c -o $@ $<

$(LIB): $(LIB_OBJS)
	$(CC) $(VG_LDFLAGS) -o $@ $^ $(VG_LIBS)

# The command: an ordinary program (it may exit, use stdio); it shares the config parser and the report code.
$(CLI): $(CLI_SRCS) $(HEADERS) $(wildcard cli/*.h) Makefile | $(BUILD)/.deps-ok
	$(CC) $(VG_CPPFLAGS) -std=gnu11 -Wall -Wextra $(CFLAGS) -o $@ $(CLI_SRCS) -ldl -pthread

install: $(LIB) $(CLI)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0755 $(CLI) $(DESTDIR)$(PREFIX)/bin/vramguard
	install -m 0755 $(LIB) $(DESTDIR)$(PREFIX)/lib/libvramguard.so
	install -m 0644 docs/vramguard.1 $(DESTDIR)$(PREFIX)/share/man/man1/vramguard.1

# ---- tests ----
T := $(BUILD)/tests
TEST_CFLAGS := -std=gnu11 -Wall -Wextra -O1 -g -pthread
FAKE := $(T)/libcuda.so.1

$(FAKE): tests/fakecuda/fakecuda.c tests/fakecuda/fakecuda.h Makefile | $(BUILD)/.deps-ok
	@mkdir -p $(T)
	$(CC) $(TEST_CFLAGS) -fPIC -shared -Wl,-Bsymbolic -Wl,-soname,libcuda.so.1 -I$(CUDA_HOME)/include \
		-o $@ tests/fakecuda/fakecuda.c

# The test double of NVML (tests/fakecuda/fakenvml.h), next to the fake libcuda; libnvidia-ml.so is the name
# nvidia-smi dlopens. nvml-r580/ holds a driver before R615, without nvmlDeviceGetMemoryLimits_v1.
FAKE_NVML := $(T)/libnvidia-ml.so.1
FAKE_NVML_R580 := $(T)/nvml-r580/libnvidia-ml.so.1
$(FAKE_NVML): tests/fakecuda/fakenvml.c tests/fakecuda/fakenvml.h Makefile
	@mkdir -p $(T)
	$(CC) $(TEST_CFLAGS) -fPIC -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ tests/fakecuda/fakenvml.c -ldl
	ln -sf libnvidia-ml.so.1 $(T)/libnvidia-ml.so
$(FAKE_NVML_R580): tests/fakecuda/fakenvml.c tests/fakecuda/fakenvml.h Makefile
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -DFAKENVML_R580 -fPIC -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ tests/fakecuda/fakenvml.c -ldl

# The double's own checks (tests/fakecuda/selftest.c); `make test` runs it before tests/run.sh.
$(T)/fakecuda_selftest: tests/fakecuda/selftest.c tests/fakecuda/fakecuda.h $(FAKE)
	$(CC) $(TEST_CFLAGS) -I$(CUDA_HOME)/include -o $@ $< -L$(T) -l:libcuda.so.1 -ldl -Wl,-rpath,'$$ORIGIN'

$(T)/test_config: tests/unit/test_config.c $(CONFIG_SRCS) $(CONFIG_HDRS) report/path.c report/path.h tests/unit/unit.h
	@mkdir -p $(T)
	$(CC) $(TEST_CFLAGS) -I. -o $@ tests/unit/test_config.c $(CONFIG_SRCS) report/path.c

$(T)/test_accounting: tests/unit/test_accounting.c accounting/quota.c accounting/table.c $(REGION_SRCS) $(CONFIG_SRCS) \
		$(HEADERS)
	@mkdir -p $(T)
	$(CC) $(TEST_CFLAGS) -I. -o $@ tests/unit/test_accounting.c accounting/quota.c accounting/table.c \
		$(REGION_SRCS) $(CONFIG_SRCS)

$(T)/test_region: tests/unit/test_region.c $(REGION_SRCS) $(CONFIG_SRCS) $(HEADERS) tests/unit/unit.h
	@mkdir -p $(T)
	$(CC) $(TEST_CFLAGS) -I. -o $@ tests/unit/test_region.c $(REGION_SRCS) $(CONFIG_SRCS)

# Our own NVML access (interposer/nvml.c) against the test double of NVML, found through the rpath: with R615's
# limits, as a driver before R615, and with no NVML at all.
TEST_NVML_DEPS := tests/unit/test_nvml.c interposer/nvml.c interposer/nvml.h tests/fakecuda/fakenvml.h tests/unit/unit.h
$(T)/test_nvml: $(TEST_NVML_DEPS) $(FAKE) $(FAKE_NVML)
	$(CC) $(TEST_CFLAGS) -I. -I$(CUDA_HOME)/include -o $@ tests/unit/test_nvml.c interposer/nvml.c -L$(T) \
		-l:libcuda.so.1 -ldl -Wl,-rpath,'$$ORIGIN'
$(T)/test_nvml_r580: $(TEST_NVML_DEPS) $(FAKE) $(FAKE_NVML_R580)
	$(CC) $(TEST_CFLAGS) -DTEST_NVML_R580 -I. -I$(CUDA_HOME)/include -o $@ tests/unit/test_nvml.c interposer/nvml.c \
		-L$(T) -l:libcuda.so.1 -ldl -Wl,-rpath,'$$ORIGIN/nvml-r580:$$ORIGIN'
$(T)/test_nvml_missing: $(TEST_NVML_DEPS)
	@mkdir -p $(T)
	$(CC) $(TEST_CFLAGS) -DTEST_NVML_MISSING -I. -o $@ tests/unit/test_nvml.c interposer/nvml.c -ldl \
		-Wl,-rpath,'$$ORIGIN/no-nvml-here'

$(T)/test_report: tests/unit/test_report.c $(REPORT_WRITE_SRCS) $(CONFIG_SRCS) $(HEADERS) tests/unit/unit.h
	@mkdir -p $(T)
	$(CC) $(TEST_CFLAGS) -I. -o $@ tests/unit/test_report.c $(REPORT_WRITE_SRCS) $(CONFIG_SRCS) -ldl

$(T)/test_symbolize: tests/unit/test_symbolize.c report/symbolize.c report/symbolize.h report/report.h tests/unit/unit.h
	@mkdir -p $(T)
	$(CC) $(TEST_CFLAGS) -I. -o $@ tests/unit/test_symbolize.c report/symbolize.c -ldl

$(T)/test_json_read: tests/unit/test_json_read.c $(REPORT_READ_SRCS) $(REPORT_WRITE_SRCS) $(CONFIG_SRCS) $(HEADERS) \
		tests/unit/unit.h
	@mkdir -p $(T)
	$(CC) $(TEST_CFLAGS) -I. -o $@ tests/unit/test_json_read.c $(REPORT_READ_SRCS) $(REPORT_WRITE_SRCS) $(CONFIG_SRCS) -ldl

$(T)/test_diff: tests/unit/test_diff.c $(DIFF_SRCS) cli/diff.h cli/diff_compare.h $(REPORT_WRITE_SRCS) $(CONFIG_SRCS) \
		$(HEADERS) tests/unit/unit.h
	@mkdir -p $(T)
	$(CC) $(TEST_CFLAGS) -I. -o $@ tests/unit/test_diff.c $(DIFF_SRCS) $(REPORT_WRITE_SRCS) $(CONFIG_SRCS) -ldl

# The call-site unwinder against libgcc (tests/unit/test_unwind.c). unwind.c goes into a shared library, as in
# production, so that its frames can be skipped by address range; the test's own frames are built without frame
# pointers, and two dlopened libraries differ only in frame size (one may land where the other was).
$(T)/libvgunwind.so: accounting/unwind.c accounting/unwind.h accounting/sites.c accounting/sites.h
	@mkdir -p $(T)
	$(CC) $(TEST_CFLAGS) -O2 -fPIC -shared -I. -o $@ accounting/unwind.c accounting/sites.c -ldl
$(T)/libvgunw_a.so $(T)/libvgunw_b.so: $(T)/libvgunw_%.so: tests/unit/unwind_lib.c
	@mkdir -p $(T)
	$(CC) $(TEST_CFLAGS) -O2 -fomit-frame-pointer -fPIC -shared -DVGU_LIB_$* -o $@ $<
$(T)/test_unwind: tests/unit/test_unwind.c tests/unit/unit.h accounting/unwind.h $(T)/libvgunwind.so \
		$(T)/libvgunw_a.so $(T)/libvgunw_b.so
	$(CC) $(TEST_CFLAGS) -O2 -fomit-frame-pointer -I. -o $@ tests/unit/test_unwind.c -L$(T) -l:libvgunwind.so \
		-ldl -Wl,-rpath,'$$ORIGIN'

# The lock-order check (accounting/lockorder.h), compiled in whatever the build.
$(T)/test_lockorder: tests/unit/test_lockorder.c accounting/lockorder.h tests/unit/unit.h
	@mkdir -p $(T)
	$(CC) $(TEST_CFLAGS) -I. -o $@ tests/unit/test_lockorder.c

$(BUILD)/gen-hook-doc: scripts/gen-hook-doc.c interposer/hooks.h | $(BUILD)/.deps-ok
	$(CC) $(TEST_CFLAGS) -I. -I$(CUDA_HOME)/include -o $@ scripts/gen-hook-doc.c
$(BUILD)/gen-man: scripts/gen-man.c $(CONFIG_SRCS) $(CONFIG_HDRS)
	@mkdir -p $(BUILD)
	$(CC) $(TEST_CFLAGS) -I. -o $@ scripts/gen-man.c $(CONFIG_SRCS)
$(BUILD)/gen-env-doc: scripts/gen-env-doc.c $(CONFIG_SRCS) $(CONFIG_HDRS)
	@mkdir -p $(BUILD)
	$(CC) $(TEST_CFLAGS) -I. -o $@ scripts/gen-env-doc.c $(CONFIG_SRCS)
$(BUILD)/gen-report-doc: scripts/gen-report-doc.c report/schema.c $(HEADERS)
	@mkdir -p $(BUILD)
	$(CC) $(TEST_CFLAGS) -I. -o $@ scripts/gen-report-doc.c report/schema.c

# Integration programs: linked against the test double (-lcuda route) or using dlopen (dlsym route).
INTEG_SRCS := $(filter-out tests/integration/nvml_probe.c,$(wildcard tests/integration/*.c))
INTEG_BINS := $(INTEG_SRCS:tests/integration/%.c=$(T)/%) $(T)/nvml_link $(T)/nvml_smi
# NVML read every way there is: linked against the fake NVML and libcuda (a framework), or dlopen only (nvidia-smi).
$(T)/nvml_link: tests/integration/nvml_probe.c tests/integration/itest.h $(FAKE) $(FAKE_NVML)
	$(CC) $(TEST_CFLAGS) -DNVML_LINKED -I. -I$(CUDA_HOME)/include -o $@ $< -L$(T) -l:libnvidia-ml.so.1 \
		-l:libcuda.so.1 -ldl -Wl,-rpath,'$$ORIGIN'
$(T)/nvml_smi: tests/integration/nvml_probe.c tests/integration/itest.h
	$(CC) $(TEST_CFLAGS) -I. -I$(CUDA_HOME)/include -o $@ $< -ldl
# Makes regions and slots for the `top` / `limit` tests without CUDA, through region.h only.
$(T)/region_tool: tests/integration/region_tool.c $(REGION_SRCS) $(CONFIG_SRCS) $(HEADERS)
	@mkdir -p $(T)
	$(CC) $(TEST_CFLAGS) -I. -o $@ tests/integration/region_tool.c $(REGION_SRCS) $(CONFIG_SRCS)
# Pokes at a region file through its layout only (a lock held by a stopped member, a poisoned total).
$(T)/region_poke: tests/integration/region_poke.c accounting/region.h
	@mkdir -p $(T)
	$(CC) $(TEST_CFLAGS) -I. -o $@ tests/integration/region_poke.c
$(T)/dl_%: tests/integration/dl_%.c tests/integration/itest.h
	$(CC) $(TEST_CFLAGS) -I. -I$(CUDA_HOME)/include -o $@ $< -ldl
$(T)/nocuda: tests/integration/nocuda.c tests/integration/itest.h
	$(CC) $(TEST_CFLAGS) -I. -I$(CUDA_HOME)/include -o $@ $< -ldl -lm
$(T)/rtld_next: tests/integration/rtld_next.c
	$(CC) $(TEST_CFLAGS) -o $@ $<
$(T)/%: tests/integration/%.c tests/integration/itest.h tests/fakecuda/fakecuda.h $(FAKE)
	$(CC) $(TEST_CFLAGS) -I. -I$(CUDA_HOME)/include -o $@ $< -L$(T) -l:libcuda.so.1 -ldl -Wl,-rpath,'$$ORIGIN'

# A program and a library that call CUDA from their constructors.
$(T)/libvgctor.so: tests/integration/ctor/lib.c $(FAKE)
	$(CC) $(TEST_CFLAGS) -fPIC -shared -I$(CUDA_HOME)/include -o $@ $< -L$(T) -l:libcuda.so.1
$(T)/ctor: tests/integration/ctor/app.c tests/integration/itest.h tests/fakecuda/fakecuda.h $(T)/libvgctor.so $(FAKE)
	$(CC) $(TEST_CFLAGS) -I. -I$(CUDA_HOME)/include -o $@ $< -L$(T) -l:libvgctor.so -l:libcuda.so.1 -ldl -Wl,-rpath,'$$ORIGIN'

# A second preload library that uses dlsym(RTLD_NEXT, ...): proves our dlsym keeps "next" the caller's.
$(T)/libnext.so: tests/integration/libnext/next.c
	$(CC) $(TEST_CFLAGS) -fPIC -shared -o $@ $< -ldl

TEST_BINS := $(FAKE) $(FAKE_NVML) $(FAKE_NVML_R580) $(T)/fakecuda_selftest $(T)/test_config $(T)/test_accounting $(T)/test_region $(T)/test_nvml $(T)/test_nvml_r580 $(T)/test_nvml_missing $(T)/test_report $(T)/test_symbolize $(T)/test_json_read $(T)/test_diff $(T)/test_unwind $(T)/test_lockorder $(CLI) $(T)/libvgctor.so $(T)/ctor $(BUILD)/gen-env-doc $(BUILD)/gen-man $(BUILD)/gen-hook-doc $(BUILD)/gen-report-doc $(INTEG_BINS) $(T)/libnext.so

# Fuzzing (libFuzzer, clang): `make fuzz` runs each target FUZZ_SECONDS; `make test` replays the seed corpus and
# the regressions through the same targets built with gcc and ASan+UBSan (tests/fuzz/README.md).
FUZZ_TARGETS := config json path diff
FUZZ_SECONDS ?= 60
FUZZ_SRCS_config := $(CONFIG_SRCS) report/path.c
FUZZ_SRCS_path := $(CONFIG_SRCS) report/path.c
FUZZ_SRCS_json := $(REPORT_READ_SRCS) $(REPORT_WRITE_SRCS) $(CONFIG_SRCS)
FUZZ_SRCS_diff := $(DIFF_SRCS) $(REPORT_READ_SRCS) $(REPORT_WRITE_SRCS) $(CONFIG_SRCS)
FUZZ_REPLAY := $(FUZZ_TARGETS:%=$(T)/fuzz_%_replay)
$(T)/fuzz_%_replay: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h tests/fuzz/replay.h $(DIFF_SRCS) $(REPORT_READ_SRCS) \
		$(REPORT_WRITE_SRCS) report/path.c $(CONFIG_SRCS) $(HEADERS) cli/diff.h cli/diff_compare.h
	@mkdir -p $(T)
	$(CC) $(TEST_CFLAGS) -fsanitize=address,undefined -fno-sanitize-recover=all -DVG_FUZZ_REPLAY -I. -o $@ $< \
		$(FUZZ_SRCS_$*) -ldl
TEST_BINS += $(FUZZ_REPLAY)

fuzz:
	@FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/fuzz/run.sh

# The double is checked first (its output in $(T)/fakecuda_selftest.log), then the suite runs either way; the last
# line stays the suite's total.
test: $(LIB) $(TEST_BINS)
	@st=0; $(T)/fakecuda_selftest >$(T)/fakecuda_selftest.log 2>&1 || st=1; \
	echo "== fakecuda selftest: $$(tail -n 1 $(T)/fakecuda_selftest.log)"; \
	[ $$st = 0 ] || grep '^FAIL' $(T)/fakecuda_selftest.log; \
	bash tests/run.sh && exit $$st

demo:
	@bash scripts/demo.sh

$(BUILD)/quota_demo: examples/quota_demo.c
	@mkdir -p $(BUILD)
	$(CC) $(TEST_CFLAGS) -I$(CUDA_HOME)/include -o $@ $< -ldl

$(T)/bench_capture: bench/bench_capture.c $(FAKE)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -I$(CUDA_HOME)/include -o $@ $< -L$(T) -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN'

bench: $(LIB) $(FAKE) $(T)/bench_capture
	@bash bench/run_capture.sh

# The full CPU benchmark of issue 6: per-call cost with and without the preload, callgrind counts, memory per
# allocation, report time and cost against the number of live allocations (docs/PERFORMANCE.md).
$(T)/bench_cpu: bench/bench_cpu.c $(FAKE)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -pthread -I$(CUDA_HOME)/include -o $@ $< -L$(T) -l:libcuda.so.1 -ldl -Wl,-rpath,'$$ORIGIN'

bench-cpu: $(LIB) $(FAKE) $(T)/bench_cpu
	@bash bench/run_cpu.sh

# The GPU benchmarks of the issue (bench/run_gpu.sh), on a GPU machine: pair time, PyTorch and JAX step time and
# start-up, with and without the preload. Uses the prebuilt $(BUILD)/libvramguard.so as it is (no rebuild there).
bench-gpu:
	@VG_LIB=$(CURDIR)/$(BUILD)/libvramguard.so bash bench/run_gpu.sh $(BUILD)/bench-gpu.txt
.PHONY: bench-gpu

clean:
	rm -rf $(BUILD)

.PHONY: all test demo bench bench-cpu install clean fuzz
.SECONDARY:

# ---- sanitizers: `make test-asan` (ASan + UBSan), `make test-tsan` ----
# Each builds everything (library, test double, unit tests, integration programs, command) with the sanitizer into
# its own BUILD directory and runs tests/run.sh there. VG_SAN is the extra flag set: it reaches the library's
# objects and link (CFLAGS, VG_LDFLAGS), the command, and every test binary (TEST_CFLAGS). A sanitized library
# preloaded into a process needs the sanitizer's runtime loaded first: run.sh puts VG_SAN_PRELOAD in front of every
# LD_PRELOAD it sets. A finding fails its check: the sanitizer exits 66 and writes its report to stderr.
# gcc by default; CC=clang works too (shared runtimes, -shared-libsan; use another ASAN_BUILD / TSAN_BUILD).
# Checks that run differently under a sanitizer, and why: tests/san/README.md.
ifneq ($(strip $(VG_SAN)),)
override CFLAGS += $(VG_SAN)
VG_LDFLAGS += $(VG_SAN)
TEST_CFLAGS += $(VG_SAN)
endif
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
VG_CC_CLANG = $(findstring clang,$(shell $(CC) --version 2>/dev/null | head -n 1))
VG_SAN_RT = $(shell $(CC) -print-file-name=$(if $(VG_CC_CLANG),libclang_rt.$(1)-$(shell uname -m).so,lib$(1).so))
VG_SAN_CLANG = $(if $(VG_CC_CLANG),-shared-libsan -Xlinker -rpath=$(shell $(CC) -print-runtime-dir) \
	-Wno-unused-command-line-argument)
VG_ASAN = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer $(VG_SAN_CLANG) -DVG_LOCK_CHECK
VG_TSAN = -fsanitize=thread -fno-omit-frame-pointer $(VG_SAN_CLANG) -DVG_LOCK_CHECK
SAN_DIR := $(CURDIR)/tests/san
# verify_asan_link_order=0: `vramguard run` writes LD_PRELOAD itself, without the runtime in front (README.md).
VG_ASAN_ENV = ASAN_OPTIONS=halt_on_error=1:exitcode=66:detect_leaks=1:detect_stack_use_after_return=1:$\
strict_string_checks=1:check_initialization_order=1:verify_asan_link_order=0 \
	LSAN_OPTIONS=suppressions=$(SAN_DIR)/lsan.supp:print_suppressions=0 \
	UBSAN_OPTIONS=halt_on_error=1:exitcode=66:print_stacktrace=1
# atexit_sleep_ms: TSan sleeps 1 s in every exiting process by default; the fault campaign alone runs 210 processes.
VG_TSAN_ENV = TSAN_OPTIONS=halt_on_error=1:exitcode=66:second_deadlock_stack=1:atexit_sleep_ms=50:suppressions=$(SAN_DIR)/tsan.supp

# The fuzz replay targets carry their own ASan flags (incompatible with TSan): run.sh skips them under TSan.
test-bins: $(LIB) $(if $(findstring thread,$(VG_SAN)),$(filter-out $(FUZZ_REPLAY),$(TEST_BINS)),$(TEST_BINS))

test-asan:
	@$(MAKE) --no-print-directory BUILD=$(ASAN_BUILD) VG_SAN='$(VG_ASAN)' test-bins
	@env BUILD=$(ASAN_BUILD) VG_SAN='$(VG_ASAN)' VG_SAN_PRELOAD=$(call VG_SAN_RT,asan) $(VG_ASAN_ENV) \
		bash tests/run.sh

test-tsan:
	$(if $(VG_CC_CLANG),$(error test-tsan: clang 14's shared TSan runtime crashes at startup here; use gcc (tests/san/README.md)))
	@$(MAKE) --no-print-directory BUILD=$(TSAN_BUILD) VG_SAN='$(VG_TSAN)' test-bins
	@env BUILD=$(TSAN_BUILD) VG_SAN='$(VG_TSAN)' VG_SAN_PRELOAD=$(call VG_SAN_RT,tsan) $(VG_TSAN_ENV) \
		bash tests/run.sh

.PHONY: test-bins test-asan test-tsan
