// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The data-path test fixture: load, policies, frames, counters; see dp.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "dp.h"
#include "shed/shed.h"
#include "maps/fgmaps.h"
#include "policy/admission.h"
#include "maps/dir4map.h"

/* What fg_ctl_init does for a fresh pin dir: the whole value, once, before
 * the first packet; from then on only user/maps/ctl.h writes it. */
static int dp_ctl_init(struct dp *d, __u32 max_sources)
{
	struct fg_ctl c = { .magic = FG_ABI_MAGIC,
			    .abi = FG_ABI_VERSION,
			    .seed4 = 0x5eed5eed5eed5eedull };
	__u32 k = 0, sets = fg_src4_sets(max_sources), sets6 = fg_src6_sets(max_sources);

	while ((1u << c.src4_bits) < sets)
		c.src4_bits++;
	while ((1u << c.src6_bits) < sets6)
		c.src6_bits++;
	c.seed6[0] = 0x5eed6a6a5eed6a6aull;
	c.seed6[1] = 0x0123456789abcdefull;
	if (bpf_map_update_elem(bpf_map__fd(d->skel->maps.fg_ctl), &k, &c, 0))
		return -errno;
	return fg_ctl_map_open(&d->cm, bpf_map__fd(d->skel->maps.fg_ctl));
}

/* The mmapable array map's first len bytes into *out; NULL and -errno when that fails. */
static int map_mmap(const struct bpf_map *map, size_t len, void **out)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(map), 0);

	*out = p == MAP_FAILED ? NULL : p;
	return *out ? 0 : -errno;
}

/* 1: load with SYN authentication in (rodata fg_sa_on); tests/test_synauth*.c set it */
int dp_sa_on;

/* d->st over the skeleton's fg_stats, and the two buffers of dp_outcome. */
static int dp_stats_open(struct dp *d)
{
	struct fg_maps *m = &d->st;

	memset(m, 0, sizeof(*m));
	m->dirfd = -1;
	for (int i = 0; i < FGM_NMAPS; i++)
		m->fd[i] = -1;
	m->fd[FGM_STATS] = bpf_map__fd(d->skel->maps.fg_stats);
	m->ncpus = d->ncpu;
	for (int i = 0; i < 2; i++) {
		d->rows[i] = calloc(FG_NROWS, (size_t)d->ncpu * sizeof(struct fg_stats));
		if (!d->rows[i])
			return -ENOMEM;
	}
	d->row_bytes = (size_t)d->ncpu * sizeof(struct fg_stats); /* set: ready */
	return 0;
}

/*
 * One loaded program for many tests. Loading floodgate.bpf.o is the
 * verifier's work, about 0.5 s of CPU a load here and most of
 * test_datapath's time; so dp_close keeps the program dp_open loaded, and
 * the next dp_open with the same table sizes takes it back after returning
 * every map to what a fresh load holds (dp_reset): arrays zeroed, hash,
 * LRU and LPM maps emptied, the ring buffer drained, the outer map of
 * fg_blk4 emptied, .bss/.data as loaded. A program with a map of any other
 * kind, or with more than DP_RESET_MAX keys to delete, is destroyed
 * instead and the next test loads afresh (said once). FG_DP_FRESH=1, and
 * FG_GAMEDAY=1, load afresh for every test as before.
 */
#define DP_RESET_MAX  (1u << 16) /* keys deleted one by one; past that a load is cheaper */
#define DP_MAX_IMAGES 8

static struct {
	struct floodgate_bpf *skel; /* kept, not in use; NULL when none */
	__u32 src4, src6;	    /* its fg_src4 / fg_src6 max_entries */
	int sa_on;		    /* its rodata fg_sa_on */
	struct {
		struct bpf_map *map;
		void *img;
		size_t len;
	} image[DP_MAX_IMAGES]; /* internal writable maps as loaded */
	int nimage;
	struct floodgate_bpf *imaged; /* the skeleton image[] belongs to */
	bool told;
} dp_keep;

static void dp_keep_tell(const char *fmt, const char *name, int err)
{
	if (dp_keep.told)
		return;
	dp_keep.told = true;
	printf("  dp: a fresh program for each test from now on: ");
	printf(fmt, name, err);
	printf("\n");
}

static bool dp_fresh_only(void)
{
	const char *f = getenv("FG_DP_FRESH"), *g = getenv("FG_GAMEDAY");

	return (f && *f && strcmp(f, "0")) || (g && !strcmp(g, "1"));
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && !strcmp(s + n - t, tail);
}

/* .bss and .data sections: their images right after load, for dp_reset. */
static int dp_keep_images(struct floodgate_bpf *skel)
{
	struct bpf_map *m;

	for (int i = 0; i < dp_keep.nimage; i++)
		free(dp_keep.image[i].img);
	dp_keep.nimage = 0;
	dp_keep.imaged = skel;
	bpf_object__for_each_map(m, skel->obj) {
		const char *name = bpf_map__name(m);
		size_t len = 0;
		void *v;

		if (!bpf_map__is_internal(m) || strstr(name, ".rodata") ||
		    ends_with(name, ".kconfig"))
			continue; /* frozen: the same in every load */
		if (!strstr(name, ".bss") && !strstr(name, ".data"))
			return -EOPNOTSUPP;
		v = (void *)bpf_map__initial_value(m,
						   &len); /* libbpf 1.1: const, mapped writable */
		if (!v || dp_keep.nimage == DP_MAX_IMAGES)
			return -EOPNOTSUPP;
		dp_keep.image[dp_keep.nimage].img = malloc(len ? len : 1);
		if (!dp_keep.image[dp_keep.nimage].img)
			return -ENOMEM;
		memcpy(dp_keep.image[dp_keep.nimage].img, v, len);
		dp_keep.image[dp_keep.nimage].map = m;
		dp_keep.image[dp_keep.nimage].len = len;
		dp_keep.nimage++;
	}
	return 0;
}

/* Every value of an array map zeroed: through a mapping where it has one,
 * else batch updates (one update a key where the kernel refuses batches). */
static int zero_array(const struct bpf_map *m, int ncpu)
{
	__u32 n = bpf_map__max_entries(m), vsz = bpf_map__value_size(m);
	size_t esz = ((size_t)vsz + 7) & ~(size_t)7, row = vsz, chunk;
	int fd = bpf_map__fd(m), err = 0;
	__u32 *keys;
	void *vals;

	if (bpf_map__map_flags(m) & BPF_F_MMAPABLE) {
		size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = (esz * n + pg - 1) / pg * pg;
		void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		if (p == MAP_FAILED)
			return -errno;
		memset(p, 0, esz * n);
		munmap(p, len);
		return 0;
	}
	if (bpf_map__type(m) == BPF_MAP_TYPE_PERCPU_ARRAY)
		row = (size_t)ncpu * esz;
	chunk = (1u << 20) / row;
	chunk = chunk < 1 ? 1 : chunk > n ? n : chunk;
	keys = calloc(chunk, sizeof(*keys));
	vals = calloc(chunk, row);
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (__u32 first = 0; first < n && !err; first += (__u32)chunk) {
		__u32 want = n - first < chunk ? n - first : (__u32)chunk, cnt = want;

		for (__u32 i = 0; i < want; i++)
			keys[i] = first + i;
		if (!bpf_map_update_batch(fd, keys, vals, &cnt, NULL) && cnt == want)
			continue;
		for (__u32 i = 0; i < want && !err; i++) /* refused: one key at a time */
			if (bpf_map_update_elem(fd, &keys[i], vals, 0))
				err = -errno;
	}
	free(keys);
	free(vals);
	return err;
}

/* Every key of a hash, LRU or LPM map deleted; -E2BIG past DP_RESET_MAX. */
static int empty_map(const struct bpf_map *m)
{
	__u32 ksz = bpf_map__key_size(m), n = 0;
	int fd = bpf_map__fd(m), err = 0;
	char *keys = malloc((size_t)ksz * (DP_RESET_MAX + 1));

	if (!keys)
		return -ENOMEM;
	/* all keys first: deleting while walking may restart the walk */
	while (!bpf_map_get_next_key(fd, n ? keys + (size_t)(n - 1) * ksz : NULL,
				     keys + (size_t)n * ksz)) {
		if (++n > DP_RESET_MAX) {
			free(keys);
			return -E2BIG;
		}
	}
	if (errno != ENOENT)
		err = -errno;
	for (__u32 i = 0; i < n && !err; i++)
		if (bpf_map_delete_elem(fd, keys + (size_t)i * ksz) && errno != ENOENT)
			err = -errno;
	free(keys);
	return err;
}

static int drain_cb(void *ctx, void *data, size_t len)
{
	(void)ctx;
	(void)data;
	(void)len;
	return 0;
}

/* skel's maps as a fresh load has them; 0, or -errno and the map's name in *what. */
static int dp_reset(struct floodgate_bpf *skel, int ncpu, const char **what)
{
	struct bpf_map *m;
	int err = 0;

	bpf_object__for_each_map(m, skel->obj) {
		*what = bpf_map__name(m);
		if (bpf_map__is_internal(m))
			continue; /* below */
		switch (bpf_map__type(m)) {
		case BPF_MAP_TYPE_ARRAY:
		case BPF_MAP_TYPE_PERCPU_ARRAY:
			err = zero_array(m, ncpu);
			break;
		case BPF_MAP_TYPE_HASH:
		case BPF_MAP_TYPE_PERCPU_HASH:
		case BPF_MAP_TYPE_LRU_HASH:
		case BPF_MAP_TYPE_LRU_PERCPU_HASH:
		case BPF_MAP_TYPE_LPM_TRIE:
		case BPF_MAP_TYPE_ARRAY_OF_MAPS: /* empty after a load (checked in dp_open) */
			err = empty_map(m);
			break;
		case BPF_MAP_TYPE_RINGBUF: {
			struct ring_buffer *rb =
				ring_buffer__new(bpf_map__fd(m), drain_cb, NULL, NULL);

			err = rb ? ring_buffer__consume(rb) : -errno;
			err = err < 0 ? err : 0;
			ring_buffer__free(rb);
			break;
		}
		case BPF_MAP_TYPE_PROG_ARRAY:
			break; /* set by the load, written by nobody after */
		default:
			err = -EOPNOTSUPP;
		}
		if (err)
			return err;
	}
	for (int i = 0; i < dp_keep.nimage; i++) {
		size_t len = 0;
		void *v = (void *)bpf_map__initial_value(dp_keep.image[i].map, &len);

		*what = bpf_map__name(dp_keep.image[i].map);
		if (!v || len != dp_keep.image[i].len)
			return -EIO;
		memcpy(v, dp_keep.image[i].img, len);
	}
	return 0;
}

/* A fresh load with the test clock and these table sizes. */
static struct floodgate_bpf *dp_load(__u32 src4, __u32 src6, int *err)
{
	struct floodgate_bpf *skel = floodgate_bpf__open();

	if (!skel) {
		*err = -errno;
		return NULL;
	}
	skel->rodata->fg_clock = FG_CLOCK_TEST;
	skel->rodata->fg_sa_on = dp_sa_on;
	bpf_map__set_max_entries(skel->maps.fg_src4, src4);
	bpf_map__set_max_entries(skel->maps.fg_src6, src6);
	*err = floodgate_bpf__load(skel);
	if (*err) {
		floodgate_bpf__destroy(skel);
		return NULL;
	}
	return skel;
}

