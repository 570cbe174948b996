// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The pinned fg_shed and the shedder's state file, as the daemon writes
 * them and the CLI reads them (shedstate.h). */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "lib/safefile.h"
#include "lib/sysutil.h"
#include "shed/shedstate.h"

#define LOAD(p)	    __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

static const char *const hold_names[] = {
	[FG_SHEDD_RUN] = "running",
	[FG_SHEDD_BYPASS] = "bypass",
	[FG_SHEDD_OFF] = "off",
};

const char *fg_shedd_hold_name(enum fg_shedd_hold h)
{
	return h <= FG_SHEDD_OFF ? hold_names[h] : "?";
}

void fg_shedd_fracs(const struct fg_shed_ctl *v, __u64 now_ns, double frac[FG_NTIERS])
{
	__u64 end = LOAD(&v->end);
	__u32 hshift = LOAD(&v->hshift);

	for (int t = 0; t < FG_NTIERS; t++)
		frac[t] = t == FG_TIER_CRITICAL ?
				  0 :
				  (double)fg_shed_decayed(LOAD(&v->thr[t][FG_SHED_ANY]), end,
							  hshift, now_ns) /
					  FG_SHED_ONE;
}

enum fg_shed_idle fg_shedd_shedding(const struct fg_shed_ctl *v, __u64 now_ns, bool bypass,
				    bool global_shadow, double frac[FG_NTIERS])
{
	enum fg_shed_idle why = bypass				  ? FG_SHED_IDLE_BYPASS :
				LOAD(&v->off)			  ? FG_SHED_IDLE_OFF :
				global_shadow || LOAD(&v->shadow) ? FG_SHED_IDLE_SHADOW :
								    FG_SHED_APPLIES;

	fg_shedd_fracs(v, now_ns, frac);
	if (why != FG_SHED_APPLIES)
		for (int t = 0; t < FG_NTIERS; t++)
			frac[t] = 0;
	return why;
}

const char *fg_shed_idle_name(enum fg_shed_idle i)
{
	static const char *const n[] = { NULL, "off", "bypass", "shadow" };

	return i <= FG_SHED_IDLE_SHADOW ? n[i] : "?";
}

int fg_shed_map_open(int fd, struct fg_shed_ctl **v, size_t *len)
{
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	if (page <= 0)
		return -EINVAL;
	if (bpf_obj_get_info_by_fd(fd, &info, &ilen))
		return -errno;
	if (info.type != BPF_MAP_TYPE_ARRAY || info.max_entries != 1 ||
	    info.value_size != sizeof(struct fg_shed_ctl) || !(info.map_flags & BPF_F_MMAPABLE))
		return -EPROTO;
	*len = (sizeof(struct fg_shed_ctl) + (size_t)page - 1) & ~((size_t)page - 1);
	p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	*v = p;
	return 0;
}

void fg_shed_map_close(struct fg_shed_ctl **v, size_t len)
{
	if (*v)
		munmap(*v, len);
	*v = NULL;
}

int fg_shed_switch_off(struct fg_shed_ctl *v, bool off, bool *was)
{
	if (!v)
		return -EINVAL;
	*was = LOAD(&v->off) != 0;
	STORE(&v->off, off ? 1u : 0u);
	return 0;
}

void fg_shedd_state_path(const char *state_dir, const char *pin_dir, char *buf, size_t len)
{
	fg_state_path(state_dir ? state_dir : FG_SHEDD_RUN_DIR, "shed", pin_dir, buf, len);
}

/* The state file, one "key value" line a field in this order (fg_shedd_state_read). */
enum {
	SF_U32,
	SF_INT,
	SF_U64,
	SF_STR,
	SF_VALUE,
	SF_D6,
	SF_D9
};
#define SF(key, type, field)                                        \
	{                                                           \
		key, type, offsetof(struct fg_shedd_state, field),  \
			sizeof(((struct fg_shedd_state *)0)->field) \
	}
static const struct {
	const char *key;
	int type;
	size_t off, size;
} state_fields[] = {
	SF("pid", SF_U32, pid),
	SF("signal", SF_STR, signal),
	SF("value", SF_VALUE, value),
	SF("signal_error", SF_INT, sig_err),
	SF("signal_why", SF_STR, sig_why),
	SF("phase", SF_STR, phase),
	SF("hold", SF_STR, hold),
	SF("amount", SF_D9, amount),
	SF("pressure", SF_D6, pressure),
	SF("tiers", SF_INT, ntiers),
#define SF_CFG(f) SF(#f, SF_D6, f),
	SHED_CFG_FIELDS(SF_CFG)
#undef SF_CFG
		SF("samples", SF_U64, samples),
	SF("lost", SF_U64, lost),
};
#undef SF

static void state_field_print(FILE *f, const struct fg_shedd_state *st, int i)
{
	const void *p = (const char *)st + state_fields[i].off;

	fprintf(f, "%s ", state_fields[i].key);
	switch (state_fields[i].type) {
	case SF_U32:
		fprintf(f, "%u\n", *(const __u32 *)p);
		break;
	case SF_INT:
		fprintf(f, "%d\n", *(const int *)p);
		break;
	case SF_U64:
		fprintf(f, "%llu\n", (unsigned long long)*(const __u64 *)p);
		break;
	case SF_STR:
		fprintf(f, "%s\n", (const char *)p);
		break;
	case SF_VALUE:
		fprintf(f, "%s%.6f\n", st->have_value ? "" : "-", st->value);
		break;
	case SF_D6:
		fprintf(f, "%.6f\n", *(const double *)p);
		break;
	default:
		fprintf(f, "%.9f\n", *(const double *)p);
		break;
	}
}

static void state_field_parse(struct fg_shedd_state *st, int i, const char *val)
{
	void *p = (char *)st + state_fields[i].off;
	unsigned long long u;

	switch (state_fields[i].type) {
	case SF_U32:
		if (sscanf(val, "%llu", &u) == 1)
			*(__u32 *)p = (__u32)u;
		break;
	case SF_INT:
		*(int *)p = atoi(val);
		break;
	case SF_U64:
		if (sscanf(val, "%llu", &u) == 1)
			*(__u64 *)p = u;
		break;
	case SF_STR:
		snprintf(p, state_fields[i].size, "%s", val);
		break;
	case SF_VALUE:
		st->have_value = val[0] != '-' && sscanf(val, "%lf", &st->value) == 1;
		break;
	default:
		*(double *)p = strtod(val, NULL);
		break;
	}
}

void fg_shedd_state_print(FILE *f, const struct fg_shedd_state *st)
{
	for (size_t i = 0; i < sizeof(state_fields) / sizeof(state_fields[0]); i++)
		state_field_print(f, st, (int)i);
}

int fg_shedd_state_read(const char *path, struct fg_shedd_state *st)
{
	char line[PATH_MAX + 64], key[32], val[PATH_MAX + 32];
	int fields = 0;
	/* a FIFO or a device at the path must not block `floodgate status` */
	FILE *f = fg_fopen_regular(path, NULL);

	if (!f)
		return -errno;
	memset(st, 0, sizeof(*st));
	while (fields < 256 && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%31s %4127[^\n]", key, val) != 2)
			continue;
		fields++;
		for (size_t i = 0; i < sizeof(state_fields) / sizeof(state_fields[0]); i++)
			if (!strcmp(key, state_fields[i].key)) {
				state_field_parse(st, (int)i, val);
				break;
			}
	}
	fclose(f);
	return st->pid && st->phase[0] && fields >= 6 ? 0 : -EINVAL;
}
