/* One GPU's policy (policy.h): the quota, the request, the warning threshold and the soft limit the last two make,
 * and the compute share, from the precedence rules of limits.c. */
#include "config/policy.h"

#include <string.h>

void vg_config_device_policy(const struct vg_config *cfg, int ordinal, const char *uuid, uint64_t total,
			     struct vg_device_policy *out)
{
	if (uuid && !*uuid)
		uuid = NULL;
	memset(out, 0, sizeof(*out));
	out->limit = vg_config_limit_for(cfg, ordinal, uuid, total, &out->limit_source);
	out->request = vg_config_request_for(cfg, ordinal, uuid, total, &out->request_source);
	out->warn = vg_config_warn_for(cfg, ordinal, uuid, out->limit, total, &out->warn_source);
	out->soft = out->request;
	out->soft_source = out->request_source;
	out->soft_reason = "soft-limit";
	if (out->warn < out->soft) {
		out->soft = out->warn;
		out->soft_source = out->warn_source;
		out->soft_reason = "threshold";
	}
	out->compute_pct = vg_config_compute_for(cfg, ordinal, uuid, &out->compute_source);
}

static bool vg_list_keys_ordinals(const struct vg_limits *l)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (l->e[i].ordinal >= 0)
			return true;
	return false;
}

bool vg_config_keys_ordinals(const struct vg_config *cfg)
{
	struct vg_limits l;
	char err[VG_ERR_MAX];

	if (vg_list_keys_ordinals(&cfg->limits) || vg_list_keys_ordinals(&cfg->hami))
		return true;
	return cfg->shared_spec[0] &&
	       vg_parse_limits("shared", cfg->shared_spec, (uint64_t)1 << 20, &l, err, sizeof(err)) == 0 &&
	       vg_list_keys_ordinals(&l);
}

static bool vg_list_has_percent(const struct vg_limits *l)
{
	if (l->dflt.kind == VG_LIMIT_PERCENT)
		return true;
	for (int i = 0; i < l->n; i++)
		if (l->e[i].limit.kind == VG_LIMIT_PERCENT)
			return true;
	return false;
}

bool vg_config_compute_any(const struct vg_config *cfg)
{
	return cfg && cfg->valid && (vg_list_has_percent(&cfg->compute) || vg_list_has_percent(&cfg->sm));
}