/* Can this fresh load be kept for later tests? */
static bool dp_keepable(struct floodgate_bpf *skel)
{
	__u32 k = 0, id;
	int err;

	if (dp_fresh_only() || dp_keep.told || dp_keep.imaged)
		return false; /* one kept program at a time */
	err = dp_keep_images(skel);
	if (err) {
		dp_keep_tell("its sections cannot be saved (%s%d)", "", err);
		return false;
	}
	/* a fresh fg_blk4 holds no inner map: dp_reset empties it */
	for (k = 0; k < bpf_map__max_entries(skel->maps.fg_blk4); k++)
		if (!bpf_map_lookup_elem(bpf_map__fd(skel->maps.fg_blk4), &k, &id)) {
			dp_keep_tell("%s holds an inner map after a load (%d)", "fg_blk4", 0);
			return false;
		}
	return true;
}

int dp_open(struct dp *d, __u32 max_sources)
{
	__u32 src4 = fg_src4_sets(max_sources), src6 = fg_src6_sets(max_sources);
	const char *what = "";
	int err;

	memset(d, 0, sizeof(*d));
	d->ncpu = libbpf_num_possible_cpus();
	if (d->ncpu <= 0)
		return d->ncpu ? d->ncpu : -EINVAL;
	if (dp_keep.skel &&
	    (dp_keep.src4 != src4 || dp_keep.src6 != src6 || dp_keep.sa_on != dp_sa_on)) {
		floodgate_bpf__destroy(
			dp_keep.skel); /* other table sizes or syn_auth: this test loads its own */
		dp_keep.skel = NULL;
		dp_keep.imaged = NULL;
	}
	if (dp_keep.skel) {
		d->skel = dp_keep.skel;
		dp_keep.skel = NULL;
		err = dp_reset(d->skel, d->ncpu, &what);
		if (err) {
			dp_keep_tell("map %s cannot be reset (%d)", what, err);
			floodgate_bpf__destroy(d->skel);
			d->skel = NULL;
			dp_keep.imaged = NULL;
		} else {
			d->kept = true;
		}
	}
	if (!d->skel) {
		d->skel = dp_load(src4, src6, &err);
		if (!d->skel)
			return err;
		d->kept = dp_keepable(d->skel);
	}
	d->prog = bpf_program__fd(d->skel->progs.floodgate);
	err = dp_stats_open(d);
	if (err) {
		dp_close(d);
		return err;
	}
	d->lease_len = FG_MAX_IDS * sizeof(struct fg_lease);
	if ((err = map_mmap(d->skel->maps.fg_lease, d->lease_len, (void **)&d->lease)) ||
	    (err = map_mmap(d->skel->maps.fg_shed, sizeof(*d->shed), (void **)&d->shed))) {
		dp_close(d);
		return err;
	}
	dp_set_now(d, 1000000000ull); /* t = 1 s */
	dp_pol_reset(d);
	err = dp_ctl_init(d, max_sources);
	if (!err)
		err = dp_set_ctl(d, FG_MODE_ENFORCE, 0, 0);
	if (!err)
		err = dp_apply(d);
	if (err)
		dp_close(d);
	return err;
}

void dp_close(struct dp *d)
{
	if (d->lease)
		munmap(d->lease, d->lease_len);
	d->lease = NULL;
	if (d->shed)
		munmap(d->shed, sizeof(*d->shed));
	d->shed = NULL;
	for (int i = 0; i < 2; i++) {
		free(d->rows[i]);
		d->rows[i] = NULL;
	}
	d->row_bytes = 0;
	d->st.fd[FGM_STATS] = -1; /* the skeleton's own fd: closed with it */
	fg_ctl_map_close(&d->cm);
	if (d->skel && d->kept && !dp_keep.skel && dp_keep.imaged == d->skel) {
		dp_keep.skel = d->skel; /* dp_open resets it for the next test */
		dp_keep.src4 = bpf_map__max_entries(d->skel->maps.fg_src4);
		dp_keep.src6 = bpf_map__max_entries(d->skel->maps.fg_src6);
		dp_keep.sa_on = d->skel->rodata->fg_sa_on;
	} else {
		if (d->skel && d->skel == dp_keep.imaged)
			dp_keep.imaged = NULL;
		floodgate_bpf__destroy(d->skel);
	}
	d->skel = NULL;
	d->kept = false;
}

void dp_lease_init(struct dp *d, __u32 id, __u16 gen, __u8 on_loss, struct fg_limit local)
{
	struct fg_lease *l = &d->lease[id & (FG_MAX_IDS - 1)];

	__atomic_store_n(&l->lease_expires, 0, __ATOMIC_RELEASE);
	__atomic_exchange_n(&l->tokens, 0, __ATOMIC_ACQ_REL);
	l->local = local;
	l->tat = 0;
	l->on_loss = on_loss;
	l->nodes = 0;
	__atomic_store_n(&l->gen, gen, __ATOMIC_RELEASE);
}

void dp_lease_renew(struct dp *d, __u32 id, __s64 grant, __u64 expires_ns, __u32 nodes)
{
	struct fg_lease *l = &d->lease[id & (FG_MAX_IDS - 1)];

	__atomic_fetch_add(&l->tokens, grant, __ATOMIC_ACQ_REL);
	__atomic_store_n(&l->tat, (expires_ns << FG_TU_SHIFT) + l->local.tau, __ATOMIC_RELAXED);
	__atomic_store_n(&l->nodes, nodes, __ATOMIC_RELAXED);
	__atomic_store_n(&l->lease_expires, expires_ns, __ATOMIC_RELEASE);
}

void dp_shed_thr(struct dp *d, int tier, int kind, __u32 thr)
{
	__atomic_store_n(&d->shed->thr[tier][kind], thr, __ATOMIC_RELAXED);
}

void dp_shed_deadline(struct dp *d, __u64 end_ns, __u32 hshift)
{
	__atomic_store_n(&d->shed->hshift, hshift, __ATOMIC_RELAXED);
	__atomic_store_n(&d->shed->end, end_ns, __ATOMIC_RELEASE);
}

int dp_pool(struct dp *d, int i, double rate, double burst, double reserve_pct, __u8 flags)
{
	struct fg_limit lim = dp_lim(rate, burst);
	struct fg_pool *p = &d->pol.pools[i];
	int err;

	memset(p, 0, sizeof(*p));
	err = fg_pool_limits(&lim, reserve_pct, p, NULL);
	if (err)
		return err;
	p->id = (__u16)i;
	p->cost = FG_COST_PKTS;
	p->flags = flags;
	if ((__u32)i >= d->pol.npools)
		d->pol.npools = (__u32)i + 1;
	return 0;
}

void dp_set_now(struct dp *d, __u64 ns)
{
	d->skel->bss->fake_now = ns;
}

__u64 dp_now(struct dp *d)
{
	return d->skel->bss->fake_now;
}

void dp_pol_reset(struct dp *d)
{
	memset(&d->pol, 0, sizeof(d->pol));
	d->pol.default_verdict = FG_PASS;
	d->pol.malformed_verdict = FG_DROP;
}

struct fg_limit dp_lim(double rate, double burst)
{
	struct fg_limit l;

	l.inc = (__u64)llround((double)FG_TU_PER_SEC / rate);
	l.tau = (__u64)llround(burst) * l.inc;
	return l;
}

void dp_match(struct dp *d, int idx, const struct fg_match *m, unsigned classes)
{
	for (int c = 0; c < FG_NCLASS; c++) {
		if (!(classes & (1u << c)))
			continue;
		struct fg_match *e = &d->pol.match[c][d->pol.nmatch[c]++];
		*e = *m;
		e->rule = idx;
	}
}

int dp_rule(struct dp *d, const struct fg_rule *r, const struct fg_match *m, unsigned classes)
{
	return dp_rule_id(d, r, m, classes, (__u16)d->pol.nrules);
}

int dp_rule_id(struct dp *d, const struct fg_rule *r, const struct fg_match *m, unsigned classes,
	       __u16 id)
{
	int idx = d->pol.nrules++;
	struct fg_rule *n = &d->pol.rules[idx];

	*n = *r;
	n->id = id;
	if (!n->mask4 && !r->mask6[0]) {
		n->mask4 = 0xffffffff;
		n->mask6[0] = n->mask6[1] = 0xffffffff;
	}
	if (!n->ovf.inc)
		n->ovf = n->src;
	if (m)
		dp_match(d, idx, m, classes);
	return idx;
}

int dp_set_ctl(struct dp *d, __u32 mode, __u32 bypass, __u64 until)
{
	int err = fg_switch_file_mode(&d->cm, mode);

	return err ? err : fg_switch_bypass(&d->cm, bypass, until);
}

int dp_apply(struct dp *d)
{
	struct fg_ctl c;
	__u32 slot;
	int err;

	err = fg_ctl_snapshot(&d->cm, &c);
	if (err)
		return err;
	slot = c.slot ^ 1;
	d->pol.version++;
	if (!d->keep_hints)
		fg_policy_hints(&d->pol); /* as the apply does */
	{
		struct fg_pidx *x = malloc(sizeof(*x));

		if (!x)
			return -ENOMEM;
		int err = fg_pidx_build(&d->pol, x);

		if (!err && bpf_map_update_elem(bpf_map__fd(d->skel->maps.fg_pidx), &slot, x, 0))
			err = -errno;
		if (err) {
			free(x);
			return err;
		}
		free(x);
	}
	if (bpf_map_update_elem(bpf_map__fd(d->skel->maps.fg_policy), &slot, &d->pol, 0))
		return -errno;
	return fg_switch_slot(&d->cm, slot);
}

int dp_set_admission(struct dp *d, __u64 max_sources)
{
	struct fg_config *cfg = calloc(1, sizeof(*cfg));

	if (!cfg)
		return -ENOMEM;
	cfg->pol = d->pol;
	cfg->max_sources = max_sources;
	fg_policy_set_admission(cfg);
	d->pol.ins = cfg->pol.ins;
	free(cfg);
	return 0;
}

/* Writes the prefix into both slots (tests do not switch lists mid-test). */
int dp_pfx(struct dp *d, const char *cidr, __u32 list, __u32 sets)
{
	char a[64];
	const char *sl = strchr(cidr, '/');
	int plen, err;
	struct fg_pfx v = { .list = list, .sets = sets };

	snprintf(a, sizeof(a), "%.*s", sl ? (int)(sl - cidr) : (int)strlen(cidr), cidr);
	if (!strchr(a, ':') && d->npfx < 128) {
		struct fg_pfx_entry *e = &d->pfx[d->npfx++];
		struct fg_dir4_img *img = malloc(sizeof(*img));

		memset(e, 0, sizeof(*e));
		e->family = 4;
		e->plen = sl ? atoi(sl + 1) : 32;
		inet_pton(AF_INET, a, e->addr);
		e->list = list;
		e->sets = sets;
		if (!img)
			return -ENOMEM;
		err = fg_dir4_build(d->pfx, d->npfx, img);
		for (__u32 slot = 0; slot < 2 && !err; slot++)
			err = fg_dir4_write(bpf_map__fd(d->skel->maps.fg_dir4),
					    bpf_map__fd(d->skel->maps.fg_blk4), slot, img);
		fg_dir4_img_free(img);
		free(img);
		if (err)
			return err;
	}
	for (__u32 slot = 0; slot < 2; slot++) {
		if (strchr(a, ':')) {
			struct fg_lpm6 k = { .slot = slot };

			plen = sl ? atoi(sl + 1) : 128;
			k.prefixlen = 32 + plen;
			inet_pton(AF_INET6, a, k.addr);
			if (bpf_map_update_elem(bpf_map__fd(d->skel->maps.fg_pfx6), &k, &v, 0))
				return -errno;
			d->pol.lists |= 2;
		} else {
			struct fg_lpm4 k = { .slot = slot };

			plen = sl ? atoi(sl + 1) : 32;
			k.prefixlen = 32 + plen;
			inet_pton(AF_INET, a, &k.addr);
			if (bpf_map_update_elem(bpf_map__fd(d->skel->maps.fg_pfx4), &k, &v, 0))
				return -errno;
			d->pol.lists |= 1;
		}
	}
	return 0;
}

