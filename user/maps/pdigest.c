// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The digest of the pinned policy: see pdigest.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "floodgate.h" /* and fg_hash.h: FG_SIPROUND */
#include "maps/fgmaps.h"
#include "maps/pdigest.h"
#include "maps/startstate.h"
#include "lib/prefix.h"
#include "lib/sysutil.h"
#include "policy/admission.h"
#include "policy/policy.h"

#define PD_FORMAT 1

/* SipHash-1-3 over a stream of bytes, two keys at once: 128 bits. */
struct pd_sip {
	__u64 v[2][4];
	__u64 tail;
	size_t n;
};

static void sip_init(struct pd_sip *s)
{
	static const __u64 k[2][2] = { { 0x666c6f6f64676174ull, 0x6532350a706f6c69ull },
				       { 0x637920646967657full, 0x7374206f66207069ull } };

	memset(s, 0, sizeof(*s));
	for (int i = 0; i < 2; i++) {
		s->v[i][0] = k[i][0] ^ 0x736f6d6570736575ull;
		s->v[i][1] = k[i][1] ^ 0x646f72616e646f6dull;
		s->v[i][2] = k[i][0] ^ 0x6c7967656e657261ull;
		s->v[i][3] = k[i][1] ^ 0x7465646279746573ull;
	}
}

static void sip_word(struct pd_sip *s, __u64 m)
{
	for (int i = 0; i < 2; i++) {
		__u64 *v = s->v[i];

		v[3] ^= m;
		FG_SIPROUND(v[0], v[1], v[2], v[3]);
		v[0] ^= m;
	}
}

static void sip_add(struct pd_sip *s, const void *p, size_t len)
{
	const unsigned char *b = p;

	while (len && s->n % 8) { /* finish a word begun before */
		s->tail |= (__u64)*b++ << (8 * (s->n++ % 8));
		len--;
		if (s->n % 8 == 0) {
			sip_word(s, s->tail);
			s->tail = 0;
		}
	}
	for (; len >= 8; len -= 8, b += 8, s->n += 8) {
		__u64 w;

		memcpy(&w, b, 8);
		sip_word(s, w);
	}
	while (len--)
		s->tail |= (__u64)*b++ << (8 * (s->n++ % 8));
}

static void sip_end(struct pd_sip *s, struct fg_pdigest *d)
{
	sip_word(s, s->tail | (__u64)(s->n & 0xff) << 56);
	for (int i = 0; i < 2; i++) {
		__u64 *v = s->v[i];

		v[2] ^= 0xff;
		FG_SIPROUND(v[0], v[1], v[2], v[3]);
		FG_SIPROUND(v[0], v[1], v[2], v[3]);
		FG_SIPROUND(v[0], v[1], v[2], v[3]);
		d->h[i] = v[0] ^ v[1] ^ v[2] ^ v[3];
	}
}

/* This executable, once: another build may compile or write differently. */
static int exe_add(struct pd_sip *s)
{
	static struct fg_pdigest exe;
	static int done, err;
	char buf[65536];
	struct pd_sip e;
	ssize_t n;
	int fd;

	if (!done) {
		done = 1;
		fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return err = -errno;
		sip_init(&e);
		while ((n = fg_read_retry(fd, buf, sizeof(buf))) > 0)
			sip_add(&e, buf, (size_t)n);
		if (n < 0)
			err = (int)n;
		close(fd);
		sip_end(&e, &exe);
	}
	if (!err)
		sip_add(s, &exe, sizeof(exe));
	return err;
}

int fg_pdigest_of(const struct fg_config *cfg, struct fg_pdigest *d)
{
	struct pd_sip s;
	__u32 format = PD_FORMAT, abi = FG_ABI_VERSION;
	__u64 mode = (__u64)cfg->mode, n = cfg->n_pfx, nr = cfg->pol.nrules;
	int err;

	memset(d, 0, sizeof(*d));
	sip_init(&s);
	sip_add(&s, &format, sizeof(format));
	sip_add(&s, &abi, sizeof(abi));
	err = exe_add(&s);
	if (err)
		return err;
	sip_add(&s, &cfg->pol, sizeof(cfg->pol));
	sip_add(&s, &nr, sizeof(nr));
	sip_add(&s, cfg->rules, (nr < FG_MAX_RULES ? nr : FG_MAX_RULES) * sizeof(cfg->rules[0]));
	sip_add(&s, &mode, sizeof(mode));
	sip_add(&s, &cfg->max_sources, sizeof(cfg->max_sources));
	sip_add(&s, &cfg->admission, sizeof(cfg->admission));
	sip_add(&s, &n, sizeof(n));
	if (n)
		sip_add(&s, cfg->pfx, n * sizeof(cfg->pfx[0]));
	sip_end(&s, d);
	return 0;
}

/* What the pinned state is now: the active slot, its version, every map's id. */
struct pd_state {
	struct fg_pdigest d;
	__u32 mode; /* fg_ctl's file mode (not saved: checked against the file's) */
	__u32 slot;
	__u64 version;
	__u32 ids[FGM_NMAPS];
	__u32 dir4[4];
};

static int state_now(struct fg_maps *m, struct pd_state *st, struct fg_policy *active)
{
	struct fg_ctl ctl;
	int err = fg_ctl_read(m, &ctl);

	if (err)
		return err;
	st->slot = ctl.slot & 1;
	st->mode = ctl.mode;
	err = fg_policy_read(m, st->slot, active);
	if (err)
		return err;
	st->version = active->version;
	for (int i = 0; i < FGM_NMAPS; i++) {
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);

		st->ids[i] = 0;
		if (m->fd[i] >= 0 && bpf_obj_get_info_by_fd(m->fd[i], &info, &len))
			return -errno;
		st->ids[i] = m->fd[i] >= 0 ? info.id : 0;
	}
	return 0;
}

static void pd_path(const char *pin_dir, char *buf, size_t len)
{
	fg_state_path(fg_run_dir(), "policy", pin_dir, buf, len);
}

static void pd_print(FILE *f, const void *arg)
{
	const struct pd_state *st = arg;

	fprintf(f, "format %u\ndigest %016llx%016llx\nslot %u\nversion %llu\n", PD_FORMAT,
		(unsigned long long)st->d.h[0], (unsigned long long)st->d.h[1], st->slot,
		(unsigned long long)st->version);
	fprintf(f, "dir4 %u %u %u %u\nmaps", st->dir4[0], st->dir4[1], st->dir4[2], st->dir4[3]);
	for (int i = 0; i < FGM_NMAPS; i++)
		fprintf(f, " %u", st->ids[i]);
	fprintf(f, "\n");
}

int fg_pdigest_save(struct fg_maps *m, const char *pin_dir, const struct fg_pdigest *d,
		    const __u32 dir4[4])
{
	struct fg_policy *active = malloc(sizeof(*active));
	struct pd_state st = { .d = *d };
	char path[PATH_MAX];
	int err = active ? state_now(m, &st, active) : -ENOMEM;

	free(active);
	if (err)
		return err;
	memcpy(st.dir4, dir4, sizeof(st.dir4));
	if (mkdir(fg_run_dir(), 0755) && errno != EEXIST)
		return -errno;
	pd_path(pin_dir, path, sizeof(path));
	return fg_file_replace(path, pd_print, &st);
}

void fg_pdigest_forget(const char *pin_dir)
{
	char path[PATH_MAX];

	pd_path(pin_dir, path, sizeof(path));
	unlink(path);
}

/* The file, every field present and well formed. */
static int pd_read(const char *pin_dir, struct pd_state *st)
{
	unsigned long long h0, h1, ver;
	unsigned int format, slot;
	char path[PATH_MAX];
	int ok = 0;
	FILE *f;

	pd_path(pin_dir, path, sizeof(path));
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (fscanf(f, "format %u\ndigest %16llx%16llx\nslot %u\nversion %llu\n", &format, &h0, &h1,
		   &slot, &ver) == 5 &&
	    format == PD_FORMAT && slot < 2 &&
	    fscanf(f, "dir4 %u %u %u %u\nmaps", &st->dir4[0], &st->dir4[1], &st->dir4[2],
		   &st->dir4[3]) == 4) {
		ok = 1;
		for (int i = 0; i < FGM_NMAPS && ok; i++)
			ok = fscanf(f, " %u", &st->ids[i]) == 1;
		ok = ok && fgetc(f) == '\n' && fgetc(f) == EOF;
	}
	fclose(f);
	if (!ok)
		return -EINVAL;
	st->d.h[0] = h0;
	st->d.h[1] = h1;
	st->slot = slot;
	st->version = ver;
	return 0;
}

