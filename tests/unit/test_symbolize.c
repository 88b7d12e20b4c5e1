/* Unit tests for report/symbolize.c: static functions found through .symtab (built without -rdynamic), offsets that
 * addr2line agrees with, libc through .dynsym, addresses in no module, a library file replaced or removed on disk,
 * and a fixed-seed loop of truncated and corrupted ELF images (run it under ASan). */
#define _GNU_SOURCE
#include "report/symbolize.h"
#include "tests/unit/unit.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* Holds the strings of the frames symbolized here. */
static struct vg_report names;

/* ---- functions to find ---- */

static __attribute__((noinline, noclone)) void *vg_test_leaf(void)
{
	return __builtin_return_address(0);
}

/* The return address of its call to vg_test_leaf lies inside it; the asm keeps the call from being a tail call. */
static __attribute__((noinline, noclone)) void *vg_test_caller(void)
{
	void *ra = vg_test_leaf();
	__asm__ volatile("" ::: "memory");
	return ra;
}

#define VG_CAT(a, b) VG_CAT_(a, b)
#define VG_CAT_(a, b) a##b
#define VG_X2(x) VG_X2_(x)
#define VG_X2_(x) x##x
#define VG_STR(x) VG_STR_(x)
#define VG_STR_(x) #x
#define VG_LONG_NAME VG_CAT(vg_test_long_, VG_X2(VG_X2(VG_X2(VG_X2(VG_X2(abcdefghij))))))  /* 333 characters */

static __attribute__((noinline, noclone)) void *VG_LONG_NAME(void)
{
	void *ra = vg_test_leaf();
	__asm__ volatile("" ::: "memory");
	return ra;
}

/* ---- helpers ---- */