int dp_run(struct dp *d, const uint8_t *pkt, int len, __u32 *retval)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = len, .repeat = 1, );
	int err = bpf_prog_test_run_opts(d->prog, &o);

	if (err)
		return err;
	*retval = o.retval;
	return 0;
}

int dp_send(struct dp *d, const struct pkt_spec *s)
{
	uint8_t buf[16384];
	__u32 ret;
	int len = pkt_build(s, buf, sizeof(buf));
	int err;

	if (len < 0)
		return -EINVAL;
	err = dp_run(d, buf, len, &ret);
	return err ? err : (int)ret;
}

/* d->st and the buffers, for a struct dp that a test filled itself
 * (test_conn shares the counter's maps) rather than through dp_open. */
static int dp_stats_ready(struct dp *d)
{
	if (d->row_bytes)
		return 0;
	if (d->ncpu <= 0)
		d->ncpu = libbpf_num_possible_cpus();
	return d->ncpu <= 0 ? -EINVAL : dp_stats_open(d);
}

int dp_read_stats(struct dp *d, __u32 row, struct fg_stats *out)
{
	int err = dp_stats_ready(d);

	return err ? err : fg_stats_read_row(&d->st, row, out);
}

/* Packets counted under outcome o in one row of a dp_outcome buffer, summed over CPUs. */
static __u64 row_pkts(const struct dp *d, const void *row, __u32 o)
{
	const struct fg_stats *pc = row;
	__u64 n = 0;

	for (int c = 0; c < d->ncpu; c++)
		n += pc[c].pkts[o];
	return n;
}

/* Every row in one batch call (a lookup per row per packet cost 7 ms a
 * packet here); only rows whose bytes changed are summed and compared. */
int dp_outcome(struct dp *d, __u32 *row, __u32 *out)
{
	int found = 0;
	void *t;

	if (dp_stats_ready(d) || fg_array_read_rows(&d->st, FGM_STATS, 0, FG_NROWS, d->rows[1]))
		return -1;
	for (__u32 r = 0; r < FG_NROWS; r++) {
		const char *was = (const char *)d->rows[0] + (size_t)r * d->row_bytes;
		const char *now = (const char *)d->rows[1] + (size_t)r * d->row_bytes;

		if (!memcmp(was, now, d->row_bytes))
			continue;
		for (__u32 o = 0; o < FG_OUT_MAX; o++) {
			if (row_pkts(d, now, o) != row_pkts(d, was, o)) {
				found++;
				*row = r;
				*out = o;
			}
		}
	}
	t = d->rows[0];
	d->rows[0] = d->rows[1];
	d->rows[1] = t;
	return found == 1 ? 0 : -1;
}

int dp_outcome_of(struct dp *d, const struct pkt_spec *s, __u32 *row, int *verdict)
{
	__u32 r = 0, o = 0;
	int v;

	dp_outcome(d, &r, &o); /* snapshot */
	v = dp_send(d, s);
	if (verdict)
		*verdict = v;
	if (dp_outcome(d, &r, &o))
		return -1;
	if (row)
		*row = r;
	return (int)o;
}

__u64 dp_row_pkts(struct dp *d, __u32 row, __u32 out)
{
	struct fg_stats s;

	return dp_read_stats(d, row, &s) ? 0 : s.pkts[out];
}

__u64 dp_row_ev(struct dp *d, __u32 row, __u32 ev)
{
	struct fg_stats s;

	return dp_read_stats(d, row, &s) ? 0 : s.ev[ev];
}

static int dp_set4(struct dp *d, __u32 idx, struct fg_set4 *set)
{
	return bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.fg_src4), &idx, set) ? -errno : 0;
}

int dp_where4(struct dp *d, const char *addr, __u16 rule, __u16 gen, struct dp_where *at,
	      struct fg_set4 *set)
{
	union {
		struct fg_wkey4 s;
		__u64 u;
	} k = { .s = { .rule = FG_WKEY4_USED | rule, .gen = gen } };
	struct fg_ctl c;
	__u32 z = 0;

