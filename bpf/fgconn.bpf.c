// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fgconn: counts the TCP connections each source holds open, per capped
 * rule, from the kernel's own socket state (docs/concurrency.md). Two ways,
 * one set of maps; userspace loads the programs of the way the kernel
 * allows (autoload) and leaves the others out:
 *
 * tp_btf way (a kernel that allows BPF tracing)
 *   fgc_state   tp_btf/inet_sock_set_state: a socket entering the counted
 *               states (FG_CONN_COUNTED_STATES) is counted under every
 *               capped rule whose ports and family it matches, the keys
 *               kept in its socket storage (fgc_mark); leaving them, it is
 *               uncounted under exactly those keys, whatever path it took
 *   fgc_walk    iter/tcp: the reconcile walk, run by userspace; counts what
 *               the tracepoint missed and moves every counted socket into
 *               the current epoch's half of its keys' counts
 *   fgc_sweep   iter/bpf_map_elem over fgc_count: zeroes the other half
 *               (what is left there is a phantom), clears expired slots and
 *               prints the keys left at zero, which userspace deletes
 * sock_ops way (a kernel that refuses tracing)
 *   fgc_sockops sock_ops on the cgroup v2 root: the same counting from the
 *               established callbacks and the TCP state callback
 *               (BPF_SOCK_OPS_STATE_CB_FLAG, set on every TCP socket of the
 *               counted namespace when it is established)
 *   fgc_release cgroup/sock_release on the same root: a socket the program
 *               never saw established (it predates it) comes off the count
 *               when the application releases it
 *   fgc_swalk   tc, BPF_PROG_TEST_RUN only: the reconcile walk over the
 *               sockets of a sock_diag dump, each looked up by its tuple
 *   fgc_fix     tc, BPF_PROG_TEST_RUN only: fgc_sweep's work on a batch of
 *               keys userspace lists
 * both
 *   fgc_test    xdp: BPF_PROG_TEST_RUN entry for the helpers of fg_conn.bpf.h
 *
 * A mark is written by compare-and-swap of its word (include/fg_conn.h,
 * struct fg_conn_mark): the sock_ops way's walk runs without the socket
 * lock that every other writer holds. The counts take atomics, as XDP
 * reads them on any CPU.
 *
 * Kernel 6.1 refuses a map helper's key that arrived as a global function's
 * argument (it is PTR_TO_MEM there; later kernels accept it): the global
 * functions below copy a key onto their own stack before a lookup.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_endian.h>
#include "fg_conn.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define FGC_AF_INET	2
#define FGC_AF_INET6	10
#define FGC_IPPROTO_TCP 6

/* Sweep parameters (userspace, before each run): now for slot expiry (0 =
 * the real clock) and whether to print the keys left at zero. */
__u64 sweep_now = 0;
__u32 sweep_emit = 0;
/* fgc_test, FGC_TEST_BURST: run number; claims won per CPU parity and
 * key group; other verdicts */
#define FGC_TEST_GROUPS 1024
__u64 test_seq = 0;
__u32 test_won[2][FGC_TEST_GROUPS] = {};
__u64 test_verdicts[8] = {};

/* Epoch, active cap table slot, namespace; written by userspace. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct fg_conn_ctl);
} fgc_ctl SEC(".maps");

/* The cap table, two slots (fg_conn_ctl.slot is active); written by the
 * daemon from the policy. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct fg_conn_caps);
} fgc_caps SEC(".maps");

/* Per socket: the keys it is counted under and in which epoch; written by
 * the counting programs and the walks, freed with the socket. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct fg_conn_mark);
} fgc_mark SEC(".maps");

/* Events (enum fg_conn_event), per CPU; read by userspace. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fg_conn_stats);
} fgc_stats SEC(".maps");

/* What a socket is, for the cap table: the remote end is the source. */
struct fgc_id {
	__be32 addr[4]; /* remote address; family 4: addr[0] */
	__u16 lport;	/* local port, host order */
	__u16 rport;	/* remote port, host order */
	__u8 family;	/* 4 or 6; 0 = not counted (other family or netns) */
	__u8 pad[3];
};

/* The keys a socket should have: on the stack, not in a per-CPU scratch
 * (a sock_ops program can be interrupted on its CPU by another run of
 * itself from softirq). */
struct fgc_want {
	struct fg_conn_key key[FG_CONN_PER_SOCK];
	__u32 n;
	__u32 pad;
};

/* The walks' wanted keys (too big for their stack, under the counting
 * functions' frames); only the walks use it, one at a time per CPU, and
 * neither walk runs nested in itself. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fgc_want);
} fgc_scratch SEC(".maps");

static __always_inline void fgc_ev(__u32 e, __u64 n)
{
	__u32 k = 0;
	struct fg_conn_stats *st = bpf_map_lookup_elem(&fgc_stats, &k);

	if (st && e < FGC_EV_MAX)
		__sync_fetch_and_add(&st->ev[e], n); /* a softirq run may interrupt ours */
}

