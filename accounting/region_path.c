/* A shared region's file from VRAMGUARD_SHARED's value (accounting/region.h). The rule itself is config's, which
 * resolves the variable when it loads it (vg_shared_path): this side only names it for the region's users and
 * checks that the two sides agree on sizes. */
#include "accounting/region.h"
#include "config/config.h"

_Static_assert(VG_SPEC_MAX == VG_REGION_SPEC_MAX, "a region stores the spec text");
_Static_assert(VG_SHARED_SLOTS_DEFAULT == VG_REGION_SLOTS_DEFAULT && VG_SHARED_SLOTS_MAX == VG_REGION_SLOTS_MAX,
	       "VRAMGUARD_SHARED_SLOTS is a region's slot count");
_Static_assert(VG_SHARED_PATH_MAX <= sizeof(((struct vg_region *)0)->path), "a region handle holds the path");
_Static_assert(VG_SHARED_NAME_MAX == VG_REGION_NAME_MAX, "a region stores its NAME");
_Static_assert(sizeof(VG_SHM_DIR_DEFAULT) == sizeof(VG_REGION_DIR) &&
		       sizeof(VG_SHARED_PREFIX) == sizeof(VG_REGION_PREFIX),
	       "config and the region name the same files (test_config compares the text)");

int vg_region_path(const char *dir, const char *name_or_path, char *out, size_t outlen, char *err, size_t errlen)
{
	return vg_shared_path(dir, name_or_path, out, outlen, err, errlen);
}
