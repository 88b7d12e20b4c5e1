/* Unit tests for config/: sizes, per-device lists, the loader with a fake environment, precedence, docs table.
 * No CUDA; also a fixed-seed robustness loop over random strings. */
#include "config/config.h"
#include "tests/unit/unit.h"

#include <errno.h>
#include <stdlib.h>

#define KiB ((uint64_t)1 << 10)
#define MiB ((uint64_t)1 << 20)
#define GiB ((uint64_t)1 << 30)
#define TiB ((uint64_t)1 << 40)

static char err[VG_ERR_MAX];

/* ---- helpers ---- */

static uint64_t size_ok(const char *s, uint64_t unit)
{
	uint64_t v = 0;
	int rc = vg_parse_size(s, unit, &v, err, sizeof(err));
	if (rc != 0) {
		fprintf(stderr, "unexpected size error for '%s': %s\n", s, err);
		return 0;
	}
	return v;
}

/* Returns 1 when s is rejected and err contains reason (NULL: any reason). */
static int size_bad(const char *s, const char *reason)
{
	uint64_t v = 12345;
	int rc = vg_parse_size(s, MiB, &v, err, sizeof(err));
	if (rc != -EINVAL) {
		fprintf(stderr, "'%s' was accepted as %llu\n", s, (unsigned long long)v);
		return 0;
	}
	if (reason && !strstr(err, reason)) {
		fprintf(stderr, "'%s': error '%s' lacks '%s'\n", s, err, reason);
		return 0;
	}
	return 1;
}

static struct vg_limits L;

static int limits(const char *value)
{
	return vg_parse_limits("NVIDIA_GPU_MEMORY_LIMITS", value, MiB, &L, err, sizeof(err));
}

static int limits_bad(const char *value, const char *reason)
{
	if (limits(value) != -EINVAL) {
		fprintf(stderr, "limits '%s' accepted\n", value);
		return 0;
	}
	if (strncmp(err, "vramguard: error: invalid NVIDIA_GPU_MEMORY_LIMITS '", 52) != 0 ||
	    !strstr(err, " (expected e.g. ") || strchr(err, '\n')) {
		fprintf(stderr, "limits '%s': badly shaped error '%s'\n", value, err);
		return 0;
	}
	if (reason && !strstr(err, reason)) {
		fprintf(stderr, "limits '%s': error '%s' lacks '%s'\n", value, err, reason);
		return 0;
	}
	return 1;
}

/* A fake environment: NULL-terminated pairs. */
static const char *const *fake_env;

static const char *fake_getenv(const char *name)
{
	const char *const *p;

	for (p = fake_env; p && *p; p += 2)
		if (strcmp(p[0], name) == 0)
			return p[1];
	return NULL;
}

static struct vg_config C;

static int load(const char *const *env)
{
	fake_env = env;
	return vg_config_load(&C, fake_getenv);
}

/* ---- sizes ---- */

static void test_size_units(void)
{
	static const struct {
		const char *s;
		uint64_t v;
	} ok[] = {
		{ "1", MiB }, { "4096", 4096 * MiB },
		{ "1B", 1 }, { "1b", 1 }, { "1536B", 1536 },
		{ "1K", KiB }, { "1k", KiB }, { "1KB", KiB }, { "1kb", KiB }, { "1Kb", KiB }, { "1KiB", KiB },
		{ "1kib", KiB }, { "1KIB", KiB },
		{ "1M", MiB }, { "1m", MiB }, { "1MB", MiB }, { "1mb", MiB }, { "1MiB", MiB }, { "1mib", MiB },
		{ "1MIB", MiB },
		{ "4G", 4 * GiB }, { "4g", 4 * GiB }, { "4GB", 4 * GiB }, { "4gb", 4 * GiB }, { "4GiB", 4 * GiB },
		{ "4gib", 4 * GiB }, { "4GIB", 4 * GiB }, { "4gIb", 4 * GiB },
		{ "2T", 2 * TiB }, { "2t", 2 * TiB }, { "2TB", 2 * TiB }, { "2tb", 2 * TiB }, { "2TiB", 2 * TiB },
		{ "2tib", 2 * TiB },
		{ "1.5G", GiB + GiB / 2 }, { "0.5G", GiB / 2 }, { "0.25M", MiB / 4 }, { "1.5", MiB + MiB / 2 },
		{ "1.000001K", 1024 }, /* 1024.001024 rounds down */
		{ "1.999999B", 1 }, { "0.000001T", 1099511 }, { "2.75k", 2816 },
		{ "007G", 7 * GiB }, { "16777215T", 16777215 * TiB },
		{ "17179869183G", 17179869183ull * GiB },
	};
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		uint64_t v = size_ok(ok[i].s, MiB);
		if (v != ok[i].v)
			fprintf(stderr, "size '%s'\n", ok[i].s);
		CHECK_EQ_U64(v, ok[i].v);
	}
	/* the default unit only applies to bare numbers */
	CHECK_EQ_U64(size_ok("4096", 1), 4096);
	CHECK_EQ_U64(size_ok("4096", MiB), 4096 * MiB);
	CHECK_EQ_U64(size_ok("4G", 1), 4 * GiB);
	CHECK_EQ_U64(size_ok("1.5", 1), 1); /* 1.5 bytes rounds down */
	CHECK_EQ_U64(size_ok("18446744073709551615", 1), UINT64_MAX);
	CHECK_EQ_U64(size_ok("18446744073709551615B", MiB), UINT64_MAX);
}

static void test_size_errors(void)
{
	CHECK(size_bad("", "empty"));
	CHECK(vg_parse_size(NULL, MiB, &(uint64_t){ 0 }, err, sizeof(err)) == -EINVAL);
	CHECK(size_bad("0", "must be greater than zero"));
	CHECK(size_bad("0G", "must be greater than zero"));
	CHECK(size_bad("0.0", "must be greater than zero"));
	CHECK(size_bad("0.5B", "must be greater than zero"));
	CHECK(size_bad("-1", "sign"));
	CHECK(size_bad("-4G", "sign"));
	CHECK(size_bad("+4G", "sign"));
	CHECK(size_bad("0x10", "not a number"));
	CHECK(size_bad("0x10G", "not a number"));
	CHECK(size_bad("4 G", "space"));
	CHECK(size_bad(" 4G", NULL));
	CHECK(size_bad("4G ", NULL));
	CHECK(size_bad("4GG", "unknown unit 'GG'"));
	CHECK_STR(err, "unknown unit 'GG'");
	CHECK(size_bad("4XB", "unknown unit 'XB'"));
	CHECK_STR(err, "unknown unit 'XB'");
	CHECK(size_bad("4Gi", "unknown unit 'Gi'"));
	CHECK(size_bad("4P", "unknown unit 'P'"));
	CHECK(size_bad("4KiBs", "unknown unit"));
	CHECK(size_bad("4.5.1G", "not a number"));
	CHECK(size_bad("4.", "not a number"));
	CHECK(size_bad(".5G", "not a number"));
	CHECK(size_bad("1.1234567G", "not a number"));
	CHECK(size_bad("G", "not a number"));
	CHECK(size_bad("abc", "not a number"));
	CHECK(size_bad("4%", "not a number")); /* percentages are for lists, not plain sizes */
	CHECK(size_bad("99999999999T", "value too large"));
	CHECK_STR(err, "value too large");
	CHECK(size_bad("16777216T", "value too large"));
	CHECK(size_bad("18446744073709551616", "value too large")); /* with MiB default */
	{
		uint64_t v;
		CHECK(vg_parse_size("18446744073709551616", 1, &v, err, sizeof(err)) == -EINVAL);
		CHECK_STR(err, "value too large");
		CHECK(vg_parse_size("99999999999999999999999999999", 1, &v, err, sizeof(err)) == -EINVAL);
		CHECK(vg_parse_size("17179869183.999999G", 1, &v, err, sizeof(err)) == 0);
		CHECK(vg_parse_size("17179869184G", 1, &v, err, sizeof(err)) == -EINVAL);
		/* a too-small err buffer truncates, never overflows */
		char small[8];
		CHECK(vg_parse_size("4XB", 1, &v, small, sizeof(small)) == -EINVAL);
		CHECK_STR(small, "unknown");
	}
}

/* ---- lists ---- */

static void test_limits_basic(void)
{
	CHECK(limits("4096") == 0);
	CHECK(L.dflt.kind == VG_LIMIT_BYTES);
	CHECK_EQ_U64(L.dflt.bytes, 4096 * MiB);
	CHECK_STR(L.dflt.source, "NVIDIA_GPU_MEMORY_LIMITS");
	CHECK(L.n == 0);

	CHECK(limits("0:4G,1:2G") == 0);
	CHECK(L.dflt.kind == VG_LIMIT_UNSET);
	CHECK(L.n == 2);
	CHECK(L.e[0].ordinal == 0 && L.e[0].limit.kind == VG_LIMIT_BYTES);
	CHECK_EQ_U64(L.e[0].limit.bytes, 4 * GiB);
	CHECK(L.e[1].ordinal == 1);
	CHECK_EQ_U64(L.e[1].limit.bytes, 2 * GiB);
	CHECK_STR(L.e[1].limit.source, "NVIDIA_GPU_MEMORY_LIMITS");

	CHECK(limits("0=4G,1=2048") == 0);
	CHECK(L.n == 2);
	CHECK_EQ_U64(L.e[1].limit.bytes, 2048 * MiB);

	CHECK(limits("  0 : 4G ,  1= 2G  ") == 0);
	CHECK(L.n == 2);
	CHECK_EQ_U64(L.e[0].limit.bytes, 4 * GiB);
	CHECK_EQ_U64(L.e[1].limit.bytes, 2 * GiB);

	CHECK(limits("8G,1:2G") == 0);
	CHECK(L.dflt.kind == VG_LIMIT_BYTES);
	CHECK_EQ_U64(L.dflt.bytes, 8 * GiB);
	CHECK(L.n == 1 && L.e[0].ordinal == 1);

	CHECK(limits("1:2G, 8G") == 0); /* the default may come anywhere */
	CHECK_EQ_U64(L.dflt.bytes, 8 * GiB);

	CHECK(limits("63:1G") == 0);
	CHECK(L.e[0].ordinal == 63);

	CHECK(limits("1:unlimited,UNLIMITED") == 0);
	CHECK(L.dflt.kind == VG_LIMIT_UNLIMITED);
	CHECK(L.e[0].limit.kind == VG_LIMIT_UNLIMITED);
	CHECK(limits("Unlimited") == 0);
	CHECK(L.dflt.kind == VG_LIMIT_UNLIMITED);

	/* empty or blank: unset */
	CHECK(limits("") == 0);
	CHECK(L.dflt.kind == VG_LIMIT_UNSET && L.n == 0);
	CHECK(limits("   \t ") == 0);
	CHECK(L.dflt.kind == VG_LIMIT_UNSET && L.n == 0);
	CHECK(limits(NULL) == 0);
}