static __always_inline struct fg_conn_ctl *fgc_ctl_get(void)
{
	__u32 k = 0;
	struct fg_conn_ctl *c = bpf_map_lookup_elem(&fgc_ctl, &k);

	if (!c || c->magic != FG_CONN_ABI_MAGIC)
		return NULL;
	return c;
}

static __always_inline const struct fg_conn_caps *fgc_caps_get(const struct fg_conn_ctl *ctl)
{
	__u32 slot = ctl->slot & 1;

	return bpf_map_lookup_elem(&fgc_caps, &slot);
}

/* The remote address in id: an IPv4-mapped IPv6 address is family 4, as
 * its packets reach XDP as IPv4. */
static __always_inline void fgc_id_addr6(struct fgc_id *id, const __u32 a[4])
{
	if (a[0] == 0 && a[1] == 0 && a[2] == bpf_htonl(0xffff)) {
		id->addr[0] = a[3];
		id->addr[1] = id->addr[2] = id->addr[3] = 0;
		id->family = 4;
	} else {
		id->addr[0] = a[0];
		id->addr[1] = a[1];
		id->addr[2] = a[2];
		id->addr[3] = a[3];
		id->family = 6;
	}
}

/*
 * Read the socket's identity (tp_btf way). The local port comes from
 * skc_num, which is valid whenever we need it: a socket is keyed only on
 * its way into the counted states (inet_put_port() zeroes it on the way to
 * CLOSE, when the mark is used instead).
 */
static __always_inline void fgc_id_read(const struct sock_common *skc, __u32 netns,
					struct fgc_id *id)
{
	__u16 fam = skc->skc_family;

	id->family = 0;
	if (skc->skc_net.net->ns.inum != netns)
		return;
	id->lport = skc->skc_num;
	id->rport = __builtin_bswap16(skc->skc_dport);
	if (fam == FGC_AF_INET) {
		id->addr[0] = skc->skc_daddr;
		id->addr[1] = id->addr[2] = id->addr[3] = 0;
		id->family = 4;
	} else if (fam == FGC_AF_INET6) {
		__u32 a[4];

		a[0] = skc->skc_v6_daddr.in6_u.u6_addr32[0];
		a[1] = skc->skc_v6_daddr.in6_u.u6_addr32[1];
		a[2] = skc->skc_v6_daddr.in6_u.u6_addr32[2];
		a[3] = skc->skc_v6_daddr.in6_u.u6_addr32[3];
		fgc_id_addr6(id, a);
	}
}

__noinline int fgc_cap_matches(const struct fg_conn_cap *c, const struct fgc_id *id)
{
	int j;

	if (!c || !id)
		return 0;
	if (!(c->families & (id->family == 4 ? FG_CONN_F_V4 : FG_CONN_F_V6)))
		return 0;
	for (j = 0; j < FG_CONN_RANGES; j++) {
		if (j >= c->nranges)
			break;
		if (id->lport >= c->dport[j].lo && id->lport <= c->dport[j].hi)
			return 1;
	}
	return 0;
}

/* One capped rule: if the socket falls under it, its key goes into
 * out->key[n]. Returns the new count, or -1 when the socket matches but
 * FG_CONN_PER_SOCK keys are there already. A global function: the loop
 * over the cap table calling it keeps one verifier state per pass. */
__noinline int fgc_key_add(const struct fg_conn_cap *c, const struct fgc_id *id,
			   struct fgc_want *out, int n)
{
	if (!c || !id || !out || n < 0)
		return n;
	if (!fgc_cap_matches(c, id))
		return n;
	if (n >= FG_CONN_PER_SOCK)
		return -1;
	fg_conn_key_make(&out->key[n], id->family, id->addr, c->mask4, c->mask6, c->rule, c->gen);
	return n + 1;
}

/* The keys of every capped rule the socket falls under, into out->key[]
 * (out->n of them, at most FG_CONN_PER_SOCK: more is an event). */
static __always_inline void fgc_keys(const struct fg_conn_caps *caps, const struct fgc_id *id,
				     struct fgc_want *out)
{
	__u32 i;
	int n = 0, r;

	out->n = 0;
	if (!id->family)
		return;
	for (i = 0; i < FG_CONN_MAX_CAPS; i++) {
		if (i >= caps->n)
			break;
		r = fgc_key_add(&caps->cap[i], id, out, n);
		if (r < 0) {
			fgc_ev(FGC_EV_MULTI, 1);
			break;
		}
		n = r;
	}
	out->n = n > FG_CONN_PER_SOCK ? FG_CONN_PER_SOCK : n;
}

/* Free the slot of handshake hsid, if v holds one; 1 if it did. hsid 0:
 * nothing to free. */
