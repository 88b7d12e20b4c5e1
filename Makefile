# vramguard: one non-recursive Makefile. `make` builds build/libvramguard.so; `make test` builds and runs the CPU
# suite against the test double of libcuda.so.1 (tests/fakecuda); `make demo` runs the quota demo.
CUDA_HOME ?= /usr/local/cuda
# Build (and lint) over every core unless told otherwise (make -jN or VG_JOBS=N).
VG_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
MAKEFLAGS += -j$(VG_JOBS)
CC ?= cc
CFLAGS ?= -O2 -g
BUILD ?= build

VG_CPPFLAGS := -I. -I$(CUDA_HOME)/include $(if $(UTHASH_INCLUDE),-I$(UTHASH_INCLUDE))
VG_CFLAGS := -std=gnu11 -fPIC -fvisibility=hidden -ftls-model=initial-exec -pthread
VG_LDFLAGS := -shared -Wl,-Bsymbolic-functions -Wl,-z,now -Wl,-soname,libvramguard.so -pthread
# Both the library and the command run on glibc 2.17 and later although built on a new one: every object of
# either is compiled with config/glibc_compat.h force-included (symbol versions pinned to the old ones), and both
# need libdl.so.2 and libpthread.so.0 (DT_NEEDED), where a glibc before 2.34 keeps dlopen, pthread_create & co.
# Named by file: from 2.34 on, -ldl and -lpthread find only empty static archives and add nothing, and the
# library then fails to load in a program that does not link them itself ("undefined symbol: pthread_setspecific,
# version GLIBC_2.2.5" on glibc 2.31). 2.34+ keeps both files as empty stubs, so loading them there costs nothing.
# The command also pins dlsym (the library defines its own) and starts through cli/start.c. tests/sections/docs.sh
# checks both with objdump; tests/containers/sections/30-glibc.sh runs them on glibc 2.31.
VG_LIBS := -Wl,--no-as-needed -l:libdl.so.2 -l:libpthread.so.0
VG_COMPAT := -include config/glibc_compat.h
CLI_COMPAT := $(VG_COMPAT) -DVG_GLIBC_PIN_DLSYM
CLI_LDFLAGS := -Wl,--wrap=__libc_start_main

# Warnings, the same for the library, the command and every test program. `make DEVELOPER=1` makes them errors
# and adds the checks a change must pass: every non-static function declared in a header (-Wmissing-prototypes),
# every format string a literal or checked through __attribute__((format)) (-Wformat=2), no shadowed names
# (-Wshadow). `make test` runs the same flags as a compile-only check (dev-check below); .ci/run builds everything
# with DEVELOPER=1 once.
VG_WARN := -Wall -Wextra
VG_DEV_WARN := -Werror -Wmissing-prototypes -Wformat=2 -Wshadow
ifneq ($(strip $(DEVELOPER)),)
VG_WARN += $(VG_DEV_WARN)
endif
# Every object and test program writes its header dependencies next to itself (.d, included at the end).
DEPFLAGS = -MMD -MP