static void test_limits_percent(void)
{
	CHECK(limits("50%") == 0);
	CHECK(L.dflt.kind == VG_LIMIT_PERCENT);
	CHECK_EQ_U64(L.dflt.ppm, 500000);
	CHECK(limits("100%") == 0);
	CHECK_EQ_U64(L.dflt.ppm, 1000000);
	CHECK(limits("12.5%") == 0);
	CHECK_EQ_U64(L.dflt.ppm, 125000);
	CHECK(limits("0.0001%") == 0);
	CHECK_EQ_U64(L.dflt.ppm, 1);
	CHECK(limits("100.0%") == 0);
	CHECK(limits("0:25%,1:75.5%") == 0);
	CHECK_EQ_U64(L.e[0].limit.ppm, 250000);
	CHECK_EQ_U64(L.e[1].limit.ppm, 755000);

	CHECK(limits_bad("0%", "must be greater than zero"));
	CHECK(limits_bad("0.0%", "must be greater than zero"));
	CHECK(limits_bad("101%", "above 100%"));
	CHECK(limits_bad("100.0001%", "above 100%"));
	CHECK(limits_bad("99999999999999999999%", "above 100%"));
	CHECK(limits_bad("%", "not a percentage"));
	CHECK(limits_bad("-5%", "sign"));
	CHECK(limits_bad("5.%", "not a percentage"));
	CHECK(limits_bad("50 %", "space"));
	CHECK(limits_bad("12.34567%", "not a percentage"));
	CHECK(limits_bad("50%%", "not a percentage"));
	CHECK(limits_bad("5G%", "not a percentage"));
}

static void test_limits_keys(void)
{
	const char *u1 = "GPU-3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b";

	CHECK(limits("GPU-3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b:4G") == 0);
	CHECK(L.n == 1 && L.e[0].ordinal == -1);
	CHECK_STR(L.e[0].uuid, u1);
	CHECK(limits("gpu-3F2A1B4C-5D6E-7F80-9A1B-2C3D4E5F6A7B=4G, 0:1G") == 0);
	CHECK(L.n == 2);
	CHECK(limits("MIG-GPU-3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b/1/0:2G") == 0);
	CHECK_STR(L.e[0].uuid, "MIG-GPU-3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b/1/0");
	CHECK(limits("MIG-0b5e1b11-7c3f-5c83-9b8a-111111111111=10%") == 0);
	CHECK(L.e[0].limit.kind == VG_LIMIT_PERCENT);

	CHECK(limits_bad("GPU-3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7:4G", "invalid GPU UUID"));
	CHECK(limits_bad("GPU-3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7bb:4G", "invalid GPU UUID"));
	CHECK(limits_bad("GPU-3f2a1b4c5d6e-7f80-9a1b-2c3d4e5f6a7b0:4G", "invalid GPU UUID"));
	CHECK(limits_bad("GPU-zf2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b:4G", "invalid GPU UUID"));
	CHECK(limits_bad("GPU-:4G", "invalid GPU UUID"));
	CHECK(limits_bad("MIG-:4G", "empty MIG identifier"));
	CHECK(limits_bad("MIG-a b:4G", "MIG identifier"));
	CHECK(limits_bad("x:1G", "unknown device key"));
	CHECK(limits_bad("-1:1G", "unknown device key"));
	CHECK(limits_bad("1x:1G", "not a decimal number"));
	CHECK(limits_bad("64:1G", "out of range"));
	CHECK(limits_bad("99999999999999999999:1G", "out of range"));
	CHECK(limits_bad(":1G", "missing device key"));
	CHECK(limits_bad("0:", "missing size"));
	CHECK(limits_bad("0: ", "missing size"));
	CHECK(limits_bad("0:1:2G", "not a number"));

	/* duplicates */
	CHECK(limits_bad("0:1G,0:2G", "duplicate device key"));
	CHECK(limits_bad("0:1G,1:1G,0=2G", "duplicate device key"));
	CHECK(limits_bad("GPU-3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b:1G,gpu-3F2A1B4C-5D6E-7F80-9A1B-2C3D4E5F6A7B:2G",
			 "duplicate device key"));
	CHECK(limits_bad("MIG-a:1G,mig-A:2G", "duplicate device key"));
	CHECK(limits_bad("4G,8G", "more than one default"));
	CHECK(limits_bad("4G,0:1G,50%", "more than one default"));

	/* empty items */
	CHECK(limits_bad(",,", "empty item"));
	CHECK(limits_bad("0:1G,,1:1G", "empty item"));
	CHECK(limits_bad("0:1G,", "empty item"));
	CHECK(limits_bad(",0:1G", "empty item"));
	CHECK(limits_bad("0:1G, ,1:2G", "empty item"));

	/* size errors surface through the list */
	CHECK(limits_bad("0:4XB", "unknown unit 'XB'"));
	CHECK(limits_bad("0:0", "must be greater than zero"));
	CHECK(limits_bad("4 G", "space"));
	CHECK(limits_bad("0:99999999999T", "value too large"));
	CHECK(limits_bad("unlimitedd", "not a number"));
	CHECK(limits_bad("4unlimited", "unknown unit"));
}

static void test_limits_many(void)
{
	char buf[1024], *p = buf;
	int i;

	for (i = 0; i < VG_MAX_LIMIT_ENTRIES; i++)
		p += sprintf(p, "%s%d:%dM", i ? "," : "", i, i + 1);
	CHECK(limits(buf) == 0);
	CHECK(L.n == VG_MAX_LIMIT_ENTRIES);
	CHECK_EQ_U64(L.e[63].limit.bytes, 64 * MiB);
	sprintf(p, ",MIG-x:1G");
	CHECK(limits_bad(buf, "too many entries"));
	CHECK_CONTAINS(err, "'MIG-x:1G'");
}

/* Exact text: variable, token, reason, examples. */
static void test_limits_messages(void)
{
	CHECK(limits("4XB") == -EINVAL);
	CHECK_STR(err, "vramguard: error: invalid NVIDIA_GPU_MEMORY_LIMITS '4XB': unknown unit 'XB' "
		       "(expected e.g. 4096, 4G, 50%, 0:4G,1:2G)");
	CHECK(limits("0:4G, 1:4XB") == -EINVAL);
	CHECK_STR(err, "vramguard: error: invalid NVIDIA_GPU_MEMORY_LIMITS '1:4XB': unknown unit 'XB' "
		       "(expected e.g. 4096, 4G, 50%, 0:4G,1:2G)");
	CHECK(limits("64:1G") == -EINVAL);
	CHECK_STR(err, "vramguard: error: invalid NVIDIA_GPU_MEMORY_LIMITS '64:1G': device ordinal out of range "
		       "(0..63) (expected e.g. 4096, 4G, 50%, 0:4G,1:2G)");
	CHECK(limits("0:1G,0:2G") == -EINVAL);
	CHECK_STR(err, "vramguard: error: invalid NVIDIA_GPU_MEMORY_LIMITS '0:2G': duplicate device key "
		       "(expected e.g. 4096, 4G, 50%, 0:4G,1:2G)");
	CHECK(limits("1G,,2G") == -EINVAL);
	CHECK_STR(err, "vramguard: error: invalid NVIDIA_GPU_MEMORY_LIMITS '1G,,2G': empty item in list "
		       "(expected e.g. 4096, 4G, 50%, 0:4G,1:2G)");
	CHECK(limits("101%") == -EINVAL);
	CHECK_STR(err, "vramguard: error: invalid NVIDIA_GPU_MEMORY_LIMITS '101%': percentage above 100% "
		       "(expected e.g. 4096, 4G, 50%, 0:4G,1:2G)");
	CHECK(vg_parse_limits("CUDA_DEVICE_MEMORY_LIMIT", "-1", 1, &L, err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "vramguard: error: invalid CUDA_DEVICE_MEMORY_LIMIT '-1': a sign is not allowed "
		       "(expected e.g. 4g, 4096m, 0:4g)");
	CHECK(L.n == 0 && L.dflt.kind == VG_LIMIT_UNSET); /* nothing half-parsed is left behind */

	/* control bytes never break the one-line rule; long tokens are cut */
	CHECK(limits("4\nG") == -EINVAL);
	CHECK(strchr(err, '\n') == NULL);
	CHECK_CONTAINS(err, "'4?G'");
	{
		char big[400];
		memset(big, '9', sizeof(big) - 2);
		big[sizeof(big) - 2] = 'X';
		big[sizeof(big) - 1] = '\0';
		CHECK(limits(big) == -EINVAL);
		CHECK_CONTAINS(err, "...'");
		CHECK_CONTAINS(err, "(expected e.g. ");
		CHECK(strlen(err) < VG_ERR_MAX);
	}
}

/* ---- the loader ---- */

static void test_load_defaults(void)
{
	static const char *const env0[] = { NULL };
	const char *src = "x";

	CHECK(load(env0) == 0);
	CHECK(C.valid == 1);
	CHECK_STR(C.error, "");
	CHECK(C.log_level == VG_LOG_WARN);
	CHECK(C.managed == VG_MANAGED_COUNT);
	CHECK_EQ_U64(vg_config_limit_for(&C, 0, NULL, 80 * GiB, &src), UINT64_MAX);
	CHECK(src == NULL);
	CHECK(vg_config_load(&C, NULL) == 0 || C.valid == 0); /* real getenv: must not crash */
}

static void test_load_hami(void)
{
	static const char *const env1[] = { "CUDA_DEVICE_MEMORY_LIMIT", "4096", NULL };
	static const char *const env2[] = { "CUDA_DEVICE_MEMORY_LIMIT", "4g", "CUDA_DEVICE_MEMORY_LIMIT_1", "1024m",
					    "CUDA_DEVICE_MEMORY_LIMIT_63", "50%", NULL };
	static const char *const env3[] = { "CUDA_DEVICE_MEMORY_LIMIT_2", "0:4g", NULL };
	static const char *const env4[] = { "CUDA_DEVICE_MEMORY_LIMIT", "0:4g", "CUDA_DEVICE_MEMORY_LIMIT_0", "2g",
					    NULL };
	static const char *const env5[] = { "CUDA_DEVICE_MEMORY_LIMIT_5", "4GiB", "CUDA_DEVICE_MEMORY_LIMIT_6", "",
					    "CUDA_DEVICE_MEMORY_LIMIT_64", "garbage", NULL };
	static const char *const env6[] = { "CUDA_DEVICE_MEMORY_LIMIT_3", "4x", NULL };
	const char *src;

	CHECK(load(env1) == 0);
	CHECK(C.hami.dflt.kind == VG_LIMIT_BYTES);
	CHECK_EQ_U64(C.hami.dflt.bytes, 4096); /* HAMi: bare number = bytes */
	CHECK_STR(C.hami.dflt.source, "CUDA_DEVICE_MEMORY_LIMIT");

	CHECK(load(env2) == 0);
	CHECK_EQ_U64(C.hami.dflt.bytes, 4 * GiB);
	CHECK(C.hami.n == 2);
	CHECK_EQ_U64(vg_config_limit_for(&C, 1, NULL, 80 * GiB, &src), GiB);
	CHECK_STR(src, "CUDA_DEVICE_MEMORY_LIMIT_1");
	CHECK_EQ_U64(vg_config_limit_for(&C, 63, NULL, 80 * GiB, &src), 40 * GiB);
	CHECK_STR(src, "CUDA_DEVICE_MEMORY_LIMIT_63");
	CHECK_EQ_U64(vg_config_limit_for(&C, 0, NULL, 80 * GiB, &src), 4 * GiB);
	CHECK_STR(src, "CUDA_DEVICE_MEMORY_LIMIT");
	CHECK_EQ_U64(vg_config_limit_for(&C, 64, NULL, 80 * GiB, &src), 4 * GiB);

	CHECK(load(env3) == -EINVAL);
	CHECK(C.valid == 0);
	CHECK_STR(C.error, "vramguard: error: invalid CUDA_DEVICE_MEMORY_LIMIT_2 '0:4g': a device key is not allowed "
			   "here (expected e.g. 4g, 4096m, 50%)");

	CHECK(load(env4) == -EINVAL);
	CHECK_CONTAINS(C.error, "invalid CUDA_DEVICE_MEMORY_LIMIT_0 '2g'");
	CHECK_CONTAINS(C.error, "also set in CUDA_DEVICE_MEMORY_LIMIT");

	CHECK(load(env5) == 0); /* empty = unset; _64 is beyond the tracked range and never read */
	CHECK(C.hami.n == 1 && C.hami.e[0].ordinal == 5);
	CHECK_EQ_U64(vg_config_limit_for(&C, 5, NULL, 0, &src), 4 * GiB);
	CHECK_EQ_U64(vg_config_limit_for(&C, 6, NULL, 0, &src), UINT64_MAX);

	CHECK(load(env6) == -EINVAL);
	CHECK_STR(C.error, "vramguard: error: invalid CUDA_DEVICE_MEMORY_LIMIT_3 '4x': unknown unit 'x' "
			   "(expected e.g. 4g, 4096m, 50%)");
	/* fail closed: no limits survive a failed load */
	CHECK(C.hami.n == 0 && C.limits.n == 0 && C.hami.dflt.kind == VG_LIMIT_UNSET);
}

static void test_precedence(void)
{
	const char *uuid = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";
	static const char *const all[] = {
		"NVIDIA_GPU_MEMORY_LIMITS", "0:1G, GPU-AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE:5G, 3G",
		"CUDA_DEVICE_MEMORY_LIMIT", "7g",
		"CUDA_DEVICE_MEMORY_LIMIT_0", "11g",
		"CUDA_DEVICE_MEMORY_LIMIT_2", "13g",
		NULL,
	};
	static const char *const hami_only[] = {
		"NVIDIA_GPU_MEMORY_LIMITS", "0:1G",
		"CUDA_DEVICE_MEMORY_LIMIT", "7g",
		"CUDA_DEVICE_MEMORY_LIMIT_2", "13g",
		NULL,
	};
	static const char *const pct[] = { "NVIDIA_GPU_MEMORY_LIMITS", "50%,1:12.5%,2:unlimited,3:100%", NULL };
	const char *src;

	CHECK(load(all) == 0);
	/* 1: keyed entry (ordinal) */
	CHECK_EQ_U64(vg_config_limit_for(&C, 0, NULL, 0, &src), GiB);
	CHECK_STR(src, "NVIDIA_GPU_MEMORY_LIMITS");
	/* keyed entry by uuid, case-insensitively; uuid beats ordinal */
	CHECK_EQ_U64(vg_config_limit_for(&C, 9, uuid, 0, &src), 5 * GiB);
	CHECK_EQ_U64(vg_config_limit_for(&C, 0, uuid, 0, &src), 5 * GiB);
	CHECK_STR(src, "NVIDIA_GPU_MEMORY_LIMITS");
	/* 2: bare default beats every HAMi variable */
	CHECK_EQ_U64(vg_config_limit_for(&C, 2, NULL, 0, &src), 3 * GiB);
	CHECK_STR(src, "NVIDIA_GPU_MEMORY_LIMITS");
	CHECK_EQ_U64(vg_config_limit_for(&C, 2, "GPU-00000000-0000-0000-0000-000000000000", 0, &src), 3 * GiB);

	CHECK(load(hami_only) == 0);
	CHECK_EQ_U64(vg_config_limit_for(&C, 0, NULL, 0, &src), GiB);
	/* 3: CUDA_DEVICE_MEMORY_LIMIT_<i> */
	CHECK_EQ_U64(vg_config_limit_for(&C, 2, NULL, 0, &src), 13 * GiB);
	CHECK_STR(src, "CUDA_DEVICE_MEMORY_LIMIT_2");
	/* 4: CUDA_DEVICE_MEMORY_LIMIT */
	CHECK_EQ_U64(vg_config_limit_for(&C, 1, NULL, 0, &src), 7 * GiB);
	CHECK_STR(src, "CUDA_DEVICE_MEMORY_LIMIT");
	CHECK_EQ_U64(vg_config_limit_for(&C, -1, NULL, 0, &src), 7 * GiB);
	CHECK_EQ_U64(vg_config_limit_for(&C, 1, NULL, 0, NULL), 7 * GiB);

	/* percentages resolve against the device's total; total 0 = unknown = unlimited */
	CHECK(load(pct) == 0);
	CHECK_EQ_U64(vg_config_limit_for(&C, 0, NULL, 80 * GiB, &src), 40 * GiB);
	CHECK_EQ_U64(vg_config_limit_for(&C, 1, NULL, 80 * GiB, &src), 10 * GiB);
	CHECK_EQ_U64(vg_config_limit_for(&C, 1, NULL, 1001, &src), 125); /* rounds down */
	CHECK_EQ_U64(vg_config_limit_for(&C, 3, NULL, UINT64_MAX, &src), UINT64_MAX);
	CHECK_EQ_U64(vg_config_limit_for(&C, 0, NULL, UINT64_MAX, &src), UINT64_MAX / 2);
	CHECK_EQ_U64(vg_config_limit_for(&C, 0, NULL, 0, &src), UINT64_MAX);
	CHECK_STR(src, "NVIDIA_GPU_MEMORY_LIMITS");
	/* explicit unlimited: UINT64_MAX, and the variable that said so */
	CHECK_EQ_U64(vg_config_limit_for(&C, 2, NULL, 80 * GiB, &src), UINT64_MAX);
	CHECK_STR(src, "NVIDIA_GPU_MEMORY_LIMITS");
}

static void test_load_enums(void)
{
	static const char *const e1[] = { "VRAMGUARD_LOG", "debug", "VRAMGUARD_MANAGED", "ignore", NULL };
	static const char *const e2[] = { "VRAMGUARD_LOG", "OFF", "VRAMGUARD_MANAGED", "Count", NULL };
	static const char *const e3[] = { "VRAMGUARD_LOG", "loud", NULL };
	static const char *const e4[] = { "VRAMGUARD_MANAGED", "sometimes", NULL };
	static const char *const e5[] = { "VRAMGUARD_LOG", "", "VRAMGUARD_MANAGED", " ", NULL };
	static const char *const e6[] = { "VRAMGUARD_LOG", "info", "VRAMGUARD_FUTURE_THING", "whatever",
					  "VRAMGUARD_", "x", "VRAMGUARD_BACKTRACE", "???", NULL };
	static const char *const e7[] = { "NVIDIA_GPU_MEMORY_LIMITS", "4XB", "VRAMGUARD_LOG", "loud", NULL };
	static const char *const e8[] = { "VRAMGUARD_LOG", "errors", NULL };
	static const char *const names[] = { "off", "error", "warn", "info", "debug" };
	const char *env[3] = { "VRAMGUARD_LOG", NULL, NULL };
	int i;

	for (i = 0; i < 5; i++) {
		env[1] = names[i];
		CHECK(load(env) == 0);
		CHECK(C.log_level == i);
	}
	CHECK(load(e1) == 0);
	CHECK(C.log_level == VG_LOG_DEBUG && C.managed == VG_MANAGED_IGNORE);
	CHECK(load(e2) == 0);
	CHECK(C.log_level == VG_LOG_OFF && C.managed == VG_MANAGED_COUNT);
	CHECK(load(e3) == -EINVAL);
	CHECK(C.valid == 0);
	CHECK_STR(C.error, "vramguard: error: invalid VRAMGUARD_LOG 'loud': expected one of off, error, warn, info, "
			   "debug");
	CHECK(load(e4) == -EINVAL);
	CHECK_STR(C.error, "vramguard: error: invalid VRAMGUARD_MANAGED 'sometimes': expected one of count, ignore");
	CHECK(load(e5) == 0);
	CHECK(C.log_level == VG_LOG_WARN && C.managed == VG_MANAGED_COUNT);
	CHECK(load(e6) == 0); /* unknown VRAMGUARD_* names are not errors */
	CHECK(C.valid == 1 && C.log_level == VG_LOG_INFO);
	CHECK(load(e7) == -EINVAL); /* first error wins */
	CHECK_CONTAINS(C.error, "NVIDIA_GPU_MEMORY_LIMITS '4XB'");
	CHECK(load(e8) == -EINVAL);
}

static void test_load_limits(void)
{
	static const char *const e1[] = { "NVIDIA_GPU_MEMORY_LIMITS", "4096", NULL };
	static const char *const e2[] = { "NVIDIA_GPU_MEMORY_LIMITS", "", "CUDA_DEVICE_MEMORY_LIMIT", "1g", NULL };
	static const char *const e3[] = { "NVIDIA_GPU_MEMORY_LIMITS", "4XB", NULL };
	const char *src;

	CHECK(load(e1) == 0);
	CHECK_EQ_U64(vg_config_limit_for(&C, 0, NULL, 0, &src), 4 * GiB); /* bare number = MiB */
	CHECK(load(e2) == 0);
	CHECK_EQ_U64(vg_config_limit_for(&C, 0, NULL, 0, &src), GiB);
	CHECK_STR(src, "CUDA_DEVICE_MEMORY_LIMIT");
	CHECK(load(e3) == -EINVAL);
	CHECK_STR(C.error, "vramguard: error: invalid NVIDIA_GPU_MEMORY_LIMITS '4XB': unknown unit 'XB' "
			   "(expected e.g. 4096, 4G, 50%, 0:4G,1:2G)");
	CHECK_EQ_U64(vg_config_limit_for(&C, 0, NULL, 0, &src), UINT64_MAX); /* callers must check valid */
}

/* ---- options table and docs ---- */

static void test_options_table(void)
{
	static const char *const want[] = { "NVIDIA_GPU_MEMORY_LIMITS", "CUDA_DEVICE_MEMORY_LIMIT",
					    "CUDA_DEVICE_MEMORY_LIMIT_<i>", "VRAMGUARD_LOG", "VRAMGUARD_MANAGED" };
	char md[8192] = "";
	size_t i, j;
	FILE *f;

	CHECK(vg_options_count >= 5);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		int found = 0;
		for (j = 0; j < vg_options_count; j++)
			found += strcmp(vg_options[j].name, want[i]) == 0;
		CHECK(found == 1);
	}
	for (j = 0; j < vg_options_count; j++) {
		const struct vg_option *o = &vg_options[j];
		CHECK(o->type && *o->type && o->dflt && *o->dflt && o->values && *o->values && o->doc && *o->doc);
		CHECK(!strchr(o->doc, '\n') && !strchr(o->values, '\n'));
		CHECK(strncmp(o->name, "VRAMGUARD_", 10) == 0 || strncmp(o->name, "NVIDIA_", 7) == 0 ||
		      strncmp(o->name, "CUDA_", 5) == 0);
		if (strcmp(o->name, "VRAMGUARD_LOG") == 0) {
			CHECK_STR(o->values, "off, error, warn, info, debug");
			CHECK_STR(o->dflt, "warn");
		}
		if (strcmp(o->name, "VRAMGUARD_MANAGED") == 0) {
			CHECK_STR(o->values, "count, ignore");
			CHECK_STR(o->dflt, "count");
		}
	}
	f = fmemopen(md, sizeof(md) - 1, "w");
	CHECK(f != NULL);
	if (f) {
		vg_options_write_markdown(f);
		fclose(f);
	}
	CHECK(strncmp(md, "| Variable | Type | Default | Values | Description |\n|---|", 57) == 0);
	CHECK_CONTAINS(md, "| `VRAMGUARD_LOG` | enum | warn | off, error, warn, info, debug |");
	CHECK_CONTAINS(md, "`CUDA_DEVICE_MEMORY_LIMIT_<i>`");
	{
		size_t lines = 0;
		for (i = 0; md[i]; i++)
			lines += md[i] == '\n';
		CHECK_EQ_U64(lines, vg_options_count + 2);
	}
}