static __always_inline int fgc_slot_free(struct fg_conn_val *v, __u32 hsid)
{
	int i;

	if (!hsid)
		return 0;
	for (i = 0; i < FG_CONN_SLOTS; i++) {
		__u64 w = *(volatile __u64 *)&v->slot[i];

		if (w && (__u32)w == hsid && __sync_val_compare_and_swap(&v->slot[i], w, 0) == w)
			return 1;
	}
	return 0;
}

/*
 * Count one connection under k in half h. A key's first connection
 * creates its fgc_count entry (BPF_NOEXIST: a racing CPU's entry wins and
 * is used), taking over a copy of the key's pending slots from fgc_pend:
 * XDP looks in fgc_count first, and claims there once it exists. The
 * fgc_pend entry is left to the LRU: deleting it could hand its memory to
 * another key while an XDP CAS is still on its way to it. Frees the
 * handshake's pending slot (match by hsid; 0: none). 1 if counted.
 */
__noinline int fgc_inc(const struct fg_conn_key *k, __u32 h, __u32 hsid)
{
	struct fg_conn_val *v, *p;
	struct fg_conn_key key;
	int freed = 0, i;
	long err;

	if (!k)
		return 0;
	key = *k; /* 6.1: a map key must not be an argument's memory */
	v = bpf_map_lookup_elem(&fgc_count, &key);
	if (!v) {
		struct fg_conn_val init = {};

		init.est = FG_CONN_EST_ZERO + fg_conn_est_one(h);
		p = bpf_map_lookup_elem(&fgc_pend, &key);
		if (p) {
			for (i = 0; i < FG_CONN_SLOTS; i++) {
				__u64 w = *(volatile __u64 *)&p->slot[i];

				if (!freed && hsid && w && (__u32)w == hsid)
					freed = 1;
				else
					init.slot[i] = w;
			}
		}
		err = bpf_map_update_elem(&fgc_count, &key, &init, BPF_NOEXIST);
		if (!err) {
			if (freed)
				fgc_ev(FGC_EV_CONVERT, 1);
			return 1;
		}
		if (err != -FG_CONN_EEXIST) {
			fgc_ev(FGC_EV_MAP_FULL, 1);
			return 0;
		}
		v = bpf_map_lookup_elem(&fgc_count, &key);
		if (!v)
			return 0;
	}
	__sync_fetch_and_add(&v->est, fg_conn_est_one(h));
	/* with an fgc_count entry, XDP claims in it: no fgc_pend lookup */
	if (fgc_slot_free(v, hsid))
		fgc_ev(FGC_EV_CONVERT, 1);
	return 1;
}

__noinline int fgc_dec(const struct fg_conn_key *k, __u32 h)
{
	struct fg_conn_key key;
	struct fg_conn_val *v;

	if (!k)
		return 0;
	key = *k; /* 6.1, as in fgc_inc */
	v = bpf_map_lookup_elem(&fgc_count, &key);
	if (v)
		__sync_fetch_and_add(&v->est, -fg_conn_est_one(h));
	else
		fgc_ev(FGC_EV_NOKEY, 1);
	return 0;
}

/*
 * Which half holds the counts of a mark of epoch e: its own epoch's, if
 * that is the current epoch or the one before (a walk is moving sockets
 * out of it); older counts have been swept away already: -1.
 */
static __always_inline int fgc_half(__u32 e, __u32 cur)
{
	if (e == cur || e + 1 == cur)
		return e & 1;
	return -1;
}

/* A mark's set index, bounded for the verifier: clang knows a set from
 * the word is at most 3 and turns "< 3" into "!= 3", which 6.1's verifier
 * does not use to bound the index; the barrier hides what clang knows. */
static __always_inline __u32 fgc_set_idx(__u32 s)
{
	asm volatile("" : "+r"(s));
	return s;
}

/* Uncount keys[s][0..n) of m from half h (h < 0: stale, nothing). */
static __always_inline void fgc_dec_set(struct fg_conn_mark *m, __u32 s, __u32 n, int h)
{
	__u32 i;

	if (h < 0) {
		fgc_ev(FGC_EV_STALE, 1);
		return;
	}
	s = fgc_set_idx(s);
	if (s >= FG_CONN_MARK_SETS)
		return;
	for (i = 0; i < FG_CONN_PER_SOCK; i++) {
		if (i >= n)
			break;
		fgc_dec(&m->key[s][i], h);
	}
}

/*
 * Uncount the socket of mark m (leaving the counted states, or found out
 * of them by a walk): the word is swapped to "not counted", keeping its
 * set bits so that a walk racing this never writes the set being read,
 * then what the word said is uncounted. 1 if it was counted.
 */