# ---- source lists: each component's files, named once; the library, the command and the tests use these ----
# Add a new file of a component to its list (config/, interposer/ with its subfolders, and accounting/ are read by
# wildcard).
CONFIG_SRCS := $(wildcard config/*.c)
REGION_SRCS := accounting/region.c accounting/fault.c accounting/region_path.c accounting/region_proc.c \
	accounting/region_lock.c accounting/region_slots.c accounting/region_charge.c accounting/region_limit.c \
	accounting/region_usage.c
# Directory scans and copies of regions for `top` / `limit` (stat, getpwuid): the command's, never the library's.
REGION_SCAN_SRCS := accounting/region_scan.c
QUOTA_SRCS := accounting/quota.c accounting/table.c
UNWIND_SRCS := accounting/unwind.c accounting/sites.c accounting/pyframes.c
TIMELINE_SRCS := accounting/timeline.c
GROWTH_SRCS := accounting/growth.c
THROTTLE_SRCS := accounting/throttle.c
GPU_SHARE_SRCS := accounting/gpu_share.c
ACCOUNTING_SRCS := $(filter-out $(REGION_SCAN_SRCS),$(sort $(wildcard accounting/*.c) $(REGION_SRCS) $(QUOTA_SRCS) \
	$(UNWIND_SRCS)))
NVML_SRCS := interposer/nvml/nvml.c
INTERPOSER_SRCS := $(wildcard interposer/*.c interposer/cuda/*.c interposer/nvml/*.c)
# report/: the writer (text and JSON: library, command, tests), the reader of JSON reports (command, tests), and
# the library's own logging and symbolizer.
REPORT_SRCS := report/strbuf.c report/strpool.c report/json_out.c report/schema.c report/report.c report/text.c \
	report/json_write.c report/srcline.c report/text_growth.c report/allocator.c
REPORT_READ_SRCS := report/json.c report/json_read.c
# The command's other forms of a report: the HTML page and its SVG charts, the folded and speedscope exports.
REPORT_VIEW_SRCS := report/flame.c report/speedscope.c report/html.c report/html_svg.c report/html_out.c
# Expanding VRAMGUARD_REPORT's template into a file name (the library; config/ only validates the template).
PATH_SRCS := report/path.c
LOG_SRCS := report/log.c
SYMBOLIZE_SRCS := report/symbolize.c
DIFF_SRCS := cli/diff.c cli/diff_compare.c cli/diff_growth.c
CLI_ONLY_SRCS := $(filter-out $(DIFF_SRCS),$(wildcard cli/*.c))

LIB_SRCS := $(INTERPOSER_SRCS) $(ACCOUNTING_SRCS) $(CONFIG_SRCS) $(LOG_SRCS) $(REPORT_SRCS) $(PATH_SRCS) \
	$(SYMBOLIZE_SRCS)
LIB_ASM := interposer/dlsym.S
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o) $(LIB_ASM:%.S=$(BUILD)/obj/%.o)
LIB := $(BUILD)/libvramguard.so

CLI := $(BUILD)/vramguard
CLI_SRCS := $(CLI_ONLY_SRCS) $(DIFF_SRCS) $(REPORT_READ_SRCS) $(REPORT_VIEW_SRCS) $(REPORT_SRCS) $(CONFIG_SRCS) $(REGION_SRCS) \
	$(REGION_SCAN_SRCS)
CLI_OBJS := $(CLI_SRCS:%.c=$(BUILD)/obj-cli/%.o)
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
	@test -f /usr/include/elfutils/libdwfl.h || { echo "error: elfutils/libdwfl.h not found: install Debian's \
libdw-dev (apt-get install libdw-dev, or bash scripts/setup.sh); the command loads libdw only for --lines" >&2; exit 1; }
	@mkdir -p $(BUILD) && touch $@

$(BUILD)/obj/%.o: %.c Makefile | $(BUILD)/.deps-ok
	@mkdir -p $(dir $@)
	$(CC) $(VG_CPPFLAGS) $(VG_COMPAT) $(VG_CFLAGS) $(VG_WARN) $(CFLAGS) $(DEPFLAGS) -c -o $@ $<

$(BUILD)/obj/%.o: %.S Makefile
	@mkdir -p $(dir $@)
	$(CC) $(VG_CPPFLAGS) -fPIC $(DEPFLAGS) -c -o $@ $<

$(LIB): $(LIB_OBJS)
	$(CC) $(VG_LDFLAGS) -o $@ $^ $(VG_LIBS)

# The command: an ordinary program (it may exit, use stdio); it shares the config parser and the report code.
$(BUILD)/obj-cli/%.o: %.c Makefile | $(BUILD)/.deps-ok
	@mkdir -p $(dir $@)
	$(CC) $(VG_CPPFLAGS) $(CLI_COMPAT) -std=gnu11 -pthread $(VG_WARN) $(CFLAGS) $(DEPFLAGS) -c -o $@ $<
$(CLI): $(CLI_OBJS)
	$(CC) $(CFLAGS) $(CLI_LDFLAGS) -o $@ $^ -pthread $(VG_LIBS)

install: $(LIB) $(CLI)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0755 $(CLI) $(DESTDIR)$(PREFIX)/bin/vramguard
	install -m 0755 $(LIB) $(DESTDIR)$(PREFIX)/lib/libvramguard.so
	install -m 0644 docs/vramguard.1 $(DESTDIR)$(PREFIX)/share/man/man1/vramguard.1

# `make deb`: $(BUILD)/vramguard_VERSION-1_amd64.deb (dpkg-deb; scripts/deb.sh says what goes where), then lintian on
# it where lintian is installed (clean but for the overrides in scripts/deb/lintian-overrides, each with its reason).
deb: $(LIB) $(CLI)
	@deb=$$(bash scripts/deb.sh $(BUILD)) && echo "== $$deb: $$(stat -c %s $$deb) bytes" && \
	if command -v lintian >/dev/null; then lintian --fail-on warning,error -i $$deb && echo "== lintian: clean"; \
	else echo "== lintian not installed (bash scripts/setup.sh installs it): not checked"; fi
.PHONY: deb

# ---- tests ----
TB := $(BUILD)/tests
TEST_CFLAGS := -std=gnu11 $(VG_WARN) -O1 -g -pthread
FAKE := $(TB)/libcuda.so.1
# A test program is its main source compiled and linked in one step (dependencies in $@.d) with the objects of the
# components it tests, each compiled once into $(TOBJ) with the tests' flags: $(call tobj,SRCS).
TOBJ := $(TB)/obj
tobj = $(patsubst %.c,$(TOBJ)/%.o,$(1))
TEST_CC = $(CC) $(TEST_CFLAGS) -MMD -MP -MF $@.d
$(TOBJ)/%.o: %.c Makefile | $(BUILD)/.deps-ok
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) $(DEPFLAGS) -I. -I$(CUDA_HOME)/include -c -o $@ $<

$(FAKE): tests/fakecuda/fakecuda.c Makefile | $(BUILD)/.deps-ok
	@mkdir -p $(TB)
	$(TEST_CC) -fPIC -shared -Wl,-Bsymbolic -Wl,-soname,libcuda.so.1 -I$(CUDA_HOME)/include \
		-o $@ tests/fakecuda/fakecuda.c

# The test double of NVML (tests/fakecuda/fakenvml.h), next to the fake libcuda; libnvidia-ml.so is the name
# nvidia-smi dlopens. nvml-r580/ holds a driver before R615, without nvmlDeviceGetMemoryLimits_v1.
FAKE_NVML := $(TB)/libnvidia-ml.so.1
FAKE_NVML_R580 := $(TB)/nvml-r580/libnvidia-ml.so.1
$(FAKE_NVML): tests/fakecuda/fakenvml.c Makefile
	@mkdir -p $(TB)
	$(TEST_CC) -fPIC -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ $< -ldl
	ln -sf libnvidia-ml.so.1 $(TB)/libnvidia-ml.so
$(FAKE_NVML_R580): tests/fakecuda/fakenvml.c Makefile
	@mkdir -p $(dir $@)
	$(TEST_CC) -DFAKENVML_R580 -fPIC -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ $< -ldl

# A stranger's libcuda.so.1 and libnvidia-ml.so.1 (tests/fakecuda/foreign.c), which the env section puts on
# LD_LIBRARY_PATH as a CUDA image does: the suite must not load them.
FOREIGN := $(TB)/foreign/libcuda.so.1 $(TB)/foreign/libnvidia-ml.so.1
$(TB)/foreign/libcuda.so.1: tests/fakecuda/foreign.c Makefile | $(BUILD)/.deps-ok
	@mkdir -p $(dir $@)
	$(TEST_CC) -fPIC -shared -Wl,-soname,libcuda.so.1 -I$(CUDA_HOME)/include -o $@ $<
$(TB)/foreign/libnvidia-ml.so.1: tests/fakecuda/foreign.c Makefile
	@mkdir -p $(dir $@)
	$(TEST_CC) -DFOREIGN_NVML -fPIC -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ $<

# The double's own checks (tests/fakecuda/selftest.c); the unit section runs it.
$(TB)/fakecuda_selftest: tests/fakecuda/selftest.c $(FAKE)
	$(TEST_CC) -I$(CUDA_HOME)/include -o $@ $< -L$(TB) -l:libcuda.so.1 -ldl -Wl,-rpath,'$$ORIGIN'

# Unit tests: the main source, then the components' objects.
$(TB)/test_config: tests/unit/test_config.c $(call tobj,$(CONFIG_SRCS) $(PATH_SRCS))
$(TB)/test_accounting: tests/unit/test_accounting.c $(call tobj,$(QUOTA_SRCS) $(REGION_SRCS) $(CONFIG_SRCS))
$(TB)/test_region: tests/unit/test_region.c $(call tobj,$(REGION_SRCS) $(CONFIG_SRCS))
$(TB)/test_report: tests/unit/test_report.c $(call tobj,$(REPORT_SRCS) $(CONFIG_SRCS))
$(TB)/test_allocator: tests/unit/test_allocator.c $(call tobj,$(REPORT_SRCS) $(CONFIG_SRCS))
$(TB)/test_symbolize: tests/unit/test_symbolize.c $(call tobj,$(SYMBOLIZE_SRCS) report/schema.c report/strpool.c)
$(TB)/test_json_read: tests/unit/test_json_read.c $(call tobj,$(REPORT_READ_SRCS) $(REPORT_SRCS) $(CONFIG_SRCS))
$(TB)/test_diff: tests/unit/test_diff.c $(call tobj,$(DIFF_SRCS) $(REPORT_SRCS) $(CONFIG_SRCS))
$(TB)/test_timeline: tests/unit/test_timeline.c $(call tobj,$(TIMELINE_SRCS))
$(TB)/test_growth: tests/unit/test_growth.c $(call tobj,$(GROWTH_SRCS))
$(TB)/test_throttle: tests/unit/test_throttle.c $(call tobj,$(THROTTLE_SRCS))
$(TB)/test_gpu_share: tests/unit/test_gpu_share.c $(call tobj,$(GPU_SHARE_SRCS))
UNIT_PLAIN := test_config test_accounting test_region test_report test_allocator test_symbolize test_json_read test_diff \
	test_timeline test_growth test_throttle test_gpu_share
$(UNIT_PLAIN:%=$(TB)/%):
	@mkdir -p $(TB)
	$(TEST_CC) -I. -o $@ $< $(filter %.o,$^) -ldl

# Our own NVML access (interposer/nvml/nvml.c) against the test double of NVML, found through the rpath: with R615's
# limits, as a driver before R615, and with no NVML at all.
$(TB)/test_nvml: tests/unit/test_nvml.c $(call tobj,$(NVML_SRCS)) $(FAKE) $(FAKE_NVML)
	$(TEST_CC) -I. -I$(CUDA_HOME)/include -o $@ $< $(filter %.o,$^) -L$(TB) -l:libcuda.so.1 -ldl \
		-Wl,-rpath,'$$ORIGIN'
$(TB)/test_nvml_r580: tests/unit/test_nvml.c $(call tobj,$(NVML_SRCS)) $(FAKE) $(FAKE_NVML_R580)
	$(TEST_CC) -DTEST_NVML_R580 -I. -I$(CUDA_HOME)/include -o $@ $< $(filter %.o,$^) -L$(TB) -l:libcuda.so.1 -ldl \
		-Wl,-rpath,'$$ORIGIN/nvml-r580:$$ORIGIN'
$(TB)/test_nvml_missing: tests/unit/test_nvml.c $(call tobj,$(NVML_SRCS))
	@mkdir -p $(TB)
	$(TEST_CC) -DTEST_NVML_MISSING -I. -o $@ $< $(filter %.o,$^) -ldl -Wl,-rpath,'$$ORIGIN/no-nvml-here'

# The call-site unwinder against libgcc (tests/unit/test_unwind.c). unwind.c goes into a shared library, as in
# production, so that its frames can be skipped by address range; the test's own frames are built without frame
# pointers, and two dlopened libraries differ only in frame size (one may land where the other was).
$(TB)/obj-unwind/%.o: %.c Makefile | $(BUILD)/.deps-ok
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) -O2 -fPIC $(DEPFLAGS) -I. -c -o $@ $<
$(TB)/libvgunwind.so: $(UNWIND_SRCS:%.c=$(TB)/obj-unwind/%.o)
	$(CC) $(TEST_CFLAGS) -O2 -fPIC -shared -o $@ $^ -ldl
$(TB)/libvgunw_a.so $(TB)/libvgunw_b.so: $(TB)/libvgunw_%.so: tests/unit/unwind_lib.c
	@mkdir -p $(TB)
	$(TEST_CC) -O2 -fomit-frame-pointer -fPIC -shared -DVGU_LIB_$* -o $@ $<
$(TB)/test_unwind: tests/unit/test_unwind.c $(TB)/libvgunwind.so $(TB)/libvgunw_a.so $(TB)/libvgunw_b.so
	$(TEST_CC) -O2 -fomit-frame-pointer -I. -o $@ $< -L$(TB) -l:libvgunwind.so -ldl -Wl,-rpath,'$$ORIGIN'

$(BUILD)/gen-hook-doc: scripts/gen-hook-doc.c | $(BUILD)/.deps-ok
	$(TEST_CC) -I. -I$(CUDA_HOME)/include -o $@ $<
$(BUILD)/gen-env-doc: scripts/gen-env-doc.c $(call tobj,$(CONFIG_SRCS))
	@mkdir -p $(BUILD)
	$(TEST_CC) -I. -o $@ $< $(filter %.o,$^)
$(BUILD)/gen-man: scripts/gen-man.c $(call tobj,$(CONFIG_SRCS))
	@mkdir -p $(BUILD)
	$(TEST_CC) -I. -o $@ $< $(filter %.o,$^)
# One source per compiler run: the dependency file (-MMD) then names every header the generator includes (two .c files
# in one run left only the last one's, and a changed schema header did not rebuild gen-report-doc).
$(BUILD)/gen-report-doc: scripts/gen-report-doc.c $(call tobj,scripts/doc_tables.c report/schema.c report/strpool.c)
	@mkdir -p $(BUILD)
	$(TEST_CC) -I. -o $@ $< $(filter %.o,$^)
$(BUILD)/gen-metrics-doc: scripts/gen-metrics-doc.c $(call tobj,scripts/doc_tables.c) | $(BUILD)/.deps-ok
	@mkdir -p $(BUILD)
	$(TEST_CC) -I. -o $@ $< $(filter %.o,$^)
# docs/metrics.md's tables and the contract docs/metrics.json, from cli/metrics_table.h (section docs checks both).
metrics-doc: $(BUILD)/gen-metrics-doc
	$(BUILD)/gen-metrics-doc -i docs/metrics.md
	$(BUILD)/gen-metrics-doc --json >docs/metrics.json
.PHONY: metrics-doc

# The lock-order check (accounting/lockorder.h, header only), compiled in whatever the build.
$(TB)/test_lockorder: tests/unit/test_lockorder.c
	@mkdir -p $(TB)
	$(TEST_CC) -I. -o $@ $<

# Integration programs: linked against the test double (-lcuda route) or using dlopen (dlsym route).
INTEG_SRCS := $(filter-out tests/integration/nvml_probe.c,$(wildcard tests/integration/*.c))
INTEG_BINS := $(INTEG_SRCS:tests/integration/%.c=$(TB)/%) $(TB)/nvml_link $(TB)/nvml_smi
# NVML read every way there is: linked against the fake NVML and libcuda (a framework), or dlopen only (nvidia-smi).
$(TB)/nvml_link: tests/integration/nvml_probe.c $(FAKE) $(FAKE_NVML)
	$(TEST_CC) -DNVML_LINKED -I. -I$(CUDA_HOME)/include -o $@ $< -L$(TB) -l:libnvidia-ml.so.1 \
		-l:libcuda.so.1 -ldl -Wl,-rpath,'$$ORIGIN'
$(TB)/nvml_smi: tests/integration/nvml_probe.c
	$(TEST_CC) -I. -I$(CUDA_HOME)/include -o $@ $< -ldl
# Makes regions and slots for the `top` / `limit` tests without CUDA, through region.h only.
$(TB)/region_tool: tests/integration/region_tool.c $(call tobj,$(REGION_SRCS) $(CONFIG_SRCS))
	@mkdir -p $(TB)
	$(TEST_CC) -I. -o $@ $< $(filter %.o,$^)
# The command's HTTP server with a handler of the test's own (tests/sections/http.sh): answers larger than a socket's
# buffers, a count of what it served.
HTTP_SRCS := cli/http.c cli/http_req.c cli/cli.c report/strbuf.c
$(TB)/http_serve: tests/integration/http_serve.c $(call tobj,$(HTTP_SRCS) $(CONFIG_SRCS))
	@mkdir -p $(TB)
	$(TEST_CC) -I. -o $@ $< $(filter %.o,$^)
# Pokes at a region file through its layout only (a lock held by a stopped member, a poisoned total).
$(TB)/region_poke: tests/integration/region_poke.c
	@mkdir -p $(TB)
	$(TEST_CC) -I. -o $@ $<
$(TB)/dl_%: tests/integration/dl_%.c
	$(TEST_CC) -I. -I$(CUDA_HOME)/include -o $@ $< -ldl
$(TB)/nocuda: tests/integration/nocuda.c
	$(TEST_CC) -I. -I$(CUDA_HOME)/include -o $@ $< -ldl -lm
$(TB)/rtld_next: tests/integration/rtld_next.c
	$(TEST_CC) -o $@ $<
$(TB)/%: tests/integration/%.c $(FAKE)
	$(TEST_CC) -I. -I$(CUDA_HOME)/include -o $@ $< -L$(TB) -l:libcuda.so.1 -ldl -Wl,-rpath,'$$ORIGIN'

# tests/integration/python/sites.py's C thread, called through ctypes.
$(TB)/libvgcthread.so: tests/integration/python/cthread.c $(FAKE)
	$(TEST_CC) -fPIC -shared -I$(CUDA_HOME)/include -o $@ $< -L$(TB) -l:libcuda.so.1 -pthread

# Looks like CPython to the library: its symbols must be visible to dlsym(RTLD_DEFAULT).
$(TB)/pyfake: tests/integration/pyfake.c $(FAKE)
	$(TEST_CC) -rdynamic -I. -I$(CUDA_HOME)/include -o $@ $< -L$(TB) -l:libcuda.so.1 -ldl -Wl,-rpath,'$$ORIGIN'
# The Python line-table decoder against each CPython's own answers (tests/sections/python.sh).
$(TB)/pylines: tests/integration/python/pylines.c $(call tobj,accounting/pyframes.c)
	@mkdir -p $(TB)
	$(TEST_CC) -I. -o $@ $< $(filter %.o,$^) -ldl

# A program and a library that call CUDA from their constructors.
$(TB)/libvgctor.so: tests/integration/ctor/lib.c $(FAKE)
	$(TEST_CC) -fPIC -shared -I$(CUDA_HOME)/include -o $@ $< -L$(TB) -l:libcuda.so.1
$(TB)/ctor: tests/integration/ctor/app.c $(TB)/libvgctor.so $(FAKE)
	$(TEST_CC) -I. -I$(CUDA_HOME)/include -o $@ $< -L$(TB) -l:libvgctor.so -l:libcuda.so.1 -ldl -Wl,-rpath,'$$ORIGIN'

# Source lines (tests/sections/lines.sh): a program with known lines, calling a library that has no build ID.
$(TB)/libvgnoid.so: tests/integration/noid/lib.c $(FAKE)
	$(TEST_CC) -fPIC -shared -Wl,--build-id=none -I$(CUDA_HOME)/include -o $@ $< -L$(TB) -l:libcuda.so.1
$(TB)/srclines: tests/integration/srclines.c $(TB)/libvgnoid.so $(FAKE)
	$(TEST_CC) -I. -I$(CUDA_HOME)/include -o $@ $< -L$(TB) -l:libvgnoid.so -l:libcuda.so.1 -ldl -Wl,-rpath,'$$ORIGIN'

# A library whose DWARF sends libdw to an alt file of its choosing, by itself (lines.sh: the resolution's deadline).
$(TB)/libvgaltlink.so: tests/integration/altlink/lib.S
	@mkdir -p $(TB)
	$(CC) -shared -nostdlib -Wl,--build-id -o $@ $<

# libdw with one function that dies of SIGBUS (lines.sh: a crash in libdw ends the resolver, not the command).
$(TB)/libvgdwbus.so: tests/integration/dwbus/lib.c
	$(TEST_CC) -fPIC -shared -o $@ $< -Wl,--no-as-needed -l:libdw.so.1

# A second preload library that uses dlsym(RTLD_NEXT, ...): proves our dlsym keeps "next" the caller's.
$(TB)/libnext.so: tests/integration/libnext/next.c
	$(TEST_CC) -fPIC -shared -o $@ $< -ldl

# The owner of a region file truncating it under the command at the worst moment (tests/sections/attack.sh).
$(TB)/libvgshrink.so: tests/integration/shrink/shim.c
	$(TEST_CC) -fPIC -shared -o $@ $< -ldl

TEST_BINS := $(FAKE) $(FAKE_NVML) $(FAKE_NVML_R580) $(FOREIGN) $(BUILD)/quota_demo $(TB)/fakecuda_selftest $(TB)/test_config $(TB)/test_accounting $(TB)/test_region $(TB)/test_nvml $(TB)/test_nvml_r580 $(TB)/test_nvml_missing $(TB)/test_report $(TB)/test_allocator $(TB)/test_symbolize $(TB)/test_json_read $(TB)/test_diff $(TB)/test_timeline $(TB)/test_growth $(TB)/test_throttle $(TB)/test_gpu_share $(TB)/test_unwind $(TB)/test_lockorder $(CLI) $(TB)/libvgctor.so $(TB)/libvgcthread.so $(TB)/pylines $(TB)/ctor $(TB)/libvgnoid.so $(TB)/libvgaltlink.so $(TB)/libvgdwbus.so $(BUILD)/gen-env-doc $(BUILD)/gen-man $(BUILD)/gen-hook-doc $(BUILD)/gen-report-doc $(BUILD)/gen-metrics-doc $(INTEG_BINS) $(TB)/libnext.so $(TB)/libvgshrink.so

# Fuzzing (libFuzzer, clang): `make fuzz` runs each target FUZZ_SECONDS; `make test` replays the seed corpus and
# the regressions through the same targets built with gcc and ASan+UBSan (tests/fuzz/README.md). Their component
# objects are built with those flags too, in $(TB)/obj-fuzz.
FUZZ_TARGETS := config json path diff http webhook
FUZZ_SECONDS ?= 60
FUZZ_SRCS_config := $(CONFIG_SRCS) $(PATH_SRCS)
FUZZ_SRCS_path := $(CONFIG_SRCS) $(PATH_SRCS)
FUZZ_SRCS_json := $(REPORT_READ_SRCS) $(REPORT_SRCS) $(CONFIG_SRCS)
FUZZ_SRCS_diff := $(DIFF_SRCS) $(REPORT_READ_SRCS) $(REPORT_SRCS) $(CONFIG_SRCS)
FUZZ_SRCS_http := cli/http_req.c
FUZZ_SRCS_webhook := cli/autoscale_payload.c report/json.c
FUZZ_REPLAY := $(FUZZ_TARGETS:%=$(TB)/fuzz_%_replay)
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
$(TB)/obj-fuzz/%.o: %.c Makefile | $(BUILD)/.deps-ok
	@mkdir -p $(dir $@)
	$(CC) $(TEST_CFLAGS) $(FUZZ_SAN) $(DEPFLAGS) -I. -c -o $@ $<
$(foreach t,$(FUZZ_TARGETS),$(eval $(TB)/fuzz_$(t)_replay: $(patsubst %.c,$(TB)/obj-fuzz/%.o,$(FUZZ_SRCS_$(t)))))
$(TB)/fuzz_%_replay: tests/fuzz/fuzz_%.c
	@mkdir -p $(TB)
	$(TEST_CC) $(FUZZ_SAN) -DVG_FUZZ_REPLAY -I. -o $@ $< $(filter %.o,$^) -ldl
TEST_BINS += $(FUZZ_REPLAY)

fuzz:
	@FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/fuzz/run.sh

# The sources a fuzz target links, for tests/fuzz/run.sh (one list: the replays above use the same).
fuzz-srcs-%:
	@echo $(FUZZ_SRCS_$*)

# ---- the Python wheel (python/; docs/install.md): `make wheel` builds $(WHEEL), the package vramguard with the
# library and the command as package data (vramguard/_bin/, where the command finds the library next to itself)
# and the console script `vramguard`. Built from a staging copy with Debian's setuptools and wheel under Debian's
# own python3 (not whatever python3 comes first on PATH), no network; tests/sections/wheel.sh checks the tag (glibc
# symbol versions, NEEDED entries) and installs it into a fresh virtual environment.
VG_VERSION := $(shell sed -n 's/^\#define VG_VERSION "\([^"]*\)".*/\1/p' config/config.h)
WHEEL := $(BUILD)/vramguard-$(VG_VERSION)-py3-none-manylinux2014_x86_64.whl
WHEEL_PYTHON ?= /usr/bin/python3
WHEEL_SRC := $(BUILD)/wheel/src
$(WHEEL): $(LIB) $(CLI) python/setup.py $(wildcard python/vramguard/*.py)
	@$(WHEEL_PYTHON) -c 'import setuptools, wheel' 2>/dev/null || { echo "error: $(WHEEL_PYTHON) has no setuptools \
or wheel: install Debian's python3-setuptools and python3-wheel (bash scripts/setup.sh)" >&2; exit 1; }
	rm -rf $(BUILD)/wheel && mkdir -p $(WHEEL_SRC)/vramguard/_bin
	cp python/setup.py $(WHEEL_SRC)/ && cp python/vramguard/*.py $(WHEEL_SRC)/vramguard/
	install -m 0755 $(CLI) $(LIB) $(WHEEL_SRC)/vramguard/_bin/
	cd $(WHEEL_SRC) && VRAMGUARD_VERSION=$(VG_VERSION) $(WHEEL_PYTHON) setup.py -q bdist_wheel -d $(abspath $(BUILD))/wheel \
		>../setup.log 2>&1 || { cat ../setup.log >&2; exit 1; }
	mv $(BUILD)/wheel/$(notdir $@) $@
wheel: $(WHEEL)
.PHONY: wheel
# make test builds it for that section (not in a sanitizer's build: the section skips there).
TEST_BINS += $(if $(strip $(VG_SAN)),,$(WHEEL))

# dev-check: every C file of the library, the command and the tests compiled with the developer warnings as
# errors, -fsyntax-only (no code generated: a fraction of a build's time on 2 cores), each file again only when it
# or a header it includes changed. `make test` runs it; .ci/run also builds everything with DEVELOPER=1 once, which
# adds the warnings only the optimizer finds.
DEV_CHECK := $(BUILD)/dev-check
DEV_LIB_SRCS := $(LIB_SRCS)
DEV_CLI_SRCS := $(filter-out $(LIB_SRCS),$(CLI_SRCS))
DEV_TEST_SRCS := $(filter-out $(LIB_SRCS) $(CLI_SRCS),$(sort $(wildcard tests/unit/*.c tests/integration/*.c \
	tests/integration/*/*.c tests/fakecuda/*.c tests/fuzz/*.c scripts/*.c)) bench/bench_capture.c bench/bench_cpu.c \
	bench/bench_growth.c bench/bench_growth_app.c examples/quota_demo.c)
DEV_CHECKS := $(patsubst %.c,$(DEV_CHECK)/%.ok,$(DEV_LIB_SRCS) $(DEV_CLI_SRCS) $(DEV_TEST_SRCS))
$(patsubst %.c,$(DEV_CHECK)/%.ok,$(DEV_LIB_SRCS)): DEV_FLAGS = $(VG_CPPFLAGS) $(VG_COMPAT) $(VG_CFLAGS)
$(patsubst %.c,$(DEV_CHECK)/%.ok,$(DEV_CLI_SRCS)): DEV_FLAGS = $(VG_CPPFLAGS) $(CLI_COMPAT) -std=gnu11 -pthread
$(patsubst %.c,$(DEV_CHECK)/%.ok,$(DEV_TEST_SRCS)): DEV_FLAGS = -std=gnu11 -pthread -I. -I$(CUDA_HOME)/include
$(DEV_CHECK)/%.ok: %.c Makefile | $(BUILD)/.deps-ok
	@mkdir -p $(dir $@)
	@$(CC) $(DEV_FLAGS) -Wall -Wextra $(VG_DEV_WARN) -fsyntax-only -MMD -MP -MF $@.d -MT $@ $< && touch $@
dev-check: $(DEV_CHECKS)
	@echo "== make DEVELOPER=1 warnings (compile-only): $(words $(DEV_CHECKS)) files clean"

# shellcheck on every shell script (the tests' sourced parts carry "# shellcheck shell=bash"), at severity
# warning: what is likely a bug, not style. Findings where the code is right carry a disable comment with a reason.
# Each script again only when it or a sourced part (any of them: -x follows them) changed since it was last clean
# (a stamp per script under $(BUILD)/shellcheck): `make test` checks what a change touched, a fresh clone (CI)
# checks all of them.
SHELL_SCRIPTS := $(sort $(wildcard *.sh */*.sh */*/*.sh */*/*/*.sh) .ci/run)
SHELL_PARTS := $(shell grep -l '^\# shellcheck shell=bash' $(SHELL_SCRIPTS) 2>/dev/null)
SHELL_CHECKS := $(SHELL_SCRIPTS:%=$(BUILD)/shellcheck/%.ok)
$(BUILD)/shellcheck/%.ok: % $(SHELL_PARTS)
	@command -v shellcheck >/dev/null || { echo "error: shellcheck not found: install it (bash scripts/setup.sh)" >&2; \
		exit 1; }
	@mkdir -p $(dir $@)
	@shellcheck -x -S warning $< && touch $@
shellcheck: $(SHELL_CHECKS)
	@echo "== shellcheck: $(words $(SHELL_SCRIPTS)) scripts clean"

# `make test`: the lint steps above (what changed since they last passed), then tests/run.sh: every section of
# tests/sections/ in parallel; its last line is the total. `make test T=nvml` (T=a,b: several) runs those sections
# only, without the lint steps; `tests/run.sh --list` names them. The build and the lint run in parallel over the
# cores (make's -j, VG_JOBS, default: every core), as do the sections (tests/run.sh -j, VG_TEST_JOBS).
comma := ,
test: $(if $(T),,dev-check shellcheck) $(LIB) $(TEST_BINS)
	@bash tests/run.sh $(subst $(comma), ,$(T))

# vramguard in real containers (tests/containers/run.sh): podman + runc as root, and Debian's Docker engine on a
# daemon of its own, base images bootstrapped from the Debian mirror; one skip, with the reason, where no container
# runtime can run. .ci/run runs it whole; T=deb,docker runs those sections alone.
test-containers: $(LIB) $(TEST_BINS)
	@bash tests/containers/run.sh $(subst $(comma), ,$(T))

demo:
	@bash scripts/demo.sh

# A shell where vramguard can be tried by hand: build/ on PATH, the test double on LD_LIBRARY_PATH without a GPU.
try:
	@bash scripts/try.sh

$(BUILD)/quota_demo: examples/quota_demo.c
	@mkdir -p $(BUILD)
	$(CC) $(TEST_CFLAGS) -MMD -MP -MF $@.d -I$(CUDA_HOME)/include -o $@ $< -ldl

$(TB)/bench_capture: bench/bench_capture.c $(FAKE)
	$(CC) -std=gnu11 -O2 -g $(VG_WARN) -I$(CUDA_HOME)/include -o $@ $< -L$(TB) -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN'

bench: $(LIB) $(FAKE) $(TB)/bench_capture
	@bash bench/run_capture.sh

# The full CPU benchmark of issue 6: per-call cost with and without the preload, callgrind counts, memory per
# allocation, report time and cost against the number of live allocations (docs/PERFORMANCE.md).
$(TB)/bench_cpu: bench/bench_cpu.c $(FAKE)
	$(CC) -std=gnu11 -O2 -g $(VG_WARN) -pthread -I. -I$(CUDA_HOME)/include -o $@ $< -L$(TB) -l:libcuda.so.1 -ldl -Wl,-rpath,'$$ORIGIN'

bench-cpu: $(LIB) $(FAKE) $(TB)/bench_cpu
	@bash bench/run_cpu.sh

# Issue 29: the growth sampler's cost, a previous library next to this one (bash bench/run_growth.sh OLD_LIB).
$(TB)/bench_growth_app: bench/bench_growth_app.c bench/bench_lat.h $(FAKE)
	$(CC) -std=gnu11 -O2 -g $(VG_WARN) -pthread -I. -I$(CUDA_HOME)/include -o $@ $< -L$(TB) -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN'

bench-growth: $(LIB) $(FAKE) $(TB)/bench_growth_app
	@echo "== built; run: bash bench/run_growth.sh OLD_LIB [NEW_LIB]"

# Issue 29: time and peak memory of `vramguard report` and `diff` on a 231 MB report (docs/PERFORMANCE.md).
bench-bigreport: $(CLI)
	@bash bench/run_bigreport.sh

# The GPU benchmarks of the issue (bench/run_gpu.sh), on a GPU machine: pair time, PyTorch and JAX step time and
# start-up, with and without the preload. Uses the prebuilt $(BUILD)/libvramguard.so as it is (no rebuild there).
bench-gpu:
	@VG_LIB=$(CURDIR)/$(BUILD)/libvramguard.so bash bench/run_gpu.sh $(BUILD)/bench-gpu.txt
.PHONY: bench-gpu

clean:
	rm -rf $(BUILD)

.PHONY: all test test-containers dev-check shellcheck demo try bench bench-cpu bench-growth bench-bigreport install clean fuzz
.SECONDARY:

# ---- sanitizers: `make test-asan` (ASan + UBSan), `make test-tsan` ----
# Each builds everything (library, test double, unit tests, integration programs, command) with the sanitizer into
# its own BUILD directory and runs tests/run.sh there (T=SECTION,...: those only). VG_SAN is the extra flag set: it
# reaches the library's objects and link (CFLAGS, VG_LDFLAGS), the command, and every test binary (TEST_CFLAGS). A
# sanitized library preloaded into a process needs the sanitizer's runtime loaded first: tests/lib/section.sh puts
# VG_SAN_PRELOAD in front of every LD_PRELOAD it sets. A finding fails its check: the sanitizer exits 66 and writes its report to stderr.
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

# The fuzz replay targets carry their own ASan flags (incompatible with TSan): tests/sections/unit.sh skips them
# under TSan.
test-bins: $(LIB) $(if $(findstring thread,$(VG_SAN)),$(filter-out $(FUZZ_REPLAY),$(TEST_BINS)),$(TEST_BINS))

test-asan:
	@$(MAKE) --no-print-directory BUILD=$(ASAN_BUILD) VG_SAN='$(VG_ASAN)' test-bins
	@env BUILD=$(ASAN_BUILD) VG_SAN='$(VG_ASAN)' VG_SAN_PRELOAD=$(call VG_SAN_RT,asan) $(VG_ASAN_ENV) \
		bash tests/run.sh $(subst $(comma), ,$(T))

test-tsan:
	$(if $(VG_CC_CLANG),$(error test-tsan: clang 14's shared TSan runtime crashes at startup here; use gcc (tests/san/README.md)))
	@$(MAKE) --no-print-directory BUILD=$(TSAN_BUILD) VG_SAN='$(VG_TSAN)' test-bins
	@env BUILD=$(TSAN_BUILD) VG_SAN='$(VG_TSAN)' VG_SAN_PRELOAD=$(call VG_SAN_RT,tsan) $(VG_TSAN_ENV) \
		bash tests/run.sh $(subst $(comma), ,$(T))

.PHONY: test-bins test-asan test-tsan

# Header dependencies written by -MMD (none before the first build).
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