static void test_format_bytes(void)
{
	char b[32];

	CHECK_STR(vg_format_bytes(0, b, sizeof(b)), "0 B");
	CHECK_STR(vg_format_bytes(1023, b, sizeof(b)), "1023 B");
	CHECK_STR(vg_format_bytes(1024, b, sizeof(b)), "1.00 KiB");
	CHECK_STR(vg_format_bytes(1536, b, sizeof(b)), "1.50 KiB");
	CHECK_STR(vg_format_bytes(1048575, b, sizeof(b)), "1023.99 KiB");
	CHECK_STR(vg_format_bytes(512 * MiB, b, sizeof(b)), "512.00 MiB");
	CHECK_STR(vg_format_bytes(4 * GiB, b, sizeof(b)), "4.00 GiB");
	CHECK_STR(vg_format_bytes(TiB + TiB / 2, b, sizeof(b)), "1.50 TiB");
	CHECK_STR(vg_format_bytes(1024 * TiB, b, sizeof(b)), "1.00 PiB");
	CHECK_STR(vg_format_bytes(UINT64_MAX, b, sizeof(b)), "15.99 EiB");
	CHECK_STR(vg_format_bytes(GiB + 10 * MiB, b, sizeof(b)), "1.00 GiB");
	CHECK_STR(vg_format_bytes(4 * GiB, b, 5), "4.00");
	CHECK(vg_format_bytes(4 * GiB, b, 0) == b);
}