__noinline int fgc_close(struct fg_conn_mark *m, __u32 cur)
{
	__u64 w = 0;
	int t;

	if (!m)
		return 0;
	for (t = 0; t < FG_CONN_CAS; t++) {
		w = *(volatile __u64 *)&m->word;
		if (!fg_conn_w_n(w))
			return 0;
		if (__sync_val_compare_and_swap(&m->word, w, w & FG_CONN_W_SETMASK) == w)
			break;
	}
	if (t == FG_CONN_CAS) {
		fgc_ev(FGC_EV_CONTENDED, 1);
		return 0;
	}
	fgc_dec_set(m, fg_conn_w_set(w), fg_conn_w_n(w), fgc_half(fg_conn_w_epoch(w), cur));
	return 1;
}

/* Count want's keys in half cur into m->key[s]; keys that could not be
 * counted (fgc_count full) are left out. Returns how many were. */
static __always_inline __u32 fgc_count_set(struct fg_conn_mark *m, __u32 s,
					   const struct fgc_want *want, __u32 cur, __u32 hsid)
{
	__u32 i, kept = 0;

	s = fgc_set_idx(s);
	if (s >= FG_CONN_MARK_SETS)
		return 0;
	for (i = 0; i < FG_CONN_PER_SOCK; i++) {
		if (i >= want->n)
			break;
		if (kept >= FG_CONN_PER_SOCK)
			break;
		m->key[s][kept] = want->key[i];
		if (fgc_inc(&m->key[s][kept], cur, hsid))
			kept++;
	}
	return kept;
}

/*
 * Make m count the socket under want's keys in the current half (how: a
 * counting program's open, FGC_MV_OPEN or, sock_ops, FGC_MV_TRACKED, set 0;
 * or a walk, FGC_MV_WALK, set 1 or 2). The counts go up first,
 * then the word is swapped from what was read; the old counts, if any, go
 * down after (a reader may see both for a moment, never neither). Losing
 * the swap (a close or a racing count) takes the new counts back and
 * tries again. open: only if not counted already (two programs attached
 * at once, during a daemon's handover, count a socket once). Returns 1 if
 * it now counts the socket, 0 if not, -1 when open found it counted.
 */
#define FGC_MV_OPEN    0
#define FGC_MV_TRACKED 1
#define FGC_MV_WALK    2
__noinline int fgc_move(struct fg_conn_mark *m, const struct fgc_want *want, __u32 cur, __u32 hsid,
			__u32 how)
{
	__u32 t, set, kept;
	__u64 w, nw;

	if (!m || !want)
		return 0;
	for (t = 0; t < FG_CONN_CAS; t++) {
		w = *(volatile __u64 *)&m->word;
		if (how != FGC_MV_WALK && fg_conn_w_n(w) && fgc_half(fg_conn_w_epoch(w), cur) >= 0)
			return -1;
		set = how != FGC_MV_WALK ? 0 : fg_conn_w_set(w) == 1 ? 2 : 1;
		kept = fgc_count_set(m, set, want, cur, hsid);
		nw = fg_conn_w_make(cur, set, kept);
		if (how == FGC_MV_TRACKED || (how == FGC_MV_WALK && fg_conn_w_n(w)))
			nw |= how == FGC_MV_TRACKED ? FG_CONN_W_TRACKED : w & FG_CONN_W_TRACKED;
		if (__sync_val_compare_and_swap(&m->word, w, nw) == w) {
			if (fg_conn_w_n(w))
				fgc_dec_set(m, fg_conn_w_set(w), fg_conn_w_n(w),
					    fgc_half(fg_conn_w_epoch(w), cur));
			return kept > 0;
		}
		fgc_dec_set(m, set, kept, cur & 1);
		hsid = 0; /* its slot, if any, was freed by the first try */
	}
	fgc_ev(FGC_EV_CONTENDED, 1);
	return 0;
}

__noinline int fgc_same_keys(const struct fg_conn_mark *m, __u64 w, const struct fgc_want *b)
{
	__u32 i, j, s, n;

	if (!m || !b)
		return 0;
	s = fgc_set_idx(fg_conn_w_set(w));
	n = fg_conn_w_n(w);
	if (n != b->n || s >= FG_CONN_MARK_SETS)
		return 0;
	for (i = 0; i < FG_CONN_PER_SOCK; i++) {
		const __u32 *x = (const __u32 *)&m->key[s][i], *y = (const __u32 *)&b->key[i];

		if (i >= n)
			break;
		for (j = 0; j < sizeof(struct fg_conn_key) / 4; j++)
			if (x[j] != y[j])
				return 0;
	}
	return 1;
}

/* A socket enters the counted states: count it under want (from a
 * counting program, the socket locked; how: FGC_MV_OPEN, FGC_MV_TRACKED). */
static __always_inline void fgc_open(struct fg_conn_mark *m, const struct fgc_want *want, __u32 cur,
				     __u32 hsid, __u32 how)
{
	if (fgc_move(m, want, cur, hsid, how) > 0)
		fgc_ev(FGC_EV_OPEN, 1);
}

/*
 * Reconcile walk, one socket (userspace bumped the epoch first), either
 * way's: counted, a socket ends up counted under the keys the cap table
 * gives it now, in the current half:
 *   not marked                 counted (FGC_EV_SEED: the counting program
 *                              missed it, or it predates the program)
 *   marked, older epoch        moved into the current half, current first
 *                              so that XDP never sees it missing
 *   marked, other keys         moved to the new keys (FGC_EV_REKEY)
 *   marked, current epoch      left alone (counted since the bump)
 * Not counted (no longer in a counted state): uncounted if marked.
 */
static __always_inline int fgc_walk_mark(struct fg_conn_mark *m, const struct fgc_want *want,
					 int counted, __u32 cur, __u32 hsid)
{
	__u64 w = *(volatile __u64 *)&m->word;

	if (!counted)
		return fgc_close(m, cur) ? FGC_WALK_UNCOUNTED : FGC_WALK_NOCAP;
	if (fg_conn_w_n(w) && fg_conn_w_epoch(w) == cur && fgc_same_keys(m, w, want))
		return FGC_WALK_KEPT;
	if (!fg_conn_w_n(w)) {
		if (!want->n)
			return FGC_WALK_NOCAP;
		if (fgc_move(m, want, cur, hsid, FGC_MV_WALK) <= 0)
			return FGC_WALK_FAILED;
		fgc_ev(FGC_EV_SEED, 1);
		return FGC_WALK_SEEDED;
	}
	if (!fgc_same_keys(m, w, want))
		fgc_ev(FGC_EV_REKEY, 1);
	/* a socket counted long ago has no pending slot (hsid 0): a live slot
	 * with its id is another handshake from the same port, to another
	 * port of the rule */
	fgc_move(m, want, cur, 0, FGC_MV_WALK);
	return FGC_WALK_MOVED;
}

/* ---- the tp_btf way ---------------------------------------------------------- */

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(fgc_state, const struct sock *sk, const int oldstate, const int newstate)
{
	int was = fg_conn_counted(oldstate), is = fg_conn_counted(newstate);
	const struct fg_conn_caps *caps;
	struct fg_conn_mark *m;
	struct fg_conn_ctl *ctl;
	struct fgc_want want;
	struct fgc_id id;

	if (was == is || sk->sk_protocol != FGC_IPPROTO_TCP)
		return 0;
	ctl = fgc_ctl_get();
	if (!ctl)
		return 0;
	if (!is) {
		/* leaving the counted states: by the mark, never recomputed */
		m = bpf_sk_storage_get(&fgc_mark, (void *)sk, 0, 0);
		if (m && fgc_close(m, ctl->epoch))
			fgc_ev(FGC_EV_CLOSE, 1);
		return 0;
	}
	caps = fgc_caps_get(ctl);
	if (!caps || !caps->n)
		return 0;
	fgc_id_read(&sk->__sk_common, ctl->netns, &id);
	fgc_keys(caps, &id, &want);
	if (!want.n)
		return 0; /* no capped rule: no storage either */
	m = bpf_sk_storage_get(&fgc_mark, (void *)sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!m) {
		fgc_ev(FGC_EV_NO_STORAGE, 1);
		return 0;
	}
	fgc_open(m, &want, ctl->epoch, fg_conn_hsid(id.addr, id.rport), FGC_MV_OPEN);
	return 0;
}

/* The tp_btf way's walk: every TCP socket of the namespace, under
 * lock_sock. Request socks and timewait socks are not full sockets:
 * skipped. */
SEC("iter/tcp")
int fgc_walk(struct bpf_iter__tcp *ctx)
{
	struct sock_common *skc = ctx->sk_common;
	const struct fg_conn_caps *caps;
	struct fg_conn_mark *m;
	struct fg_conn_ctl *ctl;
	struct fgc_want *want;
	struct fgc_id id = {};
	struct tcp_sock *tp;
	__u32 k = 0;
	int counted;

	if (!skc)
		return 0;
	tp = bpf_skc_to_tcp_sock(skc);
	if (!tp)
		return 0;
	ctl = fgc_ctl_get();
	want = bpf_map_lookup_elem(&fgc_scratch, &k);
	if (!ctl || !want)
		return 0;
	caps = fgc_caps_get(ctl);
	if (!caps)
		return 0;
	counted = fg_conn_counted(tp->inet_conn.icsk_inet.sk.__sk_common.skc_state);
	want->n = 0;
	if (counted) {
		fgc_id_read(&tp->inet_conn.icsk_inet.sk.__sk_common, ctl->netns, &id);
		fgc_keys(caps, &id, want);
	}
	m = bpf_sk_storage_get(&fgc_mark, tp, 0, want->n ? BPF_SK_STORAGE_GET_F_CREATE : 0);
	if (!m) {
		if (want->n)
			fgc_ev(FGC_EV_NO_STORAGE, 1);
		return 0;
	}
	fgc_walk_mark(m, want, counted, ctl->epoch, fg_conn_hsid(id.addr, id.rport));
	return 0;
}

