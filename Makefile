# vramguard: one non-recursive Makefile. `make` builds build/libvramguard.so; `make test` builds and runs the CPU
# suite against the test double of libcuda.so.1 (tests/fakecuda); `make demo` runs the quota demo.
CUDA_HOME ?= /usr/local/cuda
CC ?= cc
CFLAGS ?= -O2 -g
BUILD ?= build

VG_CPPFLAGS := -I. -I$(CUDA_HOME)/include $(if $(UTHASH_INCLUDE),-I$(UTHASH_INCLUDE))
VG_CFLAGS := -std=gnu11 -Wall -Wextra -fPIC -fvisibility=hidden -pthread
VG_LDFLAGS := -shared -Wl,-Bsymbolic-functions -Wl,-z,now -Wl,-soname,libvramguard.so -pthread
VG_LIBS := -Wl,--no-as-needed -ldl -lpthread

LIB_SRCS := interposer/init.c interposer/route.c interposer/wrappers.c interposer/snapshot.c \
	interposer/reporter.c accounting/quota.c accounting/table.c accounting/sites.c config/config.c \
	report/log.c report/report.c report/symbolize.c
LIB_ASM := interposer/dlsym.S
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o) $(LIB_ASM:%.S=$(BUILD)/obj/%.o)
LIB := $(BUILD)/libvramguard.so
HEADERS := $(wildcard interposer/*.h accounting/*.h config/*.h report/*.h)

CLI := $(BUILD)/vramguard
CLI_SRCS := cli/vramguard.c cli/diff.c report/json_read.c report/report.c config/config.c
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
$(CLI): $(CLI_SRCS) $(HEADERS) cli/diff.h report/json_read.h Makefile | $(BUILD)/.deps-ok
	$(CC) $(VG_CPPFLAGS) -std=gnu11 -Wall -Wextra $(CFLAGS) -o $@ $(CLI_SRCS) -ldl

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

$(T)/test_config: tests/unit/test_config.c config/config.c config/config.h tests/unit/unit.h
	@mkdir -p $(T)
	$(CC) $(TEST_CFLAGS) -I. -o $@ tests/unit/test_config.c config/config.c

$(T)/test_accounting: tests/unit/test_accounting.c accounting/quota.c accounting/table.c $(HEADERS)
	@mkdir -p $(T)
	$(CC) $(TEST_CFLAGS) -I. -o $@ tests/unit/test_accounting.c accounting/quota.c accounting/table.c

$(T)/test_report: tests/unit/test_report.c report/report.c report/report.h config/config.c config/config.h tests/unit/unit.h
	@mkdir -p $(T)
	$(CC) $(TEST_CFLAGS) -I. -o $@ tests/unit/test_report.c report/report.c config/config.c -ldl

$(T)/test_symbolize: tests/unit/test_symbolize.c report/symbolize.c report/symbolize.h report/report.h tests/unit/unit.h
	@mkdir -p $(T)
	$(CC) $(TEST_CFLAGS) -I. -o $@ tests/unit/test_symbolize.c report/symbolize.c -ldl

$(T)/test_json_read: tests/unit/test_json_read.c report/json_read.c report/json_read.h report/report.c config/config.c tests/unit/unit.h
	@mkdir -p $(T)
	$(CC) $(TEST_CFLAGS) -I. -o $@ tests/unit/test_json_read.c report/json_read.c report/report.c config/config.c

$(T)/test_diff: tests/unit/test_diff.c cli/diff.c cli/diff.h report/report.c config/config.c tests/unit/unit.h
	@mkdir -p $(T)
	$(CC) $(TEST_CFLAGS) -I. -o $@ tests/unit/test_diff.c cli/diff.c report/report.c config/config.c

$(BUILD)/gen-env-doc: scripts/gen-env-doc.c config/config.c config/config.h
	@mkdir -p $(BUILD)
	$(CC) $(TEST_CFLAGS) -I. -o $@ scripts/gen-env-doc.c config/config.c

# Integration programs: linked against the test double (-lcuda route) or using dlopen (dlsym route).
INTEG_SRCS := $(wildcard tests/integration/*.c)
INTEG_BINS := $(INTEG_SRCS:tests/integration/%.c=$(T)/%)
$(T)/dl_%: tests/integration/dl_%.c tests/integration/itest.h
	$(CC) $(TEST_CFLAGS) -I. -I$(CUDA_HOME)/include -o $@ $< -ldl
$(T)/nocuda: tests/integration/nocuda.c tests/integration/itest.h
	$(CC) $(TEST_CFLAGS) -I. -I$(CUDA_HOME)/include -o $@ $< -ldl -lm
$(T)/rtld_next: tests/integration/rtld_next.c
	$(CC) $(TEST_CFLAGS) -o $@ $<
$(T)/%: tests/integration/%.c tests/integration/itest.h tests/fakecuda/fakecuda.h $(FAKE)
	$(CC) $(TEST_CFLAGS) -I. -I$(CUDA_HOME)/include -o $@ $< -L$(T) -l:libcuda.so.1 -ldl -Wl,-rpath,'$$ORIGIN'

# A second preload library that uses dlsym(RTLD_NEXT, ...): proves our dlsym keeps "next" the caller's.
$(T)/libnext.so: tests/integration/libnext/next.c
	$(CC) $(TEST_CFLAGS) -fPIC -shared -o $@ $< -ldl

TEST_BINS := $(FAKE) $(T)/test_config $(T)/test_accounting $(T)/test_report $(T)/test_symbolize $(T)/test_json_read $(T)/test_diff $(CLI) $(BUILD)/gen-env-doc $(INTEG_BINS) $(T)/libnext.so

test: $(LIB) $(TEST_BINS)
	@bash tests/run.sh

demo:
	@bash scripts/demo.sh

$(BUILD)/quota_demo: examples/quota_demo.c
	@mkdir -p $(BUILD)
	$(CC) $(TEST_CFLAGS) -I$(CUDA_HOME)/include -o $@ $< -ldl

$(T)/bench_capture: bench/bench_capture.c $(FAKE)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -I$(CUDA_HOME)/include -o $@ $< -L$(T) -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN'

bench: $(LIB) $(FAKE) $(T)/bench_capture
	@bash bench/run_capture.sh

clean:
	rm -rf $(BUILD)

.PHONY: all test demo bench install clean
.SECONDARY:
