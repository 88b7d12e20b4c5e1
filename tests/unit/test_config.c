/* Unit tests for config/: sizes, per-device lists, the loader with a fake environment, precedence, docs table.
 * No CUDA; also a fixed-seed robustness loop over random strings. */
#include "accounting/region.h"     /* its macros only: config and the region name the same files */
#include "config/config.h"
#include "config/policy.h"
#include "report/path.h"
#include "tests/unit/unit.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
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
	return vg_config_load(&C, fake_getenv, 0);
}

/* Load with one variable set. */
static int load1(const char *name, const char *value)
{
	static const char *env[3];

	env[0] = name;
	env[1] = value;
	env[2] = NULL;
	return load(env);
}

/* The report-related fields hold their defaults (also after a failed load: fail closed). */
static int report_defaults(const struct vg_config *c)
{
	return c->backtrace_depth == VG_BACKTRACE_DEFAULT && c->signal == SIGUSR1 &&
	       strcmp(c->signal_name, "SIGUSR1") == 0 && c->report_dest == VG_REPORT_STDERR &&
	       c->report_path[0] == '\0' && c->report_format == VG_FORMAT_TEXT && c->stream_check == VG_STREAM_WARN;
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
	/* MIG keys: exactly the two forms nvidia-smi -L prints (R470+, and the legacy GPU UUID/GI/CI form) */
	CHECK(limits("mig-0B5E1B11-7C3F-5C83-9B8A-111111111111:1G") == 0);
	CHECK(limits("MIG-GPU-3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b/13/7:1G") == 0);
	CHECK(limits_bad("MIG-:4G", "invalid MIG identifier"));
	CHECK(limits_bad("MIG-a b:4G", "invalid MIG identifier"));
	CHECK(limits_bad("MIG-x:4G", "invalid MIG identifier (want MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx or "
				    "MIG-GPU-<uuid>/<gi>/<ci>, as nvidia-smi -L prints)"));
	CHECK_CONTAINS(err, "'MIG-x:4G'");
	CHECK(limits_bad("MIG-0b5e1b11-7c3f-5c83-9b8a-11111111111:1G", "invalid MIG identifier"));       /* 11 digits */
	CHECK(limits_bad("MIG-0b5e1b11-7c3f-5c83-9b8a-1111111111111:1G", "invalid MIG identifier"));     /* 13 */
	CHECK(limits_bad("MIG-0b5e1b11-7c3f-5c83-9b8a-11111111111g:1G", "invalid MIG identifier"));
	CHECK(limits_bad("MIG-GPU-3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b:1G", "invalid MIG identifier"));
	CHECK(limits_bad("MIG-GPU-3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b/1:1G", "invalid MIG identifier"));
	CHECK(limits_bad("MIG-GPU-3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b/1/:1G", "invalid MIG identifier"));
	CHECK(limits_bad("MIG-GPU-3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b/a/0:1G", "invalid MIG identifier"));
	CHECK(limits_bad("MIG-GPU-3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b/1/0/2:1G", "invalid MIG identifier"));
	CHECK(limits_bad("MIG-GPU-3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7b/1/123456:1G", "invalid MIG identifier"));
	CHECK(limits_bad("MIG-GPU-3f2a1b4c-5d6e-7f80-9a1b-2c3d4e5f6a7/1/0:1G", "invalid MIG identifier"));
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
	CHECK(limits_bad("MIG-0b5e1b11-7c3f-5c83-9b8a-11111111111a:1G,mig-0B5E1B11-7C3F-5C83-9B8A-11111111111A:2G",
			 "duplicate device key"));
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
	sprintf(p, ",MIG-0b5e1b11-7c3f-5c83-9b8a-111111111111:1G");
	CHECK(limits_bad(buf, "too many entries"));
	CHECK_CONTAINS(err, "'MIG-0b5e1b11-7c3f-5c83-9b8a-111111111111:1G'");
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
		CHECK_CONTAINS(err, "...9");
		CHECK_CONTAINS(err, "9999X' (399 bytes): unknown unit 'X'"); /* the start, the end, the length */
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
	CHECK(C.backtrace_depth == VG_BACKTRACE_DEFAULT);
	CHECK(C.signal == SIGUSR1);
	CHECK_STR(C.signal_name, "SIGUSR1");
	CHECK(C.report_dest == VG_REPORT_STDERR);
	CHECK_STR(C.report_path, "");
	CHECK(C.report_format == VG_FORMAT_TEXT);
	CHECK(C.stream_check == VG_STREAM_WARN);
	CHECK(report_defaults(&C));
	CHECK(C.count == VG_COUNT_DEVICE && C.device_poll_ms == 500);
	CHECK_STR(C.note, "");
	CHECK_EQ_U64(vg_config_limit_for(&C, 0, NULL, 80 * GiB, &src), UINT64_MAX);
	CHECK(src == NULL);
	src = "x";
	CHECK_EQ_U64(vg_config_request_for(&C, 0, NULL, 80 * GiB, &src), UINT64_MAX);
	CHECK(src == NULL);
	CHECK(vg_config_load(&C, NULL, 0) == 0 || C.valid == 0); /* real getenv: must not crash */
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
					  "VRAMGUARD_", "x", "VRAMGUARD_NOT_YET_AN_OPTION", "???", NULL };
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

/* ---- NVIDIA's other names: NVIDIA_GPU_MEMORY_LIMIT, the requests (soft limits) ---- */

static void test_load_limit_one(void)
{
	const char *src = "x";
	static const struct {
		const char *v;
		uint64_t total, want;
	} ok[] = {
		{ "4096", 0, 4 * GiB }, { "8G", 0, 8 * GiB }, { " 1.5g ", 0, GiB + GiB / 2 }, { "512MiB", 0, 512 * MiB },
		{ "1536B", 0, 1536 }, { "25%", 16 * GiB, 4 * GiB }, { "25%", 0, UINT64_MAX },
		{ "unlimited", 16 * GiB, UINT64_MAX }, { "UNLIMITED", 0, UINT64_MAX },
	};
	static const struct {
		const char *v, *msg;
	} bad[] = {
		{ "0:4G", "vramguard: error: invalid NVIDIA_GPU_MEMORY_LIMIT '0:4G': a device key is not allowed here "
			  "(expected e.g. 4096, 4G, 50%, unlimited; per device: NVIDIA_GPU_MEMORY_LIMITS=0:4G,1:2G)" },
		{ "4G,2G", "vramguard: error: invalid NVIDIA_GPU_MEMORY_LIMIT '2G': expected a single value (expected e.g. "
			   "4096, 4G, 50%, unlimited; per device: NVIDIA_GPU_MEMORY_LIMITS=0:4G,1:2G)" },
		{ "4XB", "vramguard: error: invalid NVIDIA_GPU_MEMORY_LIMIT '4XB': unknown unit 'XB' (expected e.g. "
			 "4096, 4G, 50%, unlimited; per device: NVIDIA_GPU_MEMORY_LIMITS=0:4G,1:2G)" },
		{ "0", "vramguard: error: invalid NVIDIA_GPU_MEMORY_LIMIT '0': must be greater than zero (expected e.g. "
		       "4096, 4G, 50%, unlimited; per device: NVIDIA_GPU_MEMORY_LIMITS=0:4G,1:2G)" },
		{ "-1", "invalid NVIDIA_GPU_MEMORY_LIMIT '-1': a sign is not allowed" },
		{ "101%", "invalid NVIDIA_GPU_MEMORY_LIMIT '101%': percentage above 100%" },
		{ "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee:1G", "a device key is not allowed here" },
		{ "4 G", "invalid NVIDIA_GPU_MEMORY_LIMIT '4 G': spaces are not allowed" },
	};
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		CHECK(load1("NVIDIA_GPU_MEMORY_LIMIT", ok[i].v) == 0 && C.valid);
		CHECK_EQ_U64(vg_config_limit_for(&C, 0, NULL, ok[i].total, &src), ok[i].want);
		CHECK_STR(src, "NVIDIA_GPU_MEMORY_LIMIT");
		CHECK_EQ_U64(vg_config_limit_for(&C, 63, "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", ok[i].total, NULL),
			     ok[i].want);       /* every device */
		CHECK_STR(C.note, "");
	}
	CHECK(load1("NVIDIA_GPU_MEMORY_LIMIT", " ") == 0 && C.limit_one.kind == VG_LIMIT_UNSET); /* blank: unset */
	CHECK_EQ_U64(vg_config_limit_for(&C, 0, NULL, 0, &src), UINT64_MAX);
	CHECK(src == NULL);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(load1("NVIDIA_GPU_MEMORY_LIMIT", bad[i].v) == -EINVAL && !C.valid);
		if (strncmp(bad[i].msg, "vramguard: ", 11) == 0)
			CHECK_STR(C.error, bad[i].msg);
		else
			CHECK_CONTAINS(C.error, bad[i].msg);
		CHECK(C.limit_one.kind == VG_LIMIT_UNSET);      /* fail closed: nothing half-parsed survives */
	}
}

static void test_load_requests(void)
{
	const char *uuid = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";
	static const char *const list[] = { "NVIDIA_GPU_MEMORY_REQUESTS", "3G,1:1536,gpu-AAAAAAAA-bbbb-cccc-dddd-eeeeeeeeeeee:25%,"
					    "2:unlimited", NULL };
	static const char *const keyed[] = { "NVIDIA_GPU_MEMORY_REQUESTS", "1:1G", "NVIDIA_GPU_MEMORY_REQUEST", "2G",
					     NULL };
	static const char *const with_limit[] = { "NVIDIA_GPU_MEMORY_LIMITS", "4G", "NVIDIA_GPU_MEMORY_REQUEST", "6G",
						  NULL };
	const char *src = "x";

	CHECK(load1("NVIDIA_GPU_MEMORY_REQUEST", "") == 0);     /* nothing: no soft limit */
	CHECK_EQ_U64(vg_config_request_for(&C, 0, NULL, 16 * GiB, &src), UINT64_MAX);
	CHECK(src == NULL);

	CHECK(load1("NVIDIA_GPU_MEMORY_REQUEST", "3072") == 0); /* bare number = MiB, every device */
	CHECK_EQ_U64(vg_config_request_for(&C, 0, NULL, 16 * GiB, &src), 3 * GiB);
	CHECK_STR(src, "NVIDIA_GPU_MEMORY_REQUEST");
	CHECK_EQ_U64(vg_config_request_for(&C, 7, uuid, 0, NULL), 3 * GiB);
	CHECK_EQ_U64(vg_config_limit_for(&C, 0, NULL, 16 * GiB, NULL), UINT64_MAX); /* a request is no limit */
	CHECK(load1("NVIDIA_GPU_MEMORY_REQUEST", "50%") == 0);
	CHECK_EQ_U64(vg_config_request_for(&C, 0, NULL, 16 * GiB, NULL), 8 * GiB);
	CHECK_EQ_U64(vg_config_request_for(&C, 0, NULL, 0, NULL), UINT64_MAX); /* total unknown: none */
	CHECK(load1("NVIDIA_GPU_MEMORY_REQUEST", "unlimited") == 0);
	CHECK_EQ_U64(vg_config_request_for(&C, 0, NULL, 16 * GiB, &src), UINT64_MAX);
	CHECK_STR(src, "NVIDIA_GPU_MEMORY_REQUEST");

	CHECK(load(list) == 0 && C.valid);
	CHECK_EQ_U64(vg_config_request_for(&C, 0, NULL, 16 * GiB, &src), 3 * GiB);
	CHECK_STR(src, "NVIDIA_GPU_MEMORY_REQUESTS");
	CHECK_EQ_U64(vg_config_request_for(&C, 1, NULL, 16 * GiB, NULL), 1536 * MiB);
	CHECK_EQ_U64(vg_config_request_for(&C, 1, uuid, 16 * GiB, NULL), 4 * GiB); /* uuid beats ordinal */
	CHECK_EQ_U64(vg_config_request_for(&C, 2, NULL, 16 * GiB, &src), UINT64_MAX);
	CHECK_STR(src, "NVIDIA_GPU_MEMORY_REQUESTS");

	/* the list's keyed entry, then (no default in the list) the single value */
	CHECK(load(keyed) == 0 && C.valid);
	CHECK_EQ_U64(vg_config_request_for(&C, 1, NULL, 0, &src), GiB);
	CHECK_STR(src, "NVIDIA_GPU_MEMORY_REQUESTS");
	CHECK_EQ_U64(vg_config_request_for(&C, 0, NULL, 0, &src), 2 * GiB);
	CHECK_STR(src, "NVIDIA_GPU_MEMORY_REQUEST");

	/* a request above the limit is allowed (the library notes it per device) */
	CHECK(load(with_limit) == 0 && C.valid);
	CHECK_EQ_U64(vg_config_request_for(&C, 0, NULL, 0, NULL), 6 * GiB);
	CHECK_EQ_U64(vg_config_limit_for(&C, 0, NULL, 0, NULL), 4 * GiB);
	CHECK_STR(C.note, "");

	CHECK(load1("NVIDIA_GPU_MEMORY_REQUESTS", "0:2G,0:3G") == -EINVAL);
	CHECK_STR(C.error, "vramguard: error: invalid NVIDIA_GPU_MEMORY_REQUESTS '0:3G': duplicate device key "
			   "(expected e.g. 4096, 4G, 50%, 0:4G,1:2G)");
	CHECK(load1("NVIDIA_GPU_MEMORY_REQUESTS", "4XB") == -EINVAL);
	CHECK_STR(C.error, "vramguard: error: invalid NVIDIA_GPU_MEMORY_REQUESTS '4XB': unknown unit 'XB' "
			   "(expected e.g. 4096, 4G, 50%, 0:4G,1:2G)");
	CHECK(C.requests.n == 0 && C.requests.dflt.kind == VG_LIMIT_UNSET);
	CHECK_EQ_U64(vg_config_request_for(&C, 0, NULL, 0, NULL), UINT64_MAX); /* invalid cfg: none */
	CHECK(load1("NVIDIA_GPU_MEMORY_REQUEST", "1:2G") == -EINVAL);
	CHECK_STR(C.error, "vramguard: error: invalid NVIDIA_GPU_MEMORY_REQUEST '1:2G': a device key is not allowed "
			   "here (expected e.g. 4096, 4G, 50%; per device: NVIDIA_GPU_MEMORY_REQUESTS=0:4G,1:2G)");
	CHECK(load1("NVIDIA_GPU_MEMORY_REQUEST", "lots") == -EINVAL);
	CHECK_STR(C.error, "vramguard: error: invalid NVIDIA_GPU_MEMORY_REQUEST 'lots': not a number (expected e.g. "
			   "4096, 4G, 50%; per device: NVIDIA_GPU_MEMORY_REQUESTS=0:4G,1:2G)");
	CHECK(C.request_one.kind == VG_LIMIT_UNSET);
}

/* The full limit chain: NVIDIA_GPU_MEMORY_LIMITS > NVIDIA_GPU_MEMORY_LIMIT > CUDA_DEVICE_MEMORY_LIMIT_<i> >
 * CUDA_DEVICE_MEMORY_LIMIT, each limit's source the variable it came from; and the one note when values disagree. */
static void test_precedence_nvidia(void)
{
	static const char *const chain[] = { "NVIDIA_GPU_MEMORY_LIMITS", "0:1G", "NVIDIA_GPU_MEMORY_LIMIT", "2G",
					     "CUDA_DEVICE_MEMORY_LIMIT_2", "3g", "CUDA_DEVICE_MEMORY_LIMIT", "4g", NULL };
	static const char *const lower[] = { "CUDA_DEVICE_MEMORY_LIMIT_2", "3g", "CUDA_DEVICE_MEMORY_LIMIT", "4g",
					     NULL };
	static const char *const same[] = { "NVIDIA_GPU_MEMORY_LIMITS", "4G", "NVIDIA_GPU_MEMORY_LIMIT", "4096",
					    "CUDA_DEVICE_MEMORY_LIMIT", "4294967296", "NVIDIA_GPU_MEMORY_REQUESTS", "50%",
					    "NVIDIA_GPU_MEMORY_REQUEST", "50.0%", NULL };
	static const char *const full[] = { "NVIDIA_GPU_MEMORY_LIMITS", "4G", "NVIDIA_GPU_MEMORY_LIMIT", "8G", NULL };
	static const char *const keyed_same[] = { "NVIDIA_GPU_MEMORY_LIMITS", "1:8G", "NVIDIA_GPU_MEMORY_LIMIT", "8G",
						  NULL };
	static const char *const req[] = { "NVIDIA_GPU_MEMORY_REQUESTS", "0:1G", "NVIDIA_GPU_MEMORY_REQUEST", "2G", NULL };
	static const char *const pct[] = { "NVIDIA_GPU_MEMORY_LIMITS", "50%", "NVIDIA_GPU_MEMORY_LIMIT", "8G", NULL };
	static const char *const hami_only[] = { "CUDA_DEVICE_MEMORY_LIMIT", "0:2g", "CUDA_DEVICE_MEMORY_LIMIT_1", "2g",
						 NULL };
	const char *src;

	CHECK(load(chain) == 0 && C.valid);
	CHECK_EQ_U64(vg_config_limit_for(&C, 0, NULL, 0, &src), GiB);
	CHECK_STR(src, "NVIDIA_GPU_MEMORY_LIMITS");
	CHECK_EQ_U64(vg_config_limit_for(&C, 2, NULL, 0, &src), 2 * GiB); /* beats CUDA_DEVICE_MEMORY_LIMIT_2 */
	CHECK_STR(src, "NVIDIA_GPU_MEMORY_LIMIT");
	CHECK_EQ_U64(vg_config_limit_for(&C, 5, NULL, 0, &src), 2 * GiB);
	CHECK_STR(src, "NVIDIA_GPU_MEMORY_LIMIT");
	/* one line, each ignored variable once, naming what takes precedence */
	CHECK_STR(C.note, "NVIDIA_GPU_MEMORY_LIMIT '2G' is ignored for the devices NVIDIA_GPU_MEMORY_LIMITS '0:1G' "
			  "names (it takes precedence); CUDA_DEVICE_MEMORY_LIMIT_2 '3g' is ignored "
			  "(NVIDIA_GPU_MEMORY_LIMIT '2G' takes precedence); CUDA_DEVICE_MEMORY_LIMIT '4g' is ignored "
			  "(NVIDIA_GPU_MEMORY_LIMITS '0:1G' takes precedence)");
	CHECK(!strchr(C.note, '\n') && strncmp(C.note, "vramguard", 9) != 0);

	CHECK(load(lower) == 0 && C.valid);
	CHECK_EQ_U64(vg_config_limit_for(&C, 2, NULL, 0, &src), 3 * GiB);
	CHECK_STR(src, "CUDA_DEVICE_MEMORY_LIMIT_2");
	CHECK_EQ_U64(vg_config_limit_for(&C, 0, NULL, 0, &src), 4 * GiB);
	CHECK_STR(src, "CUDA_DEVICE_MEMORY_LIMIT");
	CHECK_STR(C.note, "CUDA_DEVICE_MEMORY_LIMIT '4g' is ignored for the devices CUDA_DEVICE_MEMORY_LIMIT_2 '3g' "
			  "names (it takes precedence)");

	CHECK(load(same) == 0 && C.valid);              /* set several times, but to the same value: no note */
	CHECK_STR(C.note, "");
	CHECK(load(keyed_same) == 0 && C.valid);
	CHECK_STR(C.note, "");

	CHECK(load(full) == 0 && C.valid);
	CHECK_EQ_U64(vg_config_limit_for(&C, 3, NULL, 0, &src), 4 * GiB);
	CHECK_STR(src, "NVIDIA_GPU_MEMORY_LIMITS");
	CHECK_STR(C.note, "NVIDIA_GPU_MEMORY_LIMIT '8G' is ignored (NVIDIA_GPU_MEMORY_LIMITS '4G' takes precedence)");

	CHECK(load(pct) == 0);                          /* a percentage and a size: they disagree */
	CHECK_STR(C.note, "NVIDIA_GPU_MEMORY_LIMIT '8G' is ignored (NVIDIA_GPU_MEMORY_LIMITS '50%' takes precedence)");

	CHECK(load(req) == 0 && C.valid);
	CHECK_EQ_U64(vg_config_request_for(&C, 0, NULL, 0, &src), GiB);
	CHECK_STR(src, "NVIDIA_GPU_MEMORY_REQUESTS");
	CHECK_EQ_U64(vg_config_request_for(&C, 1, NULL, 0, &src), 2 * GiB);
	CHECK_STR(src, "NVIDIA_GPU_MEMORY_REQUEST");
	CHECK_STR(C.note, "NVIDIA_GPU_MEMORY_REQUEST '2G' is ignored for the devices NVIDIA_GPU_MEMORY_REQUESTS '0:1G' "
			  "names (it takes precedence)");

	CHECK(load(hami_only) == 0 && C.valid);         /* different devices: nothing ignored */
	CHECK_STR(C.note, "");

	CHECK(load1("NVIDIA_GPU_MEMORY_LIMIT", "4XB") == -EINVAL); /* a failed load has no note */
	CHECK_STR(C.note, "");
}

static void test_load_count_poll(void)
{
	static const char *const good[] = { "50", "500", "60000", " 1000 ", "0050" };
	static const unsigned want[] = { 50, 500, 60000, 1000, 50 };
	static const char *const bad[] = { "0", "49", "60001", "-1", "+100", "1.5", "500ms", "1s", "ten", "1 0",
					   "99999999999999999999999" };
	size_t i;

	CHECK(load1("VRAMGUARD_COUNT", "") == 0);
	CHECK(C.count == VG_COUNT_DEVICE && C.device_poll_ms == 500);
	CHECK(load1("VRAMGUARD_COUNT", "allocations") == 0 && C.count == VG_COUNT_ALLOCATIONS);
	CHECK(load1("VRAMGUARD_COUNT", " Device ") == 0 && C.count == VG_COUNT_DEVICE);
	CHECK(load1("VRAMGUARD_COUNT", "bytes") == -EINVAL && !C.valid);
	CHECK_STR(C.error, "vramguard: error: invalid VRAMGUARD_COUNT 'bytes': expected one of device, allocations");
	CHECK(C.count == VG_COUNT_DEVICE);
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		CHECK(load1("VRAMGUARD_DEVICE_POLL", good[i]) == 0 && C.valid);
		CHECK(C.device_poll_ms == want[i]);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char msg[VG_ERR_MAX];

		CHECK(load1("VRAMGUARD_DEVICE_POLL", bad[i]) == -EINVAL && !C.valid);
		snprintf(msg, sizeof(msg), "vramguard: error: invalid VRAMGUARD_DEVICE_POLL '%s': expected milliseconds, "
			 "an integer from 50 to 60000", bad[i]);
		CHECK_STR(C.error, msg);
		CHECK(C.device_poll_ms == 500);
	}
}

/* ---- reports: backtrace depth, signal, destination, format, stream check ---- */