/* fg_names holds exactly the rules of active, by the file's names. */
static bool names_match(struct fg_maps *m, const struct fg_config *cfg,
			const struct fg_policy *active)
{
	struct fg_name *names = calloc(FG_MAX_IDS, sizeof(*names));
	__u32 in_use = 0;
	bool ok = names && !fg_names_read(m, names);

	for (int id = 0; ok && id < FG_MAX_IDS; id++)
		in_use += names[id].in_use ? 1 : 0;
	ok = ok && in_use == active->nrules;
	for (__u32 i = 0; ok && i < active->nrules && i < FG_MAX_RULES; i++) {
		const struct fg_rule *r = &active->rules[i];

		ok = r->id < FG_MAX_IDS && names[r->id].in_use && names[r->id].gen == r->gen &&
		     !strncmp(names[r->id].name, cfg->rules[i].name, FG_NAME_LEN);
	}
	free(names);
	return ok;
}

/* cfg->pol as an apply of it over active would write it. */
static void as_applied(struct fg_config *cfg, const struct fg_policy *active,
		       struct fg_policy *want)
{
	size_t n4, n6;

	fg_policy_set_admission(cfg);
	*want = cfg->pol;
	for (__u32 i = 0; i < want->nrules && i < FG_MAX_RULES; i++) {
		want->rules[i].id = active->rules[i].id;
		want->rules[i].gen = active->rules[i].gen;
	}
	for (__u32 i = 0; i < want->npools && i < FG_MAX_POOLS; i++)
		want->pools[i].id = active->pools[i].id;
	fg_pfx_count(cfg->pfx, cfg->n_pfx, &n4, &n6);
	want->lists = (n4 ? 1 : 0) | (n6 ? 2 : 0);
	want->version = active->version;
}

int fg_pdigest_check(struct fg_maps *m, const char *pin_dir, struct fg_config *cfg,
		     const struct fg_pdigest *d, __u32 dir4[4], char *why)
{
	struct fg_policy *active = malloc(sizeof(*active)), *want = malloc(sizeof(*want));
	struct pd_state saved, now = {};
	int err = active && want ? 0 : -ENOMEM;

	if (!err && (err = pd_read(pin_dir, &saved)))
		fg_why(why, "no digest of the pinned policy (%s)",
		       err == -ENOENT ? "none saved" : strerror(-err));
	else if (!err && (err = state_now(m, &now, active)))
		fg_why(why, "reading the pinned state: %s", strerror(-err));
	else if (!err && memcmp(&saved.d, d, sizeof(*d)))
		err = -ESTALE,
		fg_why(why, "the file (or this build) differs from what was applied");
	else if (!err && memcmp(saved.ids, now.ids, sizeof(now.ids)))
		err = -ESTALE, fg_why(why, "a pinned map is not the one the digest describes");
	else if (!err && (saved.slot != now.slot || saved.version != now.version))
		err = -ESTALE, fg_why(why,
				      "the pinned policy changed since (slot %u version %llu, "
				      "digest of slot %u version %llu)",
				      now.slot, (unsigned long long)now.version, saved.slot,
				      (unsigned long long)saved.version);
	else if (!err && now.mode != (__u32)cfg->mode)
		err = -ESTALE, fg_why(why, "fg_ctl's file mode is not the file's");
	else if (!err && active->nrules != cfg->pol.nrules)
		err = -ESTALE, fg_why(why, "the pinned policy has %u rules, the file %u",
				      active->nrules, cfg->pol.nrules);
	if (!err) {
		struct fg_limit ins0 = cfg->pol.ins;

		as_applied(cfg, active, want);
		cfg->pol.ins = ins0; /* as compiled: the caller may digest it again */
		if (memcmp(want, active, sizeof(*want)))
			err = -ESTALE,
			fg_why(why, "the pinned fg_policy is not what the file compiles to");
		else if (!names_match(m, cfg, active))
			err = -ESTALE,
			fg_why(why, "fg_names does not hold exactly the file's rules");
	}
	if (!err) {
		cfg->pol = *active;
		memcpy(dir4, saved.dir4, sizeof(saved.dir4));
	}
	free(active);
	free(want);
	return err;
}