	inet_pton(AF_INET, addr, &k.s.addr);
	if (bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.fg_ctl), &z, &c))
		return -errno;
	at->key = k.u;
	at->set = fg_hash4(k.u, c.seed4, c.src4_bits);
	at->pref = fg_way4_pref(k.u, c.seed4);
	at->way = -1;
	if (dp_set4(d, at->set, set))
		return -errno;
	for (int w = 0; w < FG_WAYS4; w++) {
		__u64 kw;

		memcpy(&kw, &set->key[w], sizeof(kw));
		if (kw == k.u)
			at->way = w;
	}
	return 0;
}

int dp_bucket4(struct dp *d, const char *addr, __u16 rule, __u16 gen, struct fg_bucket *b)
{
	struct dp_where at;
	struct fg_set4 set;
	int err = dp_where4(d, addr, rule, gen, &at, &set);

	if (err)
		return err;
	if (at.way < 0)
		return -ENOENT;
	b->tat = set.tat[at.way];
	b->drops = set.drops[at.way];
	return 0;
}

void dp_claim_seen(struct dp_claims *c, __u8 *used, __u32 ways, __u32 pref, int got)
{
	int want = dp_model_claim(used, ways, pref);

	c->wrong += got != want;
	c->own += want >= 0 && (__u32)want == pref;
	c->other += want >= 0 && (__u32)want != pref;
	c->none += want < 0;
}

int dp_claims_check(const struct dp_claims *c, const char *what, __u64 inserts)
{
	printf("  %s: %d in their own way, %d in another, %d without (set full), %d not where "
	       "the model puts them; %llu inserts\n",
	       what, c->own, c->other, c->none, c->wrong, (unsigned long long)inserts);
	if (c->wrong || !c->own || !c->other || inserts != (__u64)(c->own + c->other))
		return -EPROTO;
	return 0;
}

int dp_model_claim(__u8 *used, __u32 ways, __u32 pref)
{
	if (pref < ways && !used[pref]) {
		used[pref] = 1;
		return (int)pref;
	}
	for (__u32 w = 0; w < ways; w++)
		if (!used[w]) {
			used[w] = 1;
			return (int)w;
		}
	return -1;
}

int dp_agg(struct dp *d, __u32 idx, struct fg_bucket *b)
{
	struct fg_agg a;

	if (bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.fg_agg), &idx, &a))
		return -errno;
	*b = a.b;
	return 0;
}

__u32 dp_count_src4(struct dp *d)
{
	__u32 nsets = bpf_map__max_entries(d->skel->maps.fg_src4), n = 0;
	struct fg_set4 set;

	for (__u32 i = 0; i < nsets; i++)
		if (!dp_set4(d, i, &set))
			for (int w = 0; w < FG_WAYS4; w++)
				n += !!(set.key[w].rule & FG_WKEY4_USED);
	return n;
}

void dp_sa_rules(struct dp *d, int way, __u16 dport, struct fg_limit src, struct fg_limit reply)
{
	struct fg_rule r = { .action = FG_ACT_LIMIT, .mask4 = 0xffffffff, .src = src };
	struct fg_rule pass = { .action = FG_ACT_PASS };
	struct fg_match m = M_ANY;

	memset(r.mask6, 0xff, sizeof(r.mask6));
	m.dport_lo = m.dport_hi = dport;
	m.proto = 6;
	m.flags = FG_M_L4;
	m.tcp_mask = FG_TCP_SYN | FG_TCP_ACK;
	m.tcp_val = FG_TCP_SYN;
	dp_rule(d, &r, &m, 1u << FG_CLASS_TCP);
	dp_rule(d, &pass, &M_ANY, C_ALL);
	d->pol.sa.way = way;
	d->pol.sa.verified_ns = 600 * 1000000000ull;
	d->pol.sa.reply = reply;
	d->pol.sa.pfx_mask4 = htonl(0xffffff00);
	d->pol.sa.nmatch = 1;
	d->pol.sa.match[0] = 0;
	d->pol.sa.rules[0] = 1;
}
