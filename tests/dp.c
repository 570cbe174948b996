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

int dp_open(struct dp *d, __u32 max_sources)
{
	int err;

	memset(d, 0, sizeof(*d));
	d->ncpu = libbpf_num_possible_cpus();
	d->skel = floodgate_bpf__open();
	if (!d->skel)
		return -errno;
	d->skel->rodata->fg_clock = FG_CLOCK_TEST;
	d->skel->rodata->fg_sa_on = dp_sa_on;
	bpf_map__set_max_entries(d->skel->maps.fg_src4, fg_src4_sets(max_sources));
	bpf_map__set_max_entries(d->skel->maps.fg_src6, fg_src6_sets(max_sources));
	err = floodgate_bpf__load(d->skel);
	if (err) {
		floodgate_bpf__destroy(d->skel);
		d->skel = NULL;
		return err;
	}
	d->prog = bpf_program__fd(d->skel->progs.floodgate);
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
	fg_ctl_map_close(&d->cm);
	floodgate_bpf__destroy(d->skel);
	d->skel = NULL;
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
	err = fg_pool_limits(&lim, reserve_pct, p, NULL, 0);
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

int dp_read_stats(struct dp *d, __u32 row, struct fg_stats *out)
{
	struct fg_stats *pc = calloc(d->ncpu, sizeof(*pc));
	int err = 0;

	if (!pc)
		return -ENOMEM;
	memset(out, 0, sizeof(*out));
	if (bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.fg_stats), &row, pc)) {
		err = -errno;
		goto out;
	}
	for (int c = 0; c < d->ncpu; c++) {
		for (int i = 0; i < FG_OUT_MAX; i++) {
			out->pkts[i] += pc[c].pkts[i];
			out->bytes[i] += pc[c].bytes[i];
		}
		for (int i = 0; i < FG_EV_MAX; i++)
			out->ev[i] += pc[c].ev[i];
		out->fleet_offered += pc[c].fleet_offered;
		out->fleet_unleased += pc[c].fleet_unleased;
	}
out:
	free(pc);
	return err;
}

int dp_outcome(struct dp *d, __u32 *row, __u32 *out)
{
	int found = 0;

	for (__u32 r = 0; r < FG_NROWS; r++) {
		struct fg_stats s;

		if (dp_read_stats(d, r, &s))
			return -1;
		for (__u32 o = 0; o < FG_OUT_MAX; o++) {
			if (s.pkts[o] != d->snap[r].pkts[o]) {
				found++;
				*row = r;
				*out = o;
			}
		}
		d->snap[r] = s;
	}
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