static uintptr_t load_base(const void *addr)
{
	Dl_info info;
	struct link_map *lm = NULL;
	if (!dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
		return 0;
	return lm->l_addr;
}

static char *read_file(const char *path, size_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return NULL;
	}
	char *buf = malloc((size_t)st.st_size + 1);
	size_t got = 0;
	while (buf && got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (buf && got != (size_t)st.st_size) {
		free(buf);
		buf = NULL;
	}
	*size = got;
	return buf;
}

static int write_file(const char *path, const char *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (fd < 0)
		return -1;
	size_t done = 0;
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	return close(fd) == 0 && done == size ? 0 : -1;
}

static int copy_file(const char *from, const char *to)
{
	size_t size;
	char *data = read_file(from, &size);
	int rc = data ? write_file(to, data, size) : -1;
	free(data);
	return rc;
}

/* The name before any compiler suffix (".constprop.0", ".isra.0", ".cold"). */
static void base_name(char *dst, size_t cap, const char *s)
{
	size_t n = strcspn(s, ".");
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

/* ---- tests ---- */

static void test_static_function(struct vg_symbolizer *s)
{
	uint64_t addr = (uintptr_t)vg_test_caller();
	uint64_t start = (uintptr_t)&vg_test_caller;
	struct vg_report_frame f;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';

	Dl_info info;
	CHECK(dladdr((void *)(uintptr_t)(addr - 1), &info) != 0);
	CHECK(info.dli_sname == NULL);  /* dladdr cannot name it: only .symtab can */

	memset(&f, 0x55, sizeof(f));
	vg_symbolize(s, &names, addr, &f);
	CHECK_EQ_U64(f.address, addr);
	CHECK_STR(f.symbol, "vg_test_caller");
	CHECK_STR(f.module, exe);
	CHECK_EQ_U64(f.module_offset + load_base(&vg_test_caller), addr);
	CHECK_EQ_U64(f.symbol_offset, addr - start);
	CHECK(f.symbol_offset > 0 && f.symbol_offset < 256);

	/* Cached module, and no cache at all: the same answer. */
	struct vg_report_frame g, h;
	memset(&g, 0x55, sizeof(g));
	memset(&h, 0x55, sizeof(h));
	vg_symbolize(s, &names, addr, &g);
	vg_symbolize(NULL, &names, addr, &h);
	CHECK(memcmp(&f, &g, sizeof(f)) == 0);
	CHECK(memcmp(&f, &h, sizeof(f)) == 0);

	/* addr2line takes the module and the ELF address; both tools must name the same function. */
	if (system("command -v addr2line >/dev/null 2>&1") != 0 || strchr(f.module, '\'')) {
		fprintf(stderr, "addr2line not found: cross-check skipped\n");
		return;
	}
	char cmd[PATH_MAX + 64], line[512] = "", want[256], got[256];
	snprintf(cmd, sizeof(cmd), "addr2line -f -e '%s' 0x%llx", f.module,
		 (unsigned long long)(f.module_offset - 1));
	FILE *p = popen(cmd, "r");
	CHECK(p != NULL);
	if (p) {
		if (!fgets(line, sizeof(line), p))
			line[0] = '\0';
		pclose(p);
	}
	line[strcspn(line, "\n")] = '\0';
	base_name(want, sizeof(want), line);
	base_name(got, sizeof(got), f.symbol);
	CHECK_STR(got, want);
}

static void test_long_name(struct vg_symbolizer *s)
{
	const char *full = VG_STR(VG_LONG_NAME);
	uint64_t addr = (uintptr_t)VG_LONG_NAME();
	struct vg_report_frame f;
	vg_symbolize(s, &names, addr, &f);
	CHECK(strlen(full) > VG_REPORT_FRAME_STR);
	CHECK_EQ_U64(strlen(f.symbol), VG_REPORT_FRAME_STR - 1);
	CHECK(strncmp(f.symbol, full, VG_REPORT_FRAME_STR - 1) == 0);
	CHECK_EQ_U64(f.symbol_offset, addr - (uintptr_t)&VG_LONG_NAME);
}

static uint64_t cmp_frames[VG_REPORT_MAX_FRAMES];
static int cmp_nframes;

static int cmp_int(const void *a, const void *b)
{
	if (!cmp_nframes) {
		void *bt[VG_REPORT_MAX_FRAMES];
		cmp_nframes = backtrace(bt, VG_REPORT_MAX_FRAMES);
		for (int i = 0; i < cmp_nframes; i++)
			cmp_frames[i] = (uintptr_t)bt[i];
	}
	return *(const int *)a - *(const int *)b;
}

static void test_libc(struct vg_symbolizer *s)
{
	/* A frame of qsort's own code, between our comparator and our call. */
	int v[] = {3, 1, 2, 5, 4};
	qsort(v, 5, sizeof(v[0]), cmp_int);
	int libc_frames = 0, cmp_seen = 0;
	struct vg_report_frame f;
	for (int i = 0; i < cmp_nframes; i++) {
		vg_symbolize(s, &names, cmp_frames[i], &f);
		if (strstr(f.module, "libc.so"))
			libc_frames++;
		if (strcmp(f.symbol, "cmp_int") == 0)     /* frame 0, or 1 behind ASan's backtrace interceptor */
			cmp_seen++;
	}
	CHECK(libc_frames > 0);
	CHECK_EQ_U64(cmp_seen, 1);

	/* An exported function (getpid: not intercepted by the sanitizers), found by name in libc's .dynsym. */
	uint64_t addr = (uintptr_t)&getpid + 1;
	vg_symbolize(s, &names, addr, &f);
	CHECK_CONTAINS(f.module, "libc.so");
	CHECK(f.symbol[0] != '\0');
	CHECK_EQ_U64(f.symbol_offset, 1);
	CHECK_EQ_U64(f.module_offset + load_base(&getpid), addr);
}

static void test_no_module(struct vg_symbolizer *s)
{
	static const uint64_t addrs[] = {0, 1, 0x10, 0x1000, UINT64_MAX, (uint64_t)1 << 47};
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		struct vg_report_frame f;
		memset(&f, 0x55, sizeof(f));
		vg_symbolize(s, &names, addrs[i], &f);
		CHECK_EQ_U64(f.address, addrs[i]);
		CHECK_STR(f.module, "");
		CHECK_STR(f.symbol, "");
		CHECK_EQ_U64(f.module_offset, addrs[i]);
		CHECK_EQ_U64(f.symbol_offset, 0);
	}
}

/* A "rebuilt" libm: the same layout, another build-id, every "cbrt" renamed "CBRT". Only the build-id check stops
 * the symbolizer from reading CBRT out of it. */
static int write_rebuilt(const char *from, const char *to)
{
	static const char note[] = "\x04\0\0\0\x14\0\0\0\x03\0\0\0GNU";    /* NT_GNU_BUILD_ID, 20 bytes */
	size_t size;
	char *data = read_file(from, &size), *p;
	if (!data)
		return -1;
	p = memmem(data, size, note, sizeof(note));
	if (p && p + sizeof(note) < data + size)
		p[sizeof(note)] ^= 0x5a;
	for (char *q = data; (q = memmem(q, size - (size_t)(q - data), "cbrt", 4)) != NULL; q += 4)
		memcpy(q, "CBRT", 4);
	int rc = p ? write_file(to, data, size) : -1;
	free(data);
	return rc;
}

/* A private copy of libm, loaded (cbrt: not an IFUNC, so dladdr can name it), then replaced on disk by a rebuilt
 * one, then by another library (libc), then removed: the symbolizer must stop trusting the file and answer as dladdr
 * does, with the same module path and offsets. */
static void test_replaced_library(void)
{
	Dl_info info;
	struct link_map *lm = NULL;
	char dir[] = "/tmp/vg_symbolize_XXXXXX", libm[PATH_MAX], libc_path[PATH_MAX], copy[PATH_MAX + 32],
	     other[PATH_MAX + 32];
	if (!dladdr1((void *)&getpid, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm || !strchr(lm->l_name, '/')) {
		fprintf(stderr, "libc's path unknown: replaced-library test skipped\n");
		return;
	}
	snprintf(libc_path, sizeof(libc_path), "%s", lm->l_name);
	snprintf(libm, sizeof(libm), "%.*s/libm.so.6", (int)(strrchr(libc_path, '/') - libc_path), libc_path);
	CHECK(mkdtemp(dir) != NULL);
	snprintf(copy, sizeof(copy), "%s/libm.so.6", dir);
	snprintf(other, sizeof(other), "%s/other.so", dir);
	CHECK(copy_file(libm, copy) == 0);
	void *h = dlopen(copy, RTLD_NOW | RTLD_LOCAL);
	CHECK(h != NULL);
	void *fn = h ? dlsym(h, "cbrt") : NULL;
	CHECK(fn != NULL);
	if (!fn) {
		unlink(copy);
		rmdir(dir);
		return;
	}
	uint64_t addr = (uintptr_t)fn + 4;
	CHECK(dladdr((void *)(uintptr_t)(addr - 1), &info) && info.dli_sname);
	const char *dl_name = info.dli_sname ? info.dli_sname : "";
	uint64_t dl_off = addr - (uintptr_t)info.dli_saddr;

	struct vg_report_frame intact, replaced, removed;
	struct vg_symbolizer *s = vg_symbolizer_new();
	vg_symbolize(s, &names, addr, &intact);
	vg_symbolizer_free(s);
	CHECK_STR(intact.module, copy);
	CHECK_EQ_U64(intact.symbol_offset, 4);
	CHECK_EQ_U64(intact.module_offset + load_base(fn), addr);
	CHECK_STR(intact.symbol, "cbrt");     /* the shortest of its aliases */

	/* Replace it the way installers do (write elsewhere, rename over). */
	for (int round = 0; round < 2; round++) {
		CHECK((round == 0 ? write_rebuilt(libm, other) : copy_file(libc_path, other)) == 0);
		CHECK(rename(other, copy) == 0);
		s = vg_symbolizer_new();
		vg_symbolize(s, &names, addr, &replaced);
		vg_symbolizer_free(s);
		CHECK_STR(replaced.module, copy);
		CHECK_EQ_U64(replaced.module_offset, intact.module_offset);
		CHECK_STR(replaced.symbol, dl_name);
		CHECK_EQ_U64(replaced.symbol_offset, dl_off);
	}

	CHECK(unlink(copy) == 0);
	s = vg_symbolizer_new();
	vg_symbolize(s, &names, addr, &removed);
	vg_symbolizer_free(s);
	CHECK_STR(removed.module, copy);
	CHECK_STR(removed.symbol, dl_name);
	CHECK_EQ_U64(removed.symbol_offset, dl_off);
	dlclose(h);
	rmdir(dir);
}

/* Run the parser on an exact-size copy so that ASan sees any read past the end. */
static int image_lookup(const char *img, size_t size, uint64_t vaddr, char *name, size_t cap)
{
	char *copy = malloc(size ? size : 1);
	uint64_t start = 0;
	if (!copy)
		return -ENOMEM;
	memcpy(copy, img, size);
	int rc = vg_symbolize_image(copy, size, vaddr, name, cap, &start);
	free(copy);
	if (rc == 0 && (strnlen(name, cap) >= cap || start > vaddr))
		return -EINVAL;
	return rc;
}

static void test_image_parser(void)
{
	size_t size = 0;
	char *img = read_file("/proc/self/exe", &size);
	CHECK(img != NULL && size > sizeof(Elf64_Ehdr));
	if (!img)
		return;
	uint64_t start = 0, vaddr = (uintptr_t)&vg_test_caller - load_base(&vg_test_caller);
	char name[64];
	CHECK_EQ_U64(vg_symbolize_image(img, size, vaddr + 1, name, sizeof(name), &start), 0);
	CHECK_STR(name, "vg_test_caller");
	CHECK_EQ_U64(start, vaddr);
	CHECK_EQ_U64(vg_symbolize_image(img, size, vaddr + 1, name, 4, &start), 0);
	CHECK_STR(name, "vg_");
	CHECK_EQ_U64(vg_symbolize_image(img, size, 0, name, sizeof(name), &start), -ENOENT);
	CHECK_EQ_U64(vg_symbolize_image(NULL, 0, 0, name, sizeof(name), &start), -ENOEXEC);
	CHECK_EQ_U64(vg_symbolize_image("#!/bin/sh\n", 10, 0, name, sizeof(name), &start), -ENOEXEC);

	Elf64_Ehdr eh;
	memcpy(&eh, img, sizeof(eh));
	char *bad = malloc(size);
	CHECK(bad != NULL);
	if (!bad) {
		free(img);
		return;
	}
	memcpy(bad, img, size);
	bad[EI_CLASS] = ELFCLASS32;
	CHECK_EQ_U64(image_lookup(bad, size, vaddr, name, sizeof(name)), -ENOEXEC);
	memcpy(bad, img, size);
	memset(bad + offsetof(Elf64_Ehdr, e_shoff), 0, sizeof(eh.e_shoff));     /* stripped of section headers */
	CHECK_EQ_U64(image_lookup(bad, size, vaddr, name, sizeof(name)), -ENOENT);

	/* Every truncation of the headers and the section table, and a sample of the rest: never a bad read. */
	int odd = 0;
	for (size_t len = 0; len <= size; len += len < 4096 || len + 64 >= eh.e_shoff ? 1 : 97) {
		int rc = image_lookup(img, len, vaddr, name, sizeof(name));
		if (rc != 0 && rc != -ENOENT && rc != -ENOEXEC)
			odd++;
	}
	CHECK_EQ_U64(odd, 0);

	/* Corrupt a few bytes of the ELF header, the section headers or anywhere, with a fixed seed. */
	uint64_t seed = 0x5eed5eedULL, found = 0;
	odd = 0;
	for (int iter = 0; iter < 3000; iter++) {
		memcpy(bad, img, size);
		int nflips = 1 + iter % 8;
		for (int k = 0; k < nflips; k++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			uint64_t r = seed >> 33;
			size_t pos;
			switch (iter % 3) {
			case 0:
				pos = r % sizeof(Elf64_Ehdr);
				break;
			case 1:
				pos = eh.e_shoff < size ? eh.e_shoff + r % (size - eh.e_shoff) : r % size;
				break;
			default:
				pos = r % size;
			}
			bad[pos] = (char)(seed >> 13);
		}
		int rc = image_lookup(bad, size, vaddr, name, sizeof(name));
		if (rc == 0)
			found++;
		else if (rc != -ENOENT && rc != -ENOEXEC)
			odd++;
	}
	CHECK_EQ_U64(odd, 0);
	CHECK(found > 0);
	free(bad);
	free(img);
}

int main(void)
{
	struct vg_symbolizer *s = vg_symbolizer_new();
	CHECK(s != NULL);
	if (!s)
		return UNIT_DONE();
	test_static_function(s);
	test_long_name(s);
	test_libc(s);
	test_no_module(s);
	vg_symbolizer_free(s);
	test_replaced_library();
	test_image_parser();
	vg_symbolizer_free(NULL);
	CHECK(names.strings != NULL);           /* the frames' strings were kept there */
	vg_report_free(&names);
	return UNIT_DONE();
}