/*
 * Sweep one fgc_count value: the half h (not the current epoch's) must
 * hold nothing (before the bump: only what a missed walk or a bad write
 * left; after the walk: whatever no live socket accounts for), so it is
 * swapped to zero and a nonzero value is a correction. Expired pending
 * slots are cleared, so no slot word lives long enough for its clock to
 * wrap. Returns the live slots; *fixed what the half held.
 */
static __always_inline int fgc_sweep_val(struct fg_conn_val *v, __u32 h, __u64 now_ns, __s64 *fixed)
{
	__u32 now_tu = fg_conn_tu(now_ns ? now_ns : bpf_ktime_get_ns());
	__s64 old = 0;
	int i, live = 0;
	__u64 w;

	for (i = 0; i < FG_CONN_CAS; i++) {
		w = *(volatile __u64 *)&v->est;
		old = fg_conn_est_half(w, h);
		if (!old || __sync_val_compare_and_swap(&v->est, w, fg_conn_est_set(w, h, 0)) == w)
			break;
	}
	*fixed = i < FG_CONN_CAS ? old : 0;
	if (*fixed) {
		fgc_ev(FGC_EV_FIX, 1);
		fgc_ev(FGC_EV_FIX_CONNS, old < 0 ? -old : old);
	}
	for (i = 0; i < FG_CONN_SLOTS; i++) {
		w = *(volatile __u64 *)&v->slot[i];
		if (fg_conn_slot_live(w, now_tu))
			live++;
		else if (w)
			__sync_val_compare_and_swap(&v->slot[i], w, 0);
	}
	return live;
}

/* The tp_btf way's sweep, one fgc_count entry; with sweep_emit, keys left
 * at zero are printed. */
SEC("iter/bpf_map_elem")
int fgc_sweep(struct bpf_iter__bpf_map_elem *ctx)
{
	const struct fg_conn_key *ik = ctx->key;
	struct fg_conn_ctl *ctl;
	struct fg_conn_key key;
	struct fg_conn_val *v;
	__s64 fixed;
	int live;

	if (!ik || !ctx->value)
		return 0;
	/* the iterator's key is a read-only buffer: look the entry up for a
	 * map value pointer, on which atomics are allowed */
	key = *ik;
	ctl = fgc_ctl_get();
	v = bpf_map_lookup_elem(&fgc_count, &key);
	if (!ctl || !v)
		return 0;
	live = fgc_sweep_val(v, (ctl->epoch + 1) & 1, sweep_now, &fixed);
	if (sweep_emit && !live && v->est == FG_CONN_EST_ZERO)
		bpf_seq_write(ctx->meta->seq, &key, sizeof(key));
	return 0;
}

/* ---- the sock_ops way -------------------------------------------------------- */

/*
 * The TCP state, from the established callbacks and the state callback.
 * Every program on the cgroup v2 root sees the sockets of every network
 * namespace: only the counted one's (its cookie in fgc_ctl) are looked at,
 * so that daemons in several namespaces, each with its own program and
 * maps, never touch each other's sockets. The state callback is asked for
 * (added to the socket's flags, never replacing them) on every TCP socket
 * of the namespace when it is established, so that a capped rule added
 * later still sees its close. Returns 1 always (0 would make the kernel
 * take the callback as refused).
 */
SEC("sockops")
int fgc_sockops(struct bpf_sock_ops *skops)
{
	const struct fg_conn_caps *caps;
	struct fg_conn_ctl *ctl;
	struct fg_conn_mark *m;
	struct bpf_sock *sk;
	struct fgc_want want;
	struct fgc_id id = {};
	/* every field read once, unconditionally: clang would otherwise pick
	 * one address by branch, a ctx pointer with an offset the verifier
	 * refuses */
	__u32 op = skops->op, state = skops->state, a0 = skops->args[0], a1 = skops->args[1];
	int was, is;

	if (op == BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB || op == BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB) {
		was = 0;
		is = fg_conn_counted(state); /* a Fast Open child is still in SYN_RECV */
	} else if (op == BPF_SOCK_OPS_STATE_CB) {
		was = fg_conn_counted(a0);
		is = fg_conn_counted(a1);
	} else {
		return 1;
	}
	ctl = fgc_ctl_get();
	if (!ctl || bpf_get_netns_cookie(skops) != ctl->netns_cookie)
		return 1;
	if (op != BPF_SOCK_OPS_STATE_CB)
		bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags |
							 BPF_SOCK_OPS_STATE_CB_FLAG);
	if (was == is)
		return 1;
	sk = skops->sk;
	if (!sk)
		return 1;
	if (!is) {
		m = bpf_sk_storage_get(&fgc_mark, sk, 0, 0);
		if (m && fgc_close(m, ctl->epoch))
			fgc_ev(FGC_EV_CLOSE, 1);
		return 1;
	}
	caps = fgc_caps_get(ctl);
	if (!caps || !caps->n)
		return 1;
	id.lport = skops->local_port;
	id.rport = bpf_ntohl(skops->remote_port);
	if (skops->family == FGC_AF_INET) {
		id.addr[0] = skops->remote_ip4;
		id.family = 4;
	} else if (skops->family == FGC_AF_INET6) {
		__u32 a[4];

		a[0] = skops->remote_ip6[0];
		a[1] = skops->remote_ip6[1];
		a[2] = skops->remote_ip6[2];
		a[3] = skops->remote_ip6[3];
		fgc_id_addr6(&id, a);
	}
	fgc_keys(caps, &id, &want);
	if (!want.n)
		return 1;
	m = bpf_sk_storage_get(&fgc_mark, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!m) {
		fgc_ev(FGC_EV_NO_STORAGE, 1);
		return 1;
	}
	fgc_open(m, &want, ctl->epoch, fg_conn_hsid(id.addr, id.rport), FGC_MV_TRACKED);
	return 1;
}