/* ---- robustness: random strings over the parser's alphabet never crash and fail cleanly ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void test_random_strings(void)
{
	static const char alphabet[] = "0123456789.:=,%kmgtibKMGTIB -xGPUMIG";
	int i, ok = 0, bad_shape = 0, accepted = 0;

	for (i = 0; i < 20000; i++) {
		char s[48];
		size_t n = rng() % (sizeof(s) - 1), k;
		int rc;

		for (k = 0; k < n; k++)
			s[k] = alphabet[rng() % (sizeof(alphabet) - 1)];
		s[n] = '\0';
		memset(err, 0, sizeof(err));
		rc = vg_parse_limits("NVIDIA_GPU_MEMORY_LIMITS", s, MiB, &L, err, sizeof(err));
		if (rc == 0) {
			accepted++;
			ok += L.n <= VG_MAX_LIMIT_ENTRIES;
		} else if (rc == -EINVAL && strncmp(err, "vramguard: error: invalid ", 26) == 0 &&
			   !strchr(err, '\n') && strstr(err, "(expected e.g. ")) {
			ok++;
		} else {
			bad_shape++;
			fprintf(stderr, "random '%s': rc %d err '%s'\n", s, rc, err);
		}
		{
			uint64_t v;
			rc = vg_parse_size(s, 1, &v, err, sizeof(err));
			if (rc == 0)
				ok += v > 0 ? 0 : -1000000;
			else if (rc != -EINVAL || !err[0])
				bad_shape++;
		}
	}
	CHECK(bad_shape == 0);
	CHECK(ok == 20000);
	CHECK(accepted > 0); /* the generator does reach valid inputs sometimes */
	/* hand-picked nasty ones */
	CHECK(limits_bad("::", NULL));
	CHECK(limits_bad("==", NULL));
	CHECK(limits_bad("%", NULL));
	CHECK(limits_bad(".", NULL));
	CHECK(limits_bad("GPU-", NULL));
	CHECK(limits_bad("MIG-", NULL));
	CHECK(limits_bad("-", NULL));
	CHECK(limits_bad(" , ", NULL));
}

int main(void)
{
	test_size_units();
	test_size_errors();
	test_limits_basic();
	test_limits_percent();
	test_limits_keys();
	test_limits_many();
	test_limits_messages();
	test_load_defaults();
	test_load_hami();
	test_precedence();
	test_load_enums();
	test_load_limits();
	test_options_table();
	test_format_bytes();
	test_random_strings();
	return UNIT_DONE();
}