static void test_load_backtrace(void)
{
	static const char *const good[] = { "0", "1", "16", "64", "063", " 8 ", "\t32\n" };
	static const int want[] = { 0, 1, 16, 64, 63, 8, 32 };
	static const char *const bad[] = { "65", "-1", "+5", "1.5", "8k", "0x10", "ten", "1 6", "100",
					   "99999999999999999999999", "-0", "16frames" };
	size_t i;

	CHECK(VG_BACKTRACE_DEFAULT >= 0 && VG_BACKTRACE_DEFAULT <= 64);
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		CHECK(load1("VRAMGUARD_BACKTRACE", good[i]) == 0);
		CHECK(C.valid == 1);
		CHECK(C.backtrace_depth == want[i]);
	}
	CHECK(load1("VRAMGUARD_BACKTRACE", "") == 0);
	CHECK(C.backtrace_depth == VG_BACKTRACE_DEFAULT);
	CHECK(load1("VRAMGUARD_BACKTRACE", "   ") == 0);
	CHECK(C.backtrace_depth == VG_BACKTRACE_DEFAULT);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want_msg[VG_ERR_MAX];

		CHECK(load1("VRAMGUARD_BACKTRACE", bad[i]) == -EINVAL);
		CHECK(C.valid == 0);
		CHECK(report_defaults(&C));
		snprintf(want_msg, sizeof(want_msg),
			 "vramguard: error: invalid VRAMGUARD_BACKTRACE '%s': expected an integer from 0 to 64", bad[i]);
		CHECK_STR(C.error, want_msg);
	}
	CHECK(load1("VRAMGUARD_BACKTRACE", "65") == -EINVAL);
	CHECK_STR(C.error, "vramguard: error: invalid VRAMGUARD_BACKTRACE '65': expected an integer from 0 to 64");
}

static void test_load_signal(void)
{
	static const struct {
		const char *v;
		int signo;
		const char *name;
	} good[] = {
		{ "USR1", SIGUSR1, "SIGUSR1" }, { "usr1", SIGUSR1, "SIGUSR1" }, { "SIGUSR1", SIGUSR1, "SIGUSR1" },
		{ "sigusr1", SIGUSR1, "SIGUSR1" }, { "SigUsr2", SIGUSR2, "SIGUSR2" }, { "USR2", SIGUSR2, "SIGUSR2" },
		{ "HUP", SIGHUP, "SIGHUP" }, { "sighup", SIGHUP, "SIGHUP" }, { "WINCH", SIGWINCH, "SIGWINCH" },
		{ "SIGWINCH", SIGWINCH, "SIGWINCH" }, { "pwr", SIGPWR, "SIGPWR" }, { "SIGPWR", SIGPWR, "SIGPWR" },
		{ "URG", SIGURG, "SIGURG" }, { "sigurg", SIGURG, "SIGURG" }, { " USR2 ", SIGUSR2, "SIGUSR2" },
		{ "off", 0, "off" }, { "OFF", 0, "off" }, { "Off", 0, "off" },
	};
	static const char *const bad[] = { "USR3", "SIG", "SIGOFF", "sig usr1", "SIGSIGUSR1", "10", "SIGKILL", "INT",
					   "TERM", "RTMIN", "SIGRTMIN", "RTMIN+", "RTMIN-1", "RTMIN+-1", "RTMIN++1",
					   "RTMIN+1x", "RTMIN+ 1", "RTMAX", "RTMAX-1", "USR1,USR2", "SIG_USR1", "usr" };
	int max = SIGRTMAX - SIGRTMIN;
	char v[64], want[VG_ERR_MAX];
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		CHECK(load1("VRAMGUARD_SIGNAL", good[i].v) == 0);
		CHECK(C.valid == 1);
		CHECK(C.signal == good[i].signo);
		CHECK_STR(C.signal_name, good[i].name);
	}
	CHECK(load1("VRAMGUARD_SIGNAL", "") == 0);
	CHECK(C.signal == SIGUSR1);
	CHECK_STR(C.signal_name, "SIGUSR1");

	/* RTMIN+N: both ends of the runtime range, both spellings, any case */
	CHECK(max >= 0);
	CHECK(load1("VRAMGUARD_SIGNAL", "RTMIN+0") == 0);
	CHECK(C.signal == SIGRTMIN);
	CHECK_STR(C.signal_name, "SIGRTMIN+0");
	CHECK(load1("VRAMGUARD_SIGNAL", "sigrtmin+3") == 0);
	CHECK(C.signal == SIGRTMIN + 3);
	CHECK_STR(C.signal_name, "SIGRTMIN+3");
	CHECK(load1("VRAMGUARD_SIGNAL", "SIGRTMIN+03") == 0);
	CHECK(C.signal == SIGRTMIN + 3);
	CHECK_STR(C.signal_name, "SIGRTMIN+3");
	snprintf(v, sizeof(v), "RTMIN+%d", max);
	CHECK(load1("VRAMGUARD_SIGNAL", v) == 0);
	CHECK(C.signal == SIGRTMAX);
	snprintf(want, sizeof(want), "SIGRTMIN+%d", max);
	CHECK_STR(C.signal_name, want);
	snprintf(v, sizeof(v), "SigRtMin+%d", max + 1);
	CHECK(load1("VRAMGUARD_SIGNAL", v) == -EINVAL);
	CHECK(C.valid == 0);
	CHECK(report_defaults(&C));
	snprintf(want, sizeof(want), "vramguard: error: invalid VRAMGUARD_SIGNAL '%s': expected RTMIN+N with N from 0 to %d",
		 v, max);
	CHECK_STR(C.error, want);
	CHECK(load1("VRAMGUARD_SIGNAL", "RTMIN+99999999999999999999") == -EINVAL);
	CHECK_CONTAINS(C.error, "': expected RTMIN+N with N from 0 to ");

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(load1("VRAMGUARD_SIGNAL", bad[i]) == -EINVAL);
		CHECK(C.valid == 0);
		snprintf(want, sizeof(want), "vramguard: error: invalid VRAMGUARD_SIGNAL '%s': expected one of off, USR1, "
			 "USR2, HUP, WINCH, PWR, URG, RTMIN+N", bad[i]);
		CHECK_STR(C.error, want);
	}
	CHECK(load1("VRAMGUARD_SIGNAL", "USR3") == -EINVAL);
	CHECK_STR(C.error, "vramguard: error: invalid VRAMGUARD_SIGNAL 'USR3': expected one of off, USR1, USR2, HUP, "
			   "WINCH, PWR, URG, RTMIN+N");
}

static void test_load_report(void)
{
	static const char *const paths[] = { "/tmp/vramguard-%p-%n.json", "report.txt", "./off", "out/%h/%r-%p.txt",
					     "/tmp/100%%-%n", "%p", "%%", "/tmp/stderr", "stderr.log", "/tmp/x y",
					     "/tmp/é-%p" };
	static const struct {
		const char *v, *msg;
	} bad[] = {
		{ "/tmp/x-%q.json", "vramguard: error: invalid VRAMGUARD_REPORT '/tmp/x-%q.json': unknown specifier '%q' "
				    "(expected e.g. stderr, off, /tmp/vramguard-%p-%n.json; specifiers %p %n %r %h %%)" },
		{ "/tmp/x-%", "vramguard: error: invalid VRAMGUARD_REPORT '/tmp/x-%': lone '%' at the end "
			      "(expected e.g. stderr, off, /tmp/vramguard-%p-%n.json; specifiers %p %n %r %h %%)" },
		{ "%", "vramguard: error: invalid VRAMGUARD_REPORT '%': lone '%' at the end "
		       "(expected e.g. stderr, off, /tmp/vramguard-%p-%n.json; specifiers %p %n %r %h %%)" },
		{ "/tmp/%%%", "vramguard: error: invalid VRAMGUARD_REPORT '/tmp/%%%': lone '%' at the end "
			      "(expected e.g. stderr, off, /tmp/vramguard-%p-%n.json; specifiers %p %n %r %h %%)" },
		{ "/tmp/%P", "vramguard: error: invalid VRAMGUARD_REPORT '/tmp/%P': unknown specifier '%P' "
			     "(expected e.g. stderr, off, /tmp/vramguard-%p-%n.json; specifiers %p %n %r %h %%)" },
		{ "%s", "vramguard: error: invalid VRAMGUARD_REPORT '%s': unknown specifier '%s' "
			"(expected e.g. stderr, off, /tmp/vramguard-%p-%n.json; specifiers %p %n %r %h %%)" },
		{ "/tmp/%d-%p", "vramguard: error: invalid VRAMGUARD_REPORT '/tmp/%d-%p': unknown specifier '%d' "
				"(expected e.g. stderr, off, /tmp/vramguard-%p-%n.json; specifiers %p %n %r %h %%)" },
		{ "/tmp/% x", "vramguard: error: invalid VRAMGUARD_REPORT '/tmp/% x': unknown specifier '% ' "
			      "(expected e.g. stderr, off, /tmp/vramguard-%p-%n.json; specifiers %p %n %r %h %%)" },
		{ "/tmp/%é", "vramguard: error: invalid VRAMGUARD_REPORT '/tmp/%é': unknown specifier '%é' "
			     "(expected e.g. stderr, off, /tmp/vramguard-%p-%n.json; specifiers %p %n %r %h %%)" },
	};
	static char big[1100];
	size_t i;

	CHECK(load1("VRAMGUARD_REPORT", "stderr") == 0);
	CHECK(C.report_dest == VG_REPORT_STDERR && C.report_path[0] == '\0');
	CHECK(load1("VRAMGUARD_REPORT", "STDERR") == 0);
	CHECK(C.report_dest == VG_REPORT_STDERR);
	CHECK(load1("VRAMGUARD_REPORT", "off") == 0);
	CHECK(C.report_dest == VG_REPORT_OFF && C.report_path[0] == '\0');
	CHECK(load1("VRAMGUARD_REPORT", " Off ") == 0);
	CHECK(C.report_dest == VG_REPORT_OFF);
	CHECK(load1("VRAMGUARD_REPORT", "") == 0);
	CHECK(C.report_dest == VG_REPORT_STDERR);
	CHECK(load1("VRAMGUARD_REPORT", " \t") == 0);
	CHECK(C.report_dest == VG_REPORT_STDERR);
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		CHECK(load1("VRAMGUARD_REPORT", paths[i]) == 0);
		CHECK(C.valid == 1);
		CHECK(C.report_dest == VG_REPORT_PATH);
		CHECK_STR(C.report_path, paths[i]);
	}
	CHECK(load1("VRAMGUARD_REPORT", "  /tmp/r-%p.json\n") == 0); /* trimmed like every other value */
	CHECK_STR(C.report_path, "/tmp/r-%p.json");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(load1("VRAMGUARD_REPORT", bad[i].v) == -EINVAL);
		CHECK(C.valid == 0);
		CHECK(report_defaults(&C));
		CHECK_STR(C.error, bad[i].msg);
	}

	/* length: 1023 bytes fit, 1024 do not */
	memset(big, 'a', sizeof(big) - 1);
	big[0] = '/';
	big[1023] = '\0';
	CHECK(load1("VRAMGUARD_REPORT", big) == 0);
	CHECK(C.report_dest == VG_REPORT_PATH);
	CHECK_EQ_U64(strlen(C.report_path), 1023);
	big[1023] = 'a';
	big[1024] = '\0';
	CHECK(load1("VRAMGUARD_REPORT", big) == -EINVAL);
	CHECK(C.valid == 0 && C.report_dest == VG_REPORT_STDERR);
	CHECK(strncmp(C.error, "vramguard: error: invalid VRAMGUARD_REPORT '/aaaa", 48) == 0);
	CHECK_CONTAINS(C.error, "...aaaa");
	CHECK_CONTAINS(C.error, "aaaa' (1024 bytes): path template too long (at most 1023 bytes) (expected e.g. stderr, off, "
				"/tmp/vramguard-%p-%n.json; specifiers %p %n %r %h %%)");
	CHECK(strlen(C.error) < VG_ERR_MAX - 1 && !strchr(C.error, '\n'));
	big[1020] = '%';
	big[1021] = 'z';
	CHECK(load1("VRAMGUARD_REPORT", big) == -EINVAL); /* the bad specifier is named before the length */
	CHECK_CONTAINS(C.error, "%zaa' (1024 bytes): unknown specifier '%z' (expected e.g.");
	CHECK(load1("VRAMGUARD_REPORT", "/tmp/x\n%q") == -EINVAL); /* control bytes quoted as '?' */
	CHECK_CONTAINS(C.error, "'/tmp/x?%q': unknown specifier '%q'");
	/* a directory is not a report file: a trailing '/', "." or ".." */
	CHECK(load1("VRAMGUARD_REPORT", "/tmp/reports/") == -EINVAL);
	CHECK_STR(C.error, "vramguard: error: invalid VRAMGUARD_REPORT '/tmp/reports/': names a directory, not a file "
			   "(expected e.g. stderr, off, /tmp/vramguard-%p-%n.json; specifiers %p %n %r %h %%)");
	CHECK(load1("VRAMGUARD_REPORT", "/tmp/r-%p/.") == -EINVAL);
	CHECK(load1("VRAMGUARD_REPORT", "..") == -EINVAL);
	CHECK(load1("VRAMGUARD_REPORT", "/tmp/r-%p/..x") == 0);
	CHECK(load1("VRAMGUARD_REPORT", "r.json") == 0);
}

static void test_report_expand(void)
{
	static char host[300];
	char out[1024], small[8];
	int rc;

	CHECK(vg_report_path_expand("/tmp/vramguard-%p-%n.json", 4242, 7, "exit", "node1", out, sizeof(out)) == 0);
	CHECK_STR(out, "/tmp/vramguard-4242-7.json");
	CHECK(vg_report_path_expand("%h/%r/%p/%n/%%", 1, 0, "signal", "gpu-host.example", out, sizeof(out)) == 0);
	CHECK_STR(out, "gpu-host.example/signal/1/0/%");
	CHECK(vg_report_path_expand("100%%-%%p-%%%p", 12, 3, "exit", "h", out, sizeof(out)) == 0);
	CHECK_STR(out, "100%-%p-%12");
	CHECK(vg_report_path_expand("plain.txt", 1, 1, "exit", "h", out, sizeof(out)) == 0);
	CHECK_STR(out, "plain.txt");
	CHECK(vg_report_path_expand("%n", 1, UINT64_MAX, "exit", "h", out, sizeof(out)) == 0);
	CHECK_STR(out, "18446744073709551615");
	CHECK(vg_report_path_expand("%p", 2147483647, 0, "exit", "h", out, sizeof(out)) == 0);
	CHECK_STR(out, "2147483647");
	CHECK(vg_report_path_expand("%p", -2147483647 - 1, 0, "exit", "h", out, sizeof(out)) == 0);
	CHECK_STR(out, "-2147483648");
	CHECK(vg_report_path_expand("%p", 0, 0, "exit", "h", out, sizeof(out)) == 0);
	CHECK_STR(out, "0");
	CHECK(vg_report_path_expand("r-%r-%h", 0, 0, NULL, NULL, out, sizeof(out)) == 0);
	CHECK_STR(out, "r--");
	CHECK(vg_report_path_expand("", 0, 0, "exit", "h", out, sizeof(out)) == 0);
	CHECK_STR(out, "");
	/* host and reason cannot add path components */
	CHECK(vg_report_path_expand("/tmp/%h-%r", 1, 1, "a/b", "../../etc/x", out, sizeof(out)) == 0);
	CHECK_STR(out, "/tmp/.._.._etc_x-a_b");

	/* exact fit and one byte short */
	CHECK(vg_report_path_expand("ab%p", 12345, 0, "exit", "h", small, sizeof(small)) == 0);
	CHECK_STR(small, "ab12345");
	CHECK(vg_report_path_expand("abc%p", 12345, 0, "exit", "h", small, sizeof(small)) == -ENAMETOOLONG);
	CHECK(vg_report_path_expand("12345678", 0, 0, "exit", "h", small, sizeof(small)) == -ENAMETOOLONG);
	CHECK(vg_report_path_expand("%%%%%%%%%%%%%%", 0, 0, "exit", "h", small, sizeof(small)) == 0);
	CHECK_STR(small, "%%%%%%%");
	CHECK(vg_report_path_expand("x", 0, 0, "exit", "h", small, 0) == -ENAMETOOLONG);
	CHECK(vg_report_path_expand("", 0, 0, "exit", "h", small, 1) == 0);
	CHECK_STR(small, "");

	/* a long host name overflows a buffer the template alone fits in; nothing is written past outlen */
	memset(host, 'h', sizeof(host) - 1);
	memset(out, 'Z', sizeof(out));
	rc = vg_report_path_expand("/tmp/%h-%p-%n.json", 1, 1, "exit", host, out, 256);
	CHECK(rc == -ENAMETOOLONG);
	CHECK(out[256] == 'Z' && out[sizeof(out) - 1] == 'Z');
	CHECK(vg_report_path_expand("/tmp/%h-%p-%n.json", 1, 1, "exit", host, out, sizeof(out)) == 0);
	CHECK_EQ_U64(strlen(out), 5 + 299 + 9); /* "/tmp/" host "-1-1.json" */
	{
		static char huge[2000], tmpl[1024];
		memset(huge, 'h', sizeof(huge) - 1);
		memset(tmpl, 0, sizeof(tmpl));
		memcpy(tmpl, "/tmp/%h", 7);
		CHECK(vg_report_path_expand(tmpl, 1, 1, "exit", huge, out, sizeof(out)) == -ENAMETOOLONG);
		memset(tmpl, 'a', sizeof(tmpl) - 1);
		tmpl[0] = '/';
		CHECK(vg_report_path_expand(tmpl, 1, 1, "exit", "h", out, sizeof(out)) == 0); /* 1023 + NUL */
		tmpl[1020] = '%';
		tmpl[1021] = 'p';
		CHECK(vg_report_path_expand(tmpl, 1234, 1, "exit", "h", out, sizeof(out)) == -ENAMETOOLONG);
	}

	/* templates the loader rejects */
	CHECK(vg_report_path_expand("/tmp/%q", 1, 1, "exit", "h", out, sizeof(out)) == -EINVAL);
	CHECK(vg_report_path_expand("/tmp/%", 1, 1, "exit", "h", out, sizeof(out)) == -EINVAL);
	CHECK(vg_report_path_expand(NULL, 1, 1, "exit", "h", out, sizeof(out)) == -EINVAL);

	/* what the loader accepts, the expander expands */
	CHECK(load1("VRAMGUARD_REPORT", "/tmp/vg-%h-%r-%p-%n-%%.json") == 0);
	CHECK(vg_report_path_expand(C.report_path, 99, 2, "signal", "n0", out, sizeof(out)) == 0);
	CHECK_STR(out, "/tmp/vg-n0-signal-99-2-%.json");
}

static void test_load_format_stream(void)
{
	static const char *const fmt[] = { "text", "json", "TEXT", "Json", " json " };
	static const int fmt_want[] = { VG_FORMAT_TEXT, VG_FORMAT_JSON, VG_FORMAT_TEXT, VG_FORMAT_JSON, VG_FORMAT_JSON };
	static const char *const sc[] = { "warn", "sync", "off", "WARN", "Sync", "OFF" };
	static const int sc_want[] = { VG_STREAM_WARN, VG_STREAM_SYNC, VG_STREAM_OFF,
				       VG_STREAM_WARN, VG_STREAM_SYNC, VG_STREAM_OFF };
	static const char *const all[] = { "VRAMGUARD_BACKTRACE", "0", "VRAMGUARD_SIGNAL", "sighup",
					   "VRAMGUARD_REPORT", "/tmp/r-%p-%n.json", "VRAMGUARD_REPORT_FORMAT", "json",
					   "VRAMGUARD_STREAM_CHECK", "sync", NULL };
	static const char *const two_bad[] = { "VRAMGUARD_SIGNAL", "USR3", "VRAMGUARD_REPORT", "%q", NULL };
	size_t i;

	for (i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++) {
		CHECK(load1("VRAMGUARD_REPORT_FORMAT", fmt[i]) == 0);
		CHECK(C.report_format == fmt_want[i]);
	}
	CHECK(load1("VRAMGUARD_REPORT_FORMAT", "") == 0);
	CHECK(C.report_format == VG_FORMAT_TEXT);
	CHECK(load1("VRAMGUARD_REPORT_FORMAT", "yaml") == -EINVAL);
	CHECK(C.valid == 0 && report_defaults(&C));
	CHECK_STR(C.error, "vramguard: error: invalid VRAMGUARD_REPORT_FORMAT 'yaml': expected one of text, json");
	for (i = 0; i < sizeof(sc) / sizeof(sc[0]); i++) {
		CHECK(load1("VRAMGUARD_STREAM_CHECK", sc[i]) == 0);
		CHECK(C.stream_check == sc_want[i]);
	}
	CHECK(load1("VRAMGUARD_STREAM_CHECK", " ") == 0);
	CHECK(C.stream_check == VG_STREAM_WARN);
	CHECK(load1("VRAMGUARD_STREAM_CHECK", "error") == -EINVAL);
	CHECK_STR(C.error, "vramguard: error: invalid VRAMGUARD_STREAM_CHECK 'error': expected one of warn, sync, off");

	CHECK(load(all) == 0);
	CHECK(C.valid == 1 && C.backtrace_depth == 0 && C.signal == SIGHUP && C.report_dest == VG_REPORT_PATH &&
	      C.report_format == VG_FORMAT_JSON && C.stream_check == VG_STREAM_SYNC);
	CHECK_STR(C.signal_name, "SIGHUP");
	CHECK_STR(C.report_path, "/tmp/r-%p-%n.json");
	CHECK(C.log_level == VG_LOG_WARN && C.managed == VG_MANAGED_COUNT);
	CHECK(load(two_bad) == -EINVAL); /* first error in table order wins */
	CHECK_CONTAINS(C.error, "VRAMGUARD_SIGNAL 'USR3'");
}

/* ---- options table and docs ---- */

/* The index of a row of the options table, or -1. */
static int option_index(const char *name)
{
	for (size_t i = 0; i < vg_options_count; i++)
		if (strcmp(vg_options[i].name, name) == 0)
			return (int)i;
	return -1;
}

static uint64_t option_bit(const char *name)
{
	int i = option_index(name);
	return i < 0 ? 0 : (uint64_t)1 << i;
}

/* Secure mode (a setuid/setgid or capable process): the rows that name files, directories or file modes are not
 * read; they take their safe values, and cfg records which of them were set. Everything else, limits first, is read
 * as usual. */
static void test_load_secure(void)
{
	static const char *const ignored[] = { "VRAMGUARD_REPORT", "VRAMGUARD_REPORT_MODE", "VRAMGUARD_SHM_DIR",
					       "VRAMGUARD_SHARED", "VRAMGUARD_SHARED_LIMITS", "VRAMGUARD_SHARED_MODE",
					       "VRAMGUARD_SHARED_SLOTS", "VRAMGUARD_CONTROL" };
	char note[VG_ERR_MAX];
	size_t i, n = 0;

	for (i = 0; i < vg_options_count; i++) {         /* the table says which: exactly these eight */
		int want = 0;
		for (size_t j = 0; j < sizeof(ignored) / sizeof(ignored[0]); j++)
			want |= strcmp(vg_options[i].name, ignored[j]) == 0;
		if ((vg_options[i].secure != NULL) != want)
			fprintf(stderr, "row %s: secure mode says %s\n", vg_options[i].name,
				vg_options[i].secure ? "ignored" : "read");
		n += (vg_options[i].secure != NULL) == want;
	}
	CHECK_EQ_U64(n, vg_options_count);

	const char *env[] = { "NVIDIA_GPU_MEMORY_LIMITS", "4G", "CUDA_DEVICE_MEMORY_LIMIT_1", "1G",
			      "VRAMGUARD_SHARED", "/root-only/x", "VRAMGUARD_SHARED_MODE", "0660",
			      "VRAMGUARD_LOG", "info", "VRAMGUARD_REPORT_FORMAT", "json", "VRAMGUARD_SIGNAL", "USR2", NULL };
	fake_env = env;
	CHECK(vg_config_load(&C, fake_getenv, 0) == 0 && C.valid && !C.secure && C.secure_ignored == 0);
	CHECK_STR(C.shared_path, "/root-only/x");               /* not secure: read */
	CHECK(C.shared_mode == 0660 && C.control == VG_CONTROL_ON);
	CHECK(vg_config_secure_note(&C, note, sizeof(note)) == VG_LOG_OFF && note[0] == '\0');

	CHECK(vg_config_load(&C, fake_getenv, 1) == 0 && C.valid && C.secure);
	CHECK_EQ_U64(vg_config_limit_for(&C, 0, NULL, 16 * GiB, NULL), 4 * GiB); /* limits still apply */
	C.limits.dflt.kind = VG_LIMIT_UNSET;
	CHECK_EQ_U64(vg_config_limit_for(&C, 1, NULL, 16 * GiB, NULL), 1 * GiB);
	CHECK(C.log_level == VG_LOG_INFO && C.report_format == VG_FORMAT_JSON && C.signal == SIGUSR2);
	CHECK(C.shared_path[0] == '\0' && C.shared_name[0] == '\0' && C.shared_spec[0] == '\0');
	/* NVIDIA's other names, the count and the poll are read too: limits only restrict the process */
	const char *nv[] = { "NVIDIA_GPU_MEMORY_LIMIT", "3G", "NVIDIA_GPU_MEMORY_REQUEST", "2G",
			     "NVIDIA_GPU_MEMORY_REQUESTS", "1:1G", "VRAMGUARD_COUNT", "allocations",
			     "VRAMGUARD_DEVICE_POLL", "100", NULL };
	struct vg_config sec;
	fake_env = nv;
	CHECK(vg_config_load(&sec, fake_getenv, 1) == 0 && sec.valid && sec.secure && sec.secure_ignored == 0);
	CHECK_EQ_U64(vg_config_limit_for(&sec, 0, NULL, 16 * GiB, NULL), 3 * GiB);
	CHECK_EQ_U64(vg_config_request_for(&sec, 0, NULL, 16 * GiB, NULL), 2 * GiB);
	CHECK_EQ_U64(vg_config_request_for(&sec, 1, NULL, 16 * GiB, NULL), GiB);
	CHECK(sec.count == VG_COUNT_ALLOCATIONS && sec.device_poll_ms == 100);
	fake_env = env;
	CHECK(C.shared_mode == 0600 && C.control == VG_CONTROL_OFF && C.report_dest == VG_REPORT_STDERR);
	CHECK(C.report_mode == 0600);
	CHECK_STR(C.shm_dir, "/dev/shm");
	CHECK_EQ_U64(C.secure_ignored, option_bit("VRAMGUARD_SHARED") | option_bit("VRAMGUARD_SHARED_MODE"));
	CHECK(vg_config_secure_note(&C, note, sizeof(note)) == VG_LOG_WARN);
	CHECK_STR(note, "this program runs with elevated privileges (setuid/setgid or capabilities): VRAMGUARD_SHARED, "
			"VRAMGUARD_SHARED_MODE ignored: no shared region, no control segment, reports go to stderr");

	/* Nothing set: the safe values all the same, and the note only says there is no control segment. */
	CHECK(load1("VRAMGUARD_LOG", "warn") == 0);
	CHECK(vg_config_load(&C, fake_getenv, 1) == 0 && C.valid && C.control == VG_CONTROL_OFF);
	CHECK(C.secure_ignored == 0);
	CHECK(vg_config_secure_note(&C, note, sizeof(note)) == VG_LOG_INFO);
	CHECK_STR(note, "this program runs with elevated privileges (setuid/setgid or capabilities): "
			"no control segment");

	/* Ignored means not parsed: invalid values fail nothing, and are named like any other. An empty value is
	 * unset, as everywhere. */
	const char *bad[] = { "VRAMGUARD_REPORT", "%q", "VRAMGUARD_REPORT_MODE", "9", "VRAMGUARD_SHM_DIR", "relative",
			      "VRAMGUARD_SHARED", "no/such", "VRAMGUARD_SHARED_LIMITS", "4XB", "VRAMGUARD_SHARED_MODE",
			      "0777", "VRAMGUARD_CONTROL", " ", NULL };
	fake_env = bad;
	CHECK(vg_config_load(&C, fake_getenv, 0) == -EINVAL && !C.valid);
	CHECK(vg_config_load(&C, fake_getenv, 1) == 0 && C.valid && C.error[0] == '\0');
	CHECK(C.control == VG_CONTROL_OFF && C.shared_path[0] == '\0' && C.report_dest == VG_REPORT_STDERR);
	CHECK_EQ_U64(C.secure_ignored, option_bit("VRAMGUARD_REPORT") | option_bit("VRAMGUARD_REPORT_MODE") |
			option_bit("VRAMGUARD_SHM_DIR") | option_bit("VRAMGUARD_SHARED") |
			option_bit("VRAMGUARD_SHARED_LIMITS") | option_bit("VRAMGUARD_SHARED_MODE"));
	CHECK(vg_config_secure_note(&C, note, sizeof(note)) == VG_LOG_WARN);
	CHECK_CONTAINS(note, ": VRAMGUARD_REPORT, VRAMGUARD_REPORT_MODE, VRAMGUARD_SHM_DIR, VRAMGUARD_SHARED, "
			     "VRAMGUARD_SHARED_LIMITS, VRAMGUARD_SHARED_MODE ignored: ");

	/* VRAMGUARD_REPORT=off is ignored too (stderr is the one destination that creates no file), and
	 * NVIDIA_GPU_MEMORY_LIMITS does not become a region's budget without a region. */
	const char *off[] = { "VRAMGUARD_REPORT", "off", "VRAMGUARD_CONTROL", "on", "NVIDIA_GPU_MEMORY_LIMITS", "2G",
			      "VRAMGUARD_SHARED", "team", NULL };
	fake_env = off;
	CHECK(vg_config_load(&C, fake_getenv, 1) == 0 && C.report_dest == VG_REPORT_STDERR);
	CHECK(C.control == VG_CONTROL_OFF && C.shared_spec[0] == '\0' && C.shared_spec_source == NULL);
	CHECK_EQ_U64(C.secure_ignored, option_bit("VRAMGUARD_REPORT") | option_bit("VRAMGUARD_CONTROL") |
			option_bit("VRAMGUARD_SHARED"));

	/* A variable that is read still fails closed, and the failed load keeps the secure values and the record. */
	const char *limit[] = { "NVIDIA_GPU_MEMORY_LIMITS", "4XB", "VRAMGUARD_SHARED", "team", NULL };
	fake_env = limit;
	CHECK(vg_config_load(&C, fake_getenv, 1) == -EINVAL && !C.valid);
	CHECK_CONTAINS(C.error, "invalid NVIDIA_GPU_MEMORY_LIMITS '4XB'");
	CHECK(C.secure && C.control == VG_CONTROL_OFF && C.secure_ignored == option_bit("VRAMGUARD_SHARED"));
	CHECK(vg_config_secure_note(&C, note, sizeof(note)) == VG_LOG_WARN);

	/* A short buffer gets a cut, terminated line. */
	fake_env = bad;
	CHECK(vg_config_load(&C, fake_getenv, 1) == 0);
	CHECK(vg_config_secure_note(&C, note, 20) == VG_LOG_WARN && strlen(note) == 19);
	fake_env = NULL;
}

static void test_options_table(void)
{
	static const char *const want[] = { "NVIDIA_GPU_MEMORY_LIMITS", "CUDA_DEVICE_MEMORY_LIMIT",
					    "CUDA_DEVICE_MEMORY_LIMIT_<i>", "VRAMGUARD_LOG", "VRAMGUARD_MANAGED",
					    "VRAMGUARD_BACKTRACE", "VRAMGUARD_SIGNAL", "VRAMGUARD_REPORT",
					    "VRAMGUARD_REPORT_FORMAT", "VRAMGUARD_STREAM_CHECK",
					    "NVIDIA_GPU_MEMORY_LIMIT", "NVIDIA_GPU_MEMORY_REQUESTS",
					    "NVIDIA_GPU_MEMORY_REQUEST", "VRAMGUARD_COUNT", "VRAMGUARD_DEVICE_POLL" };
	char md[20000] = "";
	char num[16];
	size_t i, j;
	FILE *f;

	CHECK(vg_options_count >= 10);
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
		if (strcmp(o->name, "VRAMGUARD_BACKTRACE") == 0) {
			snprintf(num, sizeof(num), "%d", VG_BACKTRACE_DEFAULT); /* the docs follow the macro */
			CHECK_STR(o->dflt, num);
		}
		/* An integer row has a range, read by the generic loader, and its values text shows the same bounds. */
		CHECK((strcmp(o->type, "integer") == 0) == (o->range.max != 0));
		if (o->range.max) {
			char bounds[48];
			snprintf(bounds, sizeof(bounds), "%lu to %lu", o->range.min, o->range.max);
			CHECK(strncmp(o->values, bounds, strlen(bounds)) == 0);
			CHECK(o->range.min < o->range.max && o->range.max <= INT_MAX);
			CHECK(o->range.field + sizeof(int) <= sizeof(struct vg_config));
		}
		if (strcmp(o->name, "VRAMGUARD_SIGNAL") == 0) {
			CHECK_STR(o->dflt, "USR1");
			CHECK(strncmp(o->values, "off, USR1, USR2, HUP, WINCH, PWR, URG, RTMIN+N", 46) == 0);
		}
		if (strcmp(o->name, "VRAMGUARD_REPORT") == 0)
			CHECK_STR(o->dflt, "stderr");
		if (strcmp(o->name, "VRAMGUARD_REPORT_FORMAT") == 0) {
			CHECK_STR(o->values, "text, json");
			CHECK_STR(o->dflt, "text");
		}
		if (strcmp(o->name, "VRAMGUARD_STREAM_CHECK") == 0) {
			CHECK_STR(o->values, "warn, sync, off");
			CHECK_STR(o->dflt, "warn");
		}
		if (strcmp(o->name, "VRAMGUARD_COUNT") == 0) {
			CHECK_STR(o->values, "device, allocations");
			CHECK_STR(o->dflt, "device");
		}
		if (strcmp(o->name, "VRAMGUARD_DEVICE_POLL") == 0) {
			CHECK_STR(o->dflt, "500");
			CHECK_STR(o->values, "50 to 60000 (decimal, milliseconds)");
		}
		/* Each limit and request row says where it stands in its precedence chain. */
		if (strcmp(o->name, "NVIDIA_GPU_MEMORY_LIMIT") == 0)
			CHECK_CONTAINS(o->doc, "used where NVIDIA_GPU_MEMORY_LIMITS says nothing; beats "
					       "CUDA_DEVICE_MEMORY_LIMIT_<i> and CUDA_DEVICE_MEMORY_LIMIT");
		if (strcmp(o->name, "NVIDIA_GPU_MEMORY_LIMITS") == 0)
			CHECK_CONTAINS(o->doc, "NVIDIA_GPU_MEMORY_LIMIT, then CUDA_DEVICE_MEMORY_LIMIT_<i>, then "
					       "CUDA_DEVICE_MEMORY_LIMIT");
		if (strcmp(o->name, "CUDA_DEVICE_MEMORY_LIMIT_<i>") == 0)
			CHECK_CONTAINS(o->doc, "loses to NVIDIA_GPU_MEMORY_LIMITS and NVIDIA_GPU_MEMORY_LIMIT");
		if (strcmp(o->name, "NVIDIA_GPU_MEMORY_REQUESTS") == 0)
			CHECK_CONTAINS(o->doc, "beats NVIDIA_GPU_MEMORY_REQUEST");
		if (strcmp(o->name, "NVIDIA_GPU_MEMORY_REQUEST") == 0)
			CHECK_CONTAINS(o->doc, "used where NVIDIA_GPU_MEMORY_REQUESTS says nothing");
		if (strcmp(o->name, "VRAMGUARD_COMPUTE_LIMIT") == 0)
			CHECK_CONTAINS(o->doc, "Beats CUDA_DEVICE_SM_LIMIT_<i>, then CUDA_DEVICE_SM_LIMIT");
		if (strcmp(o->name, "CUDA_DEVICE_SM_LIMIT_<i>") == 0)
			CHECK_CONTAINS(o->doc, "beats CUDA_DEVICE_SM_LIMIT, loses to VRAMGUARD_COMPUTE_LIMIT");
		if (strcmp(o->name, "CUDA_DEVICE_SM_LIMIT") == 0)
			CHECK_CONTAINS(o->doc, "used where VRAMGUARD_COMPUTE_LIMIT and CUDA_DEVICE_SM_LIMIT_<i> say nothing");
	}
	/* `vramguard run`'s flags come from the table: each names its variable once, long and short flags unique. */
	{
		static const char *const flags[][3] = {
			{ "limit", "l", "NVIDIA_GPU_MEMORY_LIMITS" }, { "report", "r", "VRAMGUARD_REPORT" },
			{ "format", "f", "VRAMGUARD_REPORT_FORMAT" }, { "backtrace", "b", "VRAMGUARD_BACKTRACE" },
			{ "signal", "s", "VRAMGUARD_SIGNAL" },        { "log", "", "VRAMGUARD_LOG" },
			{ "stream-check", "", "VRAMGUARD_STREAM_CHECK" }, { "shared", "", "VRAMGUARD_SHARED" },
			{ "shared-limit", "", "VRAMGUARD_SHARED_LIMITS" }, { "python", "", "VRAMGUARD_PYTHON" },
			{ "compute", "c", "VRAMGUARD_COMPUTE_LIMIT" },
		};
		size_t nflags = 0;
		for (j = 0; j < vg_options_count; j++) {
			const struct vg_option_flag *fl = &vg_options[j].flag;
			if (!fl->name) {
				CHECK(!fl->short_name && !fl->metavar && !fl->usage);
				continue;
			}
			nflags++;
			CHECK(fl->metavar && *fl->metavar && fl->usage && *fl->usage && fl->short_name != 'h');
			CHECK(strcmp(fl->name, "help") != 0);
			for (i = 0; i < j; i++) {
				const struct vg_option_flag *o = &vg_options[i].flag;
				CHECK(!o->name || strcmp(o->name, fl->name) != 0);
				CHECK(!fl->short_name || o->short_name != fl->short_name);
			}
		}
		CHECK_EQ_U64(nflags, sizeof(flags) / sizeof(flags[0]));
		for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
			int found = 0;
			for (j = 0; j < vg_options_count; j++) {
				const struct vg_option_flag *fl = &vg_options[j].flag;
				if (fl->name && strcmp(fl->name, flags[i][0]) == 0) {
					found = 1;
					CHECK_STR(vg_options[j].name, flags[i][2]);
					CHECK(fl->short_name == flags[i][1][0]);
				}
			}
			CHECK(found);
		}
	}
	f = fmemopen(md, sizeof(md) - 1, "w");
	CHECK(f != NULL);
	if (f) {
		vg_options_write_markdown(f);
		fclose(f);
	}
	CHECK(strncmp(md, "| Variable | Type | Default | Values | Description | Secure mode |\n|---|", 71) == 0);
	CHECK_CONTAINS(md, "| read |\n| `CUDA_DEVICE_MEMORY_LIMIT` |");
	CHECK_CONTAINS(md, "| ignored: `off` |\n");      /* VRAMGUARD_CONTROL, the last row */
	CHECK_CONTAINS(md, "| `VRAMGUARD_LOG` | enum | warn | off, error, warn, info, debug |");
	CHECK_CONTAINS(md, "`CUDA_DEVICE_MEMORY_LIMIT_<i>`");
	CHECK_CONTAINS(md, "| `VRAMGUARD_STREAM_CHECK` | enum | warn | warn, sync, off |");
	CHECK(strlen(md) < sizeof(md) - 2); /* not truncated */
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

/* A GPU's UUID as CUDA, NVML and nvidia-smi write it, whatever buffer it is given. */
static void test_format_uuid(void)
{
	const char bytes[16] = { 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, (char)0x88, (char)0x99, (char)0xaa,
				 (char)0xbb, (char)0xcc, (char)0xdd, (char)0xee, (char)0xff };
	char b[VG_UUID_MAX];

	CHECK_STR(vg_format_uuid(bytes, b, sizeof(b)), "GPU-00112233-4455-6677-8899-aabbccddeeff");
	CHECK_STR(vg_format_uuid(bytes, b, 9), "GPU-0011");
	CHECK(vg_format_uuid(bytes, b, 0) == b);
}

/* One GPU's policy: the quota, the request and the warning threshold with their variables, and the soft limit they
 * make (the lower of the two, a tie to the request; a percentage of VRAMGUARD_WARN_AT is of the quota). */
/* ---- the compute share: VRAMGUARD_COMPUTE_LIMIT, CUDA_DEVICE_SM_LIMIT[_<i>] ---- */

static struct vg_limits CL;

/* value is rejected with exactly the message want (want NULL: any message). */
static int compute_bad(const char *value, const char *want)
{
	if (vg_parse_compute("VRAMGUARD_COMPUTE_LIMIT", value, &CL, err, sizeof(err)) != -EINVAL) {
		fprintf(stderr, "compute '%s' accepted\n", value);
		return 0;
	}
	if (want && strcmp(err, want) != 0) {
		fprintf(stderr, "compute '%s': error\n  '%s', want\n  '%s'\n", value, err, want);
		return 0;
	}
	return !strchr(err, '\n') && strlen(err) < VG_ERR_MAX;
}

#define VG_CX " (expected e.g. 50%, 0:30%,1:70%, GPU-<uuid>:40%, unlimited)"
#define VG_CE "vramguard: error: invalid VRAMGUARD_COMPUTE_LIMIT "

static void test_compute_parse(void)
{
	char big[300];

	CHECK(vg_parse_compute("VRAMGUARD_COMPUTE_LIMIT", "50%", &CL, err, sizeof(err)) == 0);
	CHECK(CL.dflt.kind == VG_LIMIT_PERCENT && CL.dflt.ppm == 500000 && CL.n == 0);
	CHECK_STR(CL.dflt.source, "VRAMGUARD_COMPUTE_LIMIT");
	CHECK(vg_parse_compute("X", "1%", &CL, err, sizeof(err)) == 0 && CL.dflt.ppm == 10000);
	CHECK(vg_parse_compute("X", "100%", &CL, err, sizeof(err)) == 0 && CL.dflt.ppm == 1000000);
	CHECK(vg_parse_compute("X", " 0:30% , 1=70% ", &CL, err, sizeof(err)) == 0);
	CHECK(CL.dflt.kind == VG_LIMIT_UNSET && CL.n == 2);
	CHECK(CL.e[0].ordinal == 0 && CL.e[0].limit.ppm == 300000 && CL.e[1].ordinal == 1 && CL.e[1].limit.ppm == 700000);
	CHECK(vg_parse_compute("X", "GPU-AAAAAAAA-bbbb-cccc-dddd-eeeeeeeeeeee:40%,50%,2:unlimited", &CL, err,
			       sizeof(err)) == 0);
	CHECK(CL.n == 2 && CL.e[0].ordinal == -1 && CL.e[0].limit.ppm == 400000 && CL.dflt.ppm == 500000);
	CHECK(CL.e[1].ordinal == 2 && CL.e[1].limit.kind == VG_LIMIT_UNLIMITED);
	CHECK(vg_parse_compute("X", "UNLIMITED", &CL, err, sizeof(err)) == 0 && CL.dflt.kind == VG_LIMIT_UNLIMITED);
	CHECK(vg_parse_compute("X", " ", &CL, err, sizeof(err)) == 0 && CL.dflt.kind == VG_LIMIT_UNSET && CL.n == 0);

	CHECK(compute_bad("0%", VG_CE "'0%': 0% would never let a kernel run (no limit: unlimited)" VG_CX));
	CHECK(compute_bad("101%", VG_CE "'101%': percentage above 100%" VG_CX));
	CHECK(compute_bad("50", VG_CE "'50': missing '%' (a share is a whole percentage of the GPU's time)" VG_CX));
	CHECK(compute_bad("50.5%", VG_CE "'50.5%': not a whole percentage" VG_CX));
	CHECK(compute_bad("5O%", VG_CE "'5O%': not a percentage" VG_CX));
	CHECK(compute_bad("%", VG_CE "'%': not a percentage" VG_CX));
	CHECK(compute_bad("5 0%", VG_CE "'5 0%': spaces are not allowed" VG_CX));
	CHECK(compute_bad("-5%", VG_CE "'-5%': not a percentage" VG_CX));
	CHECK(compute_bad("50%,,1:20%", VG_CE "'50%,,1:20%': empty item in list" VG_CX));
	CHECK(compute_bad("50%,", VG_CE "'50%,': empty item in list" VG_CX));
	CHECK(compute_bad("0:30%,0:40%", VG_CE "'0:40%': duplicate device key" VG_CX));
	CHECK(compute_bad("50%,60%", VG_CE "'60%': more than one default (a value without a device key)" VG_CX));
	CHECK(compute_bad("1:", VG_CE "'1:': missing percentage after the key" VG_CX));
	CHECK(compute_bad("64:50%", VG_CE "'64:50%': device ordinal out of range (0..63)" VG_CX));
	CHECK(compute_bad("4G", VG_CE "'4G': missing '%' (a share is a whole percentage of the GPU's time)" VG_CX));
	CHECK(compute_bad("5\xff%", NULL));             /* not UTF-8: not a digit either */
	CHECK_CONTAINS(err, "not a percentage");
	CHECK(compute_bad("99999999999999999999999%", VG_CE "'99999999999999999999999%': percentage above 100%" VG_CX));
	memset(big, '1', sizeof(big) - 2);              /* a long value: one short line all the same */
	big[sizeof(big) - 2] = '%';
	big[sizeof(big) - 1] = '\0';
	CHECK(compute_bad(big, NULL) && strlen(err) < 250);
	CHECK(CL.n == 0 && CL.dflt.kind == VG_LIMIT_UNSET); /* nothing half-parsed */
}

static void test_compute_load(void)
{
	const char *uuid = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", *src = "x";
	static const char *const chain[] = { "VRAMGUARD_COMPUTE_LIMIT", "0:30%", "CUDA_DEVICE_SM_LIMIT_1", "60",
					     "CUDA_DEVICE_SM_LIMIT_0", "20", "CUDA_DEVICE_SM_LIMIT", "40", NULL };
	static const char *const hami[] = { "CUDA_DEVICE_SM_LIMIT", "40", "CUDA_DEVICE_SM_LIMIT_1", "0",
					    "CUDA_DEVICE_SM_LIMIT_2", "100", "CUDA_DEVICE_SM_LIMIT_3", " 25 ", NULL };
	static const char *const keyed[] = { "VRAMGUARD_COMPUTE_LIMIT",
					     "50%,1:20%,GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee:40%", NULL };
	static const char *const same[] = { "VRAMGUARD_COMPUTE_LIMIT", "50%", "CUDA_DEVICE_SM_LIMIT", "50", NULL };
	static const char *const full[] = { "VRAMGUARD_COMPUTE_LIMIT", "50%", "CUDA_DEVICE_SM_LIMIT", "30", NULL };
	static const char *const nolimit[] = { "CUDA_DEVICE_SM_LIMIT", "0", NULL };

	CHECK(load1("VRAMGUARD_LOG", "warn") == 0 && vg_config_compute_for(&C, 0, uuid, &src) == 0 && src == NULL);

	CHECK(load(chain) == 0 && C.valid);
	CHECK(vg_config_compute_for(&C, 0, NULL, &src) == 30);
	CHECK_STR(src, "VRAMGUARD_COMPUTE_LIMIT");
	CHECK(vg_config_compute_for(&C, 1, NULL, &src) == 60);
	CHECK_STR(src, "CUDA_DEVICE_SM_LIMIT_1");
	CHECK(vg_config_compute_for(&C, 5, uuid, &src) == 40);
	CHECK_STR(src, "CUDA_DEVICE_SM_LIMIT");
	CHECK(vg_config_compute_for(&C, -1, uuid, &src) == 40); /* ordinal unknown: the default only */
	CHECK_STR(C.note, "CUDA_DEVICE_SM_LIMIT_0 '20' is ignored for the devices VRAMGUARD_COMPUTE_LIMIT '0:30%' "
			  "names (it takes precedence); CUDA_DEVICE_SM_LIMIT '40' is ignored for the devices "
			  "VRAMGUARD_COMPUTE_LIMIT '0:30%' names (it takes precedence)");

	CHECK(load(hami) == 0 && C.valid);
	CHECK(vg_config_compute_for(&C, 0, NULL, &src) == 40);
	CHECK(vg_config_compute_for(&C, 1, NULL, &src) == 40);  /* _1=0: not set, as in HAMi-core */
	CHECK_STR(src, "CUDA_DEVICE_SM_LIMIT");
	CHECK(vg_config_compute_for(&C, 2, NULL, &src) == 0);   /* 100: no limit, said */
	CHECK_STR(src, "CUDA_DEVICE_SM_LIMIT_2");
	CHECK(vg_config_compute_for(&C, 3, NULL, &src) == 25);
	CHECK(C.sm.n == 2);

	CHECK(load(keyed) == 0 && C.valid);
	CHECK(vg_config_compute_for(&C, 1, uuid, &src) == 40);  /* a UUID key beats an ordinal key */
	CHECK(vg_config_compute_for(&C, 1, NULL, &src) == 20);
	CHECK(vg_config_compute_for(&C, 7, "GPU-00000000-0000-0000-0000-000000000007", &src) == 50);
	CHECK_STR(C.note, "");

	CHECK(load(same) == 0 && C.valid);               /* the same share twice: no note */
	CHECK_STR(C.note, "");
	CHECK(load(full) == 0 && C.valid);
	CHECK_STR(C.note, "CUDA_DEVICE_SM_LIMIT '30' is ignored (VRAMGUARD_COMPUTE_LIMIT '50%' takes precedence)");
	CHECK(load(nolimit) == 0 && vg_config_compute_for(&C, 0, NULL, &src) == 0);
	CHECK_STR(src, "CUDA_DEVICE_SM_LIMIT");
	CHECK(load1("VRAMGUARD_COMPUTE_LIMIT", "100%") == 0 && vg_config_compute_for(&C, 0, NULL, &src) == 100);

	/* HAMi-core's text that reads as some share there is an error here, fail closed, one line */
	CHECK(load1("CUDA_DEVICE_SM_LIMIT", "062") == -EINVAL && !C.valid);
	CHECK_STR(C.error, "vramguard: error: invalid CUDA_DEVICE_SM_LIMIT '062': a leading 0 (HAMi-core reads the "
			   "number as octal); expected an integer from 0 to 100");
	CHECK(vg_config_compute_for(&C, 0, NULL, &src) == 0 && src == NULL);
	for (const char *const *v = (const char *const[]){ "0x32", "50%", "-5", "150", "101", "5O", "50.0", NULL }; *v;
	     v++) {
		CHECK(load1("CUDA_DEVICE_SM_LIMIT_7", *v) == -EINVAL && !C.valid);
		CHECK(strncmp(C.error, "vramguard: error: invalid CUDA_DEVICE_SM_LIMIT_7 '", 50) == 0);
		CHECK_CONTAINS(C.error, "': expected an integer from 0 to 100 (0 and 100: no limit, as in HAMi-core)");
	}
	CHECK(load1("VRAMGUARD_COMPUTE_LIMIT", "50") == -EINVAL && !C.valid && C.compute.dflt.kind == VG_LIMIT_UNSET);
	CHECK_STR(C.note, "");
}

static void test_device_policy(void)
{
	const char *uuid = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";
	static const char *const both[] = { "NVIDIA_GPU_MEMORY_LIMITS", "8G,1:4G", "NVIDIA_GPU_MEMORY_REQUEST", "6G",
					    "VRAMGUARD_WARN_AT", "50%", NULL };
	static const char *const tie[] = { "NVIDIA_GPU_MEMORY_LIMIT", "8G", "NVIDIA_GPU_MEMORY_REQUESTS", "4G",
					   "VRAMGUARD_WARN_AT", "4G", NULL };
	static const char *const keyed[] = { "NVIDIA_GPU_MEMORY_LIMITS", "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee:2G",
					     "CUDA_DEVICE_MEMORY_LIMIT", "1g", NULL };
	struct vg_device_policy p;

	CHECK(load(both) == 0 && C.valid);
	vg_config_device_policy(&C, 0, NULL, 80 * GiB, &p);
	CHECK_EQ_U64(p.limit, 8 * GiB);
	CHECK_STR(p.limit_source, "NVIDIA_GPU_MEMORY_LIMITS");
	CHECK_EQ_U64(p.request, 6 * GiB);
	CHECK_STR(p.request_source, "NVIDIA_GPU_MEMORY_REQUEST");
	CHECK_EQ_U64(p.warn, 4 * GiB);                  /* 50% of the quota, not of the card */
	CHECK_STR(p.warn_source, "VRAMGUARD_WARN_AT");
	CHECK_EQ_U64(p.soft, 4 * GiB);
	CHECK_STR(p.soft_source, "VRAMGUARD_WARN_AT");
	CHECK_STR(p.soft_reason, "threshold");
	CHECK(p.compute_pct == 0 && p.compute_source == NULL); /* no share set */
	vg_config_device_policy(&C, 1, "", 80 * GiB, &p);       /* "": no UUID */
	CHECK_EQ_U64(p.limit, 4 * GiB);
	CHECK_EQ_U64(p.warn, 2 * GiB);
	CHECK_EQ_U64(p.soft, 2 * GiB);

	CHECK(load(tie) == 0 && C.valid);
	vg_config_device_policy(&C, 3, uuid, 16 * GiB, &p);
	CHECK_EQ_U64(p.soft, 4 * GiB);
	CHECK_STR(p.soft_source, "NVIDIA_GPU_MEMORY_REQUESTS"); /* a tie keeps the request */
	CHECK_STR(p.soft_reason, "soft-limit");

	CHECK(load(keyed) == 0 && C.valid);
	vg_config_device_policy(&C, 0, uuid, 16 * GiB, &p);
	CHECK_EQ_U64(p.limit, 2 * GiB);
	CHECK_EQ_U64(p.soft, UINT64_MAX);               /* neither a request nor a threshold */
	CHECK(p.soft_source == NULL && p.request_source == NULL && p.warn_source == NULL);
	CHECK_STR(p.soft_reason, "soft-limit");
	vg_config_device_policy(&C, 0, NULL, 16 * GiB, &p);
	CHECK_EQ_U64(p.limit, GiB);
	CHECK_STR(p.limit_source, "CUDA_DEVICE_MEMORY_LIMIT");
	CHECK(!vg_config_keys_ordinals(&C));

	CHECK(load1("NVIDIA_GPU_MEMORY_LIMITS", "0:1G") == 0);
	CHECK(vg_config_keys_ordinals(&C));
	CHECK(load1("CUDA_DEVICE_MEMORY_LIMIT_2", "1g") == 0);
	CHECK(vg_config_keys_ordinals(&C));
	CHECK(load1("NVIDIA_GPU_MEMORY_LIMIT", "50%") == 0);
	CHECK(!vg_config_keys_ordinals(&C));
	vg_config_device_policy(&C, -1, NULL, 1, &p);    /* the library's unknown size: a percentage allows nothing */
	CHECK_EQ_U64(p.limit, 0);
	vg_config_device_policy(&C, -1, NULL, 0, &p);    /* a size of 0: a percentage means no limit */
	CHECK_EQ_U64(p.limit, UINT64_MAX);

	CHECK(load1("NVIDIA_GPU_MEMORY_LIMITS", "4XB") == -EINVAL);
	vg_config_device_policy(&C, 0, NULL, 16 * GiB, &p);     /* invalid: no limit at all */
	CHECK_EQ_U64(p.limit, UINT64_MAX);
	CHECK_EQ_U64(p.soft, UINT64_MAX);
	CHECK(p.compute_pct == 0 && p.compute_source == NULL);

	/* the compute share: the policy's two fields, keyed as the quota is (UUID, then ordinal, then default) */
	CHECK(load1("VRAMGUARD_COMPUTE_LIMIT", "50%,1:20%,GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee:100%") == 0);
	vg_config_device_policy(&C, 1, NULL, 16 * GiB, &p);
	CHECK(p.compute_pct == 20);
	CHECK_STR(p.compute_source, "VRAMGUARD_COMPUTE_LIMIT");
	vg_config_device_policy(&C, 1, uuid, 16 * GiB, &p);
	CHECK(p.compute_pct == 100);
	vg_config_device_policy(&C, 0, "", 16 * GiB, &p);
	CHECK(p.compute_pct == 50 && p.limit == UINT64_MAX);
	CHECK(!vg_config_keys_ordinals(&C));            /* a quota's question: the share's keys do not count */
}