/*
 * The application released a socket (its last close, before TCP's own):
 * a socket counted by a walk, not by fgc_sockops (it predates the program,
 * so no state callback will ever say it closed), comes off the count now
 * rather than at the next reconcile; it holds no worker any more. A
 * tracked socket is left to its state callbacks, as the tp_btf way counts
 * it.
 */
SEC("cgroup/sock_release")
int fgc_release(struct bpf_sock *sk)
{
	struct fg_conn_ctl *ctl;
	struct fg_conn_mark *m;
	__u64 w;

	if (sk->protocol != FGC_IPPROTO_TCP)
		return 1;
	ctl = fgc_ctl_get();
	if (!ctl || bpf_get_netns_cookie(sk) != ctl->netns_cookie)
		return 1;
	m = bpf_sk_storage_get(&fgc_mark, sk, 0, 0);
	if (!m)
		return 1;
	w = *(volatile __u64 *)&m->word;
	if (fg_conn_w_n(w) && !(w & FG_CONN_W_TRACKED) && fgc_close(m, ctl->epoch))
		fgc_ev(FGC_EV_RELEASE, 1);
	return 1;
}

/*
 * The sock_ops way's walk, one socket of the dump: looked up by its tuple
 * in this process's namespace (the test run's); gone, or found out of the
 * counted states, it is uncounted (a close the counting program did not
 * see: a socket that predates it). A lookup that misses the established
 * socket finds its listener: not a counted state either.
 */
__noinline int fgc_swalk_one(struct __sk_buff *ctx, __u32 off)
{
	const struct fg_conn_caps *caps;
	struct bpf_sock_tuple t = {};
	struct fg_conn_walk_sock s;
	struct fg_conn_ctl *ctl;
	struct fg_conn_mark *m;
	struct fgc_want *want;
	struct fgc_id id = {};
	struct bpf_sock *sk;
	int counted, r;
	__u32 tlen, k = 0;

	if (bpf_skb_load_bytes(ctx, off, &s, sizeof(s)))
		return FGC_WALK_FAILED;
	ctl = fgc_ctl_get();
	want = bpf_map_lookup_elem(&fgc_scratch, &k);
	if (!ctl || !want)
		return FGC_WALK_FAILED;
	caps = fgc_caps_get(ctl);
	if (!caps)
		return FGC_WALK_FAILED;
	/* the tuple of a packet from the peer: source = remote */
	if (s.family == 4) {
		t.ipv4.saddr = s.raddr[0];
		t.ipv4.daddr = s.laddr[0];
		t.ipv4.sport = s.rport;
		t.ipv4.dport = s.lport;
		tlen = sizeof(t.ipv4);
		id.addr[0] = s.raddr[0];
	} else {
		__builtin_memcpy(t.ipv6.saddr, s.raddr, 16);
		__builtin_memcpy(t.ipv6.daddr, s.laddr, 16);
		t.ipv6.sport = s.rport;
		t.ipv6.dport = s.lport;
		tlen = sizeof(t.ipv6);
		__builtin_memcpy(id.addr, s.raddr, 16);
	}
	id.family = s.family;
	id.lport = bpf_ntohs(s.lport);
	id.rport = bpf_ntohs(s.rport);
	sk = bpf_sk_lookup_tcp(ctx, &t, tlen, BPF_F_CURRENT_NETNS, 0);
	if (!sk) {
		fgc_ev(FGC_EV_GONE, 1);
		return FGC_WALK_GONE;
	}
	counted = fg_conn_counted(sk->state) && sk->dst_port == s.rport;
	want->n = 0;
	if (counted)
		fgc_keys(caps, &id, want);
	m = bpf_sk_storage_get(&fgc_mark, sk, 0, want->n ? BPF_SK_STORAGE_GET_F_CREATE : 0);
	if (!m) {
		bpf_sk_release(sk);
		if (want->n) {
			fgc_ev(FGC_EV_NO_STORAGE, 1);
			return FGC_WALK_FAILED;
		}
		if (counted)
			return FGC_WALK_NOCAP;
		fgc_ev(FGC_EV_GONE, 1); /* closed: its listener, or a socket in another state */
		return FGC_WALK_GONE;
	}
	r = fgc_walk_mark(m, want, counted, ctl->epoch, fg_conn_hsid(id.addr, id.rport));
	bpf_sk_release(sk);
	return r;
}

