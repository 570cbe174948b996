/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The concurrency cap of a rule, for its TCP SYNs (docs/concurrency.md). */
#ifndef FG_LIB_CAP_BPF_H
#define FG_LIB_CAP_BPF_H

/*
 * The concurrency cap of a rule (docs/concurrency.md), for a TCP SYN
 * without ACK that everything else admitted, so that a SYN the rate limit
 * drops never takes a place: under the cap it claims a pending place (a
 * retransmit keeps its own); at the cap it is refused, and that path
 * writes nothing. Shadow makes the same call and passes what it would
 * refuse. Non-SYN packets are never checked.
 */
static __always_inline void fg_cap(const struct fg_rule *r, const struct fg_pkt *p,
				   struct fg_verd *v, int shadow, __u64 now)
{
	struct fg_conn_key k;
	struct fg_conn_val *cv;
	__s64 est;
	int rc;

	if (p->proto != FG_IPPROTO_TCP || (p->tcp_flags & (FG_TCP_SYN | FG_TCP_ACK)) != FG_TCP_SYN)
		return;
	fg_conn_key_make(&k, p->family, p->saddr, r->mask4, r->mask6, r->id, r->gen);
	cv = fg_conn_find(&k, &est);
	/* over its established count: refused before the clock is read */
	rc = est >= (__s64)r->conn_cap ?
		     FG_CONN_AT_CAP :
		     fg_conn_admit_at(&k, cv, est, fg_conn_hsid(p->saddr, p->sport), r->conn_cap,
				      now, (__u64)r->conn_ttl_ms * 1000000);
	if (rc == FG_CONN_ADMIT || rc == FG_CONN_RETX)
		return;
	if (rc == FG_CONN_AT_CAP) {
		if (!fg_refuse(v, FG_OUT_CAP, shadow))
			v->ev |= 1u << FG_EV_CAP_SHADOW; /* the same count as cap_shadow */
		return;
	}
	if (rc == FG_CONN_NOMEM) {
		v->ev |= 1u << FG_EV_CAP_NOMEM;
		if (r->on_full == FG_FULL_CLOSED)
			fg_refuse(v, FG_OUT_DROP, shadow);
		return;
	}
	v->ev |= 1u << (rc == FG_CONN_NOSLOT ? FG_EV_CAP_NOSLOT : FG_EV_CAP_CONTENDED);
	fg_refuse(v, FG_OUT_DROP, shadow);
}

#endif /* FG_LIB_CAP_BPF_H */