/* A check in a loop: its failure says which case. */
#define CHECK_MSG(cond, ...)                                                                                          \
	do {                                                                                                          \
		if (cond)                                                                                             \
			UNIT_PASS_(#cond);                                                                            \
		else                                                                                                  \
			UNIT_FAIL_(__VA_ARGS__);                                                                      \
	} while (0)

/* UTF-8: the length of one character (RFC 3629's limits), and where to cut text so as not to end inside one. */
static void test_utf8(void)
{
	static const struct { const char *s; size_t n, len; } U[] = {
		{ "a", 1, 1 }, { "\xc3\xa9", 2, 2 }, { "\xe6\x97\xa5", 3, 3 }, { "\xf0\x9f\x98\x80", 4, 4 },
		{ "\xe6\x97\xa5", 2, 0 },                      /* cut short */
		{ "\xff", 1, 0 }, { "\x80", 1, 0 }, { "\xc0\xaf", 2, 0 },       /* stray, continuation, overlong */
		{ "\xe0\x80\xaf", 3, 0 }, { "\xed\xa0\x80", 3, 0 },          /* overlong, a surrogate */
		{ "\xf4\x90\x80\x80", 4, 0 }, { "\xf5\x80\x80\x80", 4, 0 }, /* past U+10FFFF */
		{ "\xe6\x41\xa5", 3, 0 },                      /* ASCII where a continuation byte belongs */
	};
	for (size_t i = 0; i < sizeof(U) / sizeof(U[0]); i++)
		CHECK_MSG(vg_utf8_len(U[i].s, U[i].n) == U[i].len, "vg_utf8_len case %zu: %zu, want %zu", i,
			  vg_utf8_len(U[i].s, U[i].n), U[i].len);
	/* "xx" and three-byte characters: cut anywhere, it ends after a whole one. */
	const char *ja = "xx\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e";
	static const size_t want[] = { 0, 1, 2, 2, 2, 5, 5, 5, 8, 8, 8, 11 };
	for (size_t n = 0; n <= 11; n++)
		CHECK_MSG(vg_utf8_cut(ja, n) == want[n], "vg_utf8_cut(\"xx\" + 3 characters, %zu) = %zu, want %zu", n,
			  vg_utf8_cut(ja, n), want[n]);
	CHECK(vg_utf8_cut("\xf0\x9f\x98", 3) == 0);              /* a four-byte one, three bytes in */
	CHECK(vg_utf8_cut("ab\xff", 3) == 3);                     /* not UTF-8 at all: left for the writers */
	CHECK(vg_utf8_cut("a\x80\x80\x80\x80", 5) == 5);         /* continuation bytes only */
	CHECK(vg_utf8_cut("a\xc0\x80", 3) == 3);                 /* an invalid lead byte */
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

/* Random text for the new variables: every load either succeeds or fails with one well-shaped line. */
static void test_report_random(void)
{
	static const char alphabet[] = "%pnrhq/.-+0123456789SIGRTMINUSRsigrtmin offtext ";
	static const char *const vars[] = { "VRAMGUARD_BACKTRACE", "VRAMGUARD_SIGNAL", "VRAMGUARD_REPORT",
					    "VRAMGUARD_REPORT_FORMAT", "VRAMGUARD_STREAM_CHECK" };
	int i, bad_shape = 0, accepted = 0;

	for (i = 0; i < 20000; i++) {
		char s[40], out[64];
		size_t n = rng() % (sizeof(s) - 1), k;
		const char *var = vars[rng() % 5];
		int rc;

		for (k = 0; k < n; k++)
			s[k] = alphabet[rng() % (sizeof(alphabet) - 1)];
		s[n] = '\0';
		rc = load1(var, s);
		if (rc == 0) {
			accepted++;
			if (C.report_dest == VG_REPORT_PATH) {
				int e = vg_report_path_expand(C.report_path, 1, 2, "exit", "h", out, sizeof(out));
				bad_shape += e != 0 && e != -ENAMETOOLONG;
			}
			bad_shape += C.backtrace_depth < 0 || C.backtrace_depth > 64 || C.signal < 0;
		} else if (rc != -EINVAL || C.valid || strncmp(C.error, "vramguard: error: invalid ", 26) != 0 ||
			   strchr(C.error, '\n') || !strstr(C.error, var)) {
			bad_shape++;
			fprintf(stderr, "random %s='%s': rc %d err '%s'\n", var, s, rc, C.error);
		}
	}
	CHECK(bad_shape == 0);
	CHECK(accepted > 0);
}

/* A shared region's budget is text of at most 255 bytes; NVIDIA_GPU_MEMORY_LIMITS is that text only where there is
 * a region: a longer list stays valid for a process without one. */
/* The other two integer rows: their bounds, their messages (one unit word or none), the value stored. */
static void test_load_integers(void)
{
	CHECK(load1("VRAMGUARD_REPORT_INTERVAL", " 1 ") == 0 && C.report_interval_s == 1);
	CHECK(load1("VRAMGUARD_REPORT_INTERVAL", "86400") == 0 && C.report_interval_s == 86400);
	CHECK(load1("VRAMGUARD_REPORT_INTERVAL", "") == 0 && C.report_interval_s == VG_REPORT_INTERVAL_DEFAULT);
	CHECK(load1("VRAMGUARD_REPORT_INTERVAL", "0") == -EINVAL && !C.valid);
	CHECK_STR(C.error, "vramguard: error: invalid VRAMGUARD_REPORT_INTERVAL '0': expected seconds, an integer from 1 "
		  "to 86400");
	CHECK(C.report_interval_s == VG_REPORT_INTERVAL_DEFAULT);
	CHECK(load1("VRAMGUARD_REPORT_INTERVAL", "86401") == -EINVAL);
	CHECK_STR(C.error, "vramguard: error: invalid VRAMGUARD_REPORT_INTERVAL '86401': expected seconds, an integer "
		  "from 1 to 86400");
	CHECK(load1("VRAMGUARD_SHARED_SLOTS", "16384") == 0 && C.shared_slots == 16384);
	CHECK(load1("VRAMGUARD_SHARED_SLOTS", "007") == 0 && C.shared_slots == 7);
	CHECK(load1("VRAMGUARD_SHARED_SLOTS", "0") == -EINVAL && C.shared_slots == VG_SHARED_SLOTS_DEFAULT);
	CHECK_STR(C.error, "vramguard: error: invalid VRAMGUARD_SHARED_SLOTS '0': expected an integer from 1 to 16384");
	CHECK(load1("VRAMGUARD_SHARED_SLOTS", "1k") == -EINVAL);
	CHECK_STR(C.error, "vramguard: error: invalid VRAMGUARD_SHARED_SLOTS '1k': expected an integer from 1 to 16384");
}

/* VRAMGUARD_GROWTH_WINDOW: seconds or a whole number of s, m, h, d; 1 s to 7 days; one line naming the value. And
 * `growth` is a VRAMGUARD_REPORT_ON word. */
static void test_load_growth(void)
{
	static const char *const bad[] = { "0", "0s", "1.5m", "10M", "10 m", "m", "-5", "+5", "8d", "0d", "7D", "604801",
					   "10081m", "169h", "99999999999999999999s", "5x", "0x10", "d" };
	CHECK(load1("VRAMGUARD_GROWTH_WINDOW", "") == 0 && C.growth_window_s == VG_GROWTH_WINDOW_DEFAULT);
	CHECK(C.growth_window_s == 600);
	CHECK(load1("VRAMGUARD_GROWTH_WINDOW", " 2s ") == 0 && C.growth_window_s == 2);
	CHECK(load1("VRAMGUARD_GROWTH_WINDOW", "90") == 0 && C.growth_window_s == 90);
	CHECK(load1("VRAMGUARD_GROWTH_WINDOW", "10m") == 0 && C.growth_window_s == 600);
	CHECK(load1("VRAMGUARD_GROWTH_WINDOW", "168h") == 0 && C.growth_window_s == 604800);
	CHECK(load1("VRAMGUARD_GROWTH_WINDOW", "1d") == 0 && C.growth_window_s == 86400);
	CHECK(load1("VRAMGUARD_GROWTH_WINDOW", "7d") == 0 && C.growth_window_s == 604800);
	CHECK(load1("VRAMGUARD_GROWTH_WINDOW", "604800") == 0 && C.growth_window_s == 604800);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[VG_ERR_MAX];
		snprintf(want, sizeof(want), "vramguard: error: invalid VRAMGUARD_GROWTH_WINDOW '%s': expected a duration "
			 "such as 600 (seconds), 90s, 10m, 2h or 1d, from 1 s to 7 days", bad[i]);
		CHECK(load1("VRAMGUARD_GROWTH_WINDOW", bad[i]) == -EINVAL && !C.valid);
		CHECK_STR(C.error, want);
		CHECK(C.growth_window_s == VG_GROWTH_WINDOW_DEFAULT);
	}
	CHECK(load1("VRAMGUARD_REPORT_ON", "exit,Growth") == 0 && C.report_on == (VG_REPORT_ON_EXIT | VG_REPORT_ON_GROWTH));
	CHECK(load1("VRAMGUARD_REPORT_ON", "growth,growth") == -EINVAL);
	CHECK_STR(C.error, "vramguard: error: invalid VRAMGUARD_REPORT_ON 'growth,growth': repeated word 'growth' (expected "
		  "a list of exit, signal, denial, threshold, growth, e.g. exit,signal,denial)");
}

static void test_load_shared(void)
{
	char lim[1024] = "8G";
	for (int i = 0; i < 7; i++) {                   /* 7 UUID keys: over 255 bytes */
		size_t n = strlen(lim);
		snprintf(lim + n, sizeof(lim) - n, ",GPU-%08d-0000-0000-0000-000000000000:%dG", i, i + 1);
	}
	CHECK(strlen(lim) > 255);
	const char *plain[] = { "NVIDIA_GPU_MEMORY_LIMITS", lim, NULL };
	CHECK(load(plain) == 0 && C.valid && C.shared_spec[0] == '\0');
	const char *shared[] = { "NVIDIA_GPU_MEMORY_LIMITS", lim, "VRAMGUARD_SHARED", "team", NULL };
	CHECK(load(shared) != 0 && !C.valid);
	CHECK(strstr(C.error, "invalid NVIDIA_GPU_MEMORY_LIMITS") && strstr(C.error, "too long for a shared region"));
	const char *own[] = { "NVIDIA_GPU_MEMORY_LIMITS", lim, "VRAMGUARD_SHARED", "team", "VRAMGUARD_SHARED_LIMITS",
			      " 20G ", NULL };
	CHECK(load(own) == 0 && C.valid);
	CHECK(strcmp(C.shared_spec, "20G") == 0 && strcmp(C.shared_spec_source, "VRAMGUARD_SHARED_LIMITS") == 0);
	const char *fallback[] = { "NVIDIA_GPU_MEMORY_LIMITS", " 8G ", "VRAMGUARD_SHARED", "team", NULL };
	CHECK(load(fallback) == 0 && C.valid);
	CHECK(strcmp(C.shared_spec, "8G") == 0 && strcmp(C.shared_spec_source, "NVIDIA_GPU_MEMORY_LIMITS") == 0);
	const char *bad[] = { "VRAMGUARD_SHARED_LIMITS", "4XB", NULL };  /* checked even without a region */
	CHECK(load(bad) != 0 && strstr(C.error, "invalid VRAMGUARD_SHARED_LIMITS"));
	char path[600] = "/";                           /* an absolute path up to 511 bytes names a region */
	memset(path + 1, 'a', 400);
	path[401] = '\0';
	const char *longpath[] = { "VRAMGUARD_SHARED", path, NULL };
	CHECK(load(longpath) == 0 && C.valid && strcmp(C.shared_name, path) == 0);
	/* config resolves VRAMGUARD_SHARED to the file the region code opens: the same directory and prefix. */
	CHECK_STR(VG_SHM_DIR_DEFAULT, VG_REGION_DIR);
	CHECK_STR(VG_SHARED_PREFIX, VG_REGION_PREFIX);
	const char *named[] = { "VRAMGUARD_SHARED", "team", NULL };
	CHECK(load(named) == 0 && C.valid);
	CHECK_STR(C.shared_path, VG_REGION_DIR "/" VG_REGION_PREFIX "team");
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
	test_load_limit_one();
	test_load_requests();
	test_precedence_nvidia();
	test_load_count_poll();
	test_load_backtrace();
	test_load_signal();
	test_load_report();
	test_report_expand();
	test_load_format_stream();
	test_load_integers();
	test_load_growth();
	test_load_shared();
	test_load_secure();
	test_options_table();
	test_format_bytes();
	test_format_uuid();
	test_compute_parse();
	test_compute_load();
	test_device_policy();
	test_utf8();
	test_random_strings();
	test_report_random();
	return UNIT_DONE();
}
