// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Fleet limits as configured: defaults, validation, keys (fleet_conf.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "fleet/fleet_conf.h"
#include "lib/sysutil.h"

static int valid_node(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '.' || *s == '-' || *s == '_'))
			return 0;
	return 1;
}

/* FNV-1a, 64 bits. */
static __u64 fnv1a(const char *s, __u64 h)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

/*
 * The policy namespace: a hash of what defines the fleet bucket (schema,
 * name, rate, burst, unit), so an edited rule starts on new keys and never
 * inherits another definition's state; on_loss and the local rate are
 * per-node choices and stay out of it.
 */
static __u64 rule_ns(const struct fg_fleet_rule_conf *rc)
{
	char buf[FG_NAME_LEN + 96];

	snprintf(buf, sizeof(buf), "v1|%s|%.17g|%.17g|%s", rc->name, rc->rate, rc->burst,
		 rc->cost == FG_COST_BYTES ? "bytes" : "packets");
	return fnv1a(buf, 0xcbf29ce484222325ull);
}

int fg_fleet_conf_resolve(const struct fg_fleet_conf *c, struct fg_fleet_conf *out, char *why)
{
	struct fg_fleet_conf r = *c;

	if (!r.interval_ms)
		r.interval_ms = FG_FLEET_INTERVAL_MS;
	if (!r.deadline_ms)
		r.deadline_ms = FG_FLEET_DEADLINE_MS;
	if (!r.lease_ms)
		r.lease_ms = 2 * r.interval_ms;
	if (!r.prefix[0])
		snprintf(r.prefix, sizeof(r.prefix), "floodgate");
	if (!r.node[0] && gethostname(r.node, sizeof(r.node) - 1)) {
		int err = -errno;

		fg_why(why, "gethostname: %s", strerror(-err));
		explicit_bzero(&r, sizeof(r));
		return err;
	}
	r.node[sizeof(r.node) - 1] = 0;
	r.prefix[sizeof(r.prefix) - 1] = 0;
	if (!valid_node(r.node)) {
		fg_why(why, "fleet node \"%.64s\": 1..%d characters of A-Z a-z 0-9 _ . -", r.node,
		       FG_FLEET_NODE_LEN - 1);
		goto fail;
	}
	if (!valid_node(r.prefix)) {
		fg_why(why, "fleet key prefix \"%.32s\": 1..%d characters of A-Z a-z 0-9 _ . -",
		       r.prefix, FG_FLEET_PREFIX_LEN - 1);
		goto fail;
	}
	if (r.interval_ms < FG_FLEET_MIN_INTERVAL_MS || r.interval_ms > FG_FLEET_MAX_INTERVAL_MS) {
		fg_why(why, "lease_interval %u ms: must be %d ms .. %d s", r.interval_ms,
		       FG_FLEET_MIN_INTERVAL_MS, FG_FLEET_MAX_INTERVAL_MS / 1000);
		goto fail;
	}
	if (r.deadline_ms >= r.interval_ms) {
		fg_why(why, "deadline %u ms: must be shorter than the lease interval (%u ms)",
		       r.deadline_ms, r.interval_ms);
		goto fail;
	}
	if (r.lease_ms <= r.interval_ms + r.deadline_ms + FG_FLEET_LEASE_MARGIN_NS / 1000000 ||
	    r.lease_ms > 10 * r.interval_ms) {
		fg_why(why,
		       "lease %u ms: must exceed interval + deadline + %llu ms (%llu ms) "
		       "and be at most 10 intervals",
		       r.lease_ms, FG_FLEET_LEASE_MARGIN_NS / 1000000,
		       (unsigned long long)(r.interval_ms + r.deadline_ms +
					    FG_FLEET_LEASE_MARGIN_NS / 1000000));
		goto fail;
	}
	*out = r;
	explicit_bzero(&r, sizeof(r));
	return 0;
fail:
	explicit_bzero(&r, sizeof(r));
	return -EINVAL;
}

int fg_fleet_rule_check(const struct fg_fleet_rule_conf *rc, char *why)
{
	if (!valid_node(rc->name) || strnlen(rc->name, FG_NAME_LEN) >= FG_NAME_LEN) {
		fg_why(why, "fleet rule name \"%.48s\" is not a valid rule name", rc->name);
		return -EINVAL;
	}
	if (!(rc->rate >= 1e-3 && rc->rate <= 1e15) || !(rc->burst >= 1 && rc->burst <= 1e15)) {
		fg_why(why, "rule %s: fleet rate must be 0.001..1e15 and burst 1..1e15", rc->name);
		return -EINVAL;
	}
	if (rc->on_loss > FG_FLEET_LOSS_CLOSED || rc->cost > FG_COST_BYTES) {
		fg_why(why, "rule %s: bad on_loss or cost unit", rc->name);
		return -EINVAL;
	}
	if (rc->local_rate < 0 || rc->local_burst < 0 || !isfinite(rc->local_rate) ||
	    !isfinite(rc->local_burst)) {
		fg_why(why, "rule %s: local_rate and local_burst must be >= 0", rc->name);
		return -EINVAL;
	}
	return 0;
}

void fg_fleet_rule_keys(const struct fg_fleet_conf *c, const struct fg_fleet_rule_conf *rc,
			char key[3][FG_FLEET_KEY_LEN])
{
	static const char sfx[3] = { 'b', 'd', 'n' };
	__u64 ns = rule_ns(rc);

	for (int k = 0; k < 3; k++)
		snprintf(key[k], FG_FLEET_KEY_LEN, "%s:{%s.%016llx}:%c", c->prefix, rc->name,
			 (unsigned long long)ns, sfx[k]);
}