/* A batch of dumped sockets (include/fg_conn.h, struct fg_conn_batch):
 * each one walked, its verdict written back. */
SEC("tc")
int fgc_swalk(struct __sk_buff *ctx)
{
	struct fg_conn_batch b;
	__u32 i, off;
	__u8 v;

	if (bpf_skb_load_bytes(ctx, 0, &b, sizeof(b)))
		return 2; /* TC_ACT_SHOT: a malformed frame */
	for (i = 0; i < FG_CONN_BATCH; i++) {
		if (i >= b.n)
			break;
		off = sizeof(b) + i * sizeof(struct fg_conn_walk_sock);
		v = (__u8)fgc_swalk_one(ctx, off);
		bpf_skb_store_bytes(
			ctx, off + __builtin_offsetof(struct fg_conn_walk_sock, verdict), &v, 1, 0);
	}
	return 0;
}

/* One key of a sweep batch: the half not current reset, slots cleared;
 * zero and found written back. */
__noinline int fgc_fix_one(struct fg_conn_fix *f, __u64 now_ns, __u32 h)
{
	struct fg_conn_key key;
	struct fg_conn_val *v;
	__s64 fixed = 0;
	int live;

	if (!f)
		return 0;
	key = f->key;
	v = bpf_map_lookup_elem(&fgc_count, &key);
	f->found = v != NULL;
	f->zero = 0;
	f->fixed = 0;
	if (!v)
		return 0;
	live = fgc_sweep_val(v, h, now_ns, &fixed);
	f->fixed = (__s32)fixed;
	f->zero = !live && v->est == FG_CONN_EST_ZERO;
	return 0;
}

/* The sock_ops way's sweep: a batch of fgc_count keys (struct
 * fg_conn_batch, then struct fg_conn_fix entries). */
SEC("tc")
int fgc_fix(struct __sk_buff *ctx)
{
	struct fg_conn_batch b;
	struct fg_conn_ctl *ctl;
	struct fg_conn_fix f;
	__u32 i, off, h;

	if (bpf_skb_load_bytes(ctx, 0, &b, sizeof(b)))
		return 2;
	ctl = fgc_ctl_get();
	if (!ctl)
		return 2;
	h = (ctl->epoch + 1) & 1;
	for (i = 0; i < FG_CONN_BATCH; i++) {
		if (i >= b.n)
			break;
		off = sizeof(b) + i * sizeof(f);
		if (bpf_skb_load_bytes(ctx, off, &f, sizeof(f)))
			return 2;
		fgc_fix_one(&f, b.now_ns, h);
		bpf_skb_store_bytes(ctx, off, &f, sizeof(f), 0);
	}
	return 0;
}

/* ---- test entry -------------------------------------------------------------- */

/* The frame is a struct fg_conn_test; the answer is written into its
 * verdict field. */
SEC("xdp")
int fgc_test(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct fg_conn_test *t = data;
	struct fg_conn_key k;
	__u32 hsid;

	if ((void *)(t + 1) > end)
		return XDP_ABORTED;
	k = t->key;
	hsid = fg_conn_hsid(t->saddr, t->sport);
	if (t->op == FGC_TEST_NOP) {
		t->verdict = hsid & 1; /* the test run's own cost, for comparison */
	} else if (t->op == FGC_TEST_READ) {
		t->verdict = fg_conn_at_cap(&k, hsid, t->cap, t->now_ns);
	} else if (t->op == FGC_TEST_BURST) {
		/* every t->sport runs move on to a new key (k.addr[3] = group),
		 * each run a new handshake (hsid = run number) */
		__u64 seq = __sync_fetch_and_add(&test_seq, 1);
		__u32 g = (__u32)(seq / (t->sport ? t->sport : 1)) & (FGC_TEST_GROUPS - 1);
		int v;

		k.addr[3] = g;
		v = fg_conn_admit(&k, (__u32)seq, t->cap, t->now_ns, t->ttl_ns);
		if (v == FG_CONN_ADMIT)
			__sync_fetch_and_add(&test_won[bpf_get_smp_processor_id() & 1][g], 1);
		/* clang 19 knows the verdict's range and drops a mask; the
		 * verifier does not (a global function's result) */
		asm volatile("" : "+r"(v));
		__sync_fetch_and_add(&test_verdicts[v & 7], 1);
	} else {
		t->verdict = fg_conn_admit(&k, hsid, t->cap, t->now_ns, t->ttl_ns);
	}
	return XDP_PASS;
}
