/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A packet's verdict on its way to fg_exit (struct fg_verd), the modes in
 * force (shadow, global or per rule) and the setters of a refusal.
 */
#ifndef FG_LIB_VERDICT_BPF_H
#define FG_LIB_VERDICT_BPF_H

struct fg_verd {
	struct fg_stats *st; /* row's counters, once known */
	__u32 row;
	__u32 out;     /* enum fg_outcome */
	__u32 ev;      /* bit per enum fg_event */
	__u32 verdict; /* XDP_PASS / XDP_DROP */
};
_Static_assert(FG_EV_MAX <= 32, "fg_verd.ev has a bit per event");

/*
 * The modes in force (the rule is in include/floodgate.h, struct fg_ctl).
 * Both return a mode, compared with FG_MODE_SHADOW where it is used rather
 * than reduced to a 0/1 bit: the verifier then carries "not shadow" as an
 * unknown value and prunes the shadow paths against it (clang 14: 279k
 * instructions processed, 356k with a 0/1 bit, 416k with a branch here).
 *
 * Global: an operator override (1 or 2; the word is 0 unless one is set)
 * replaces the file's mode. Branch-free: one path for the verifier.
 */
static __always_inline __u32 fg_global_mode(const struct fg_ctl *ctl)
{
	__u32 ovr = FG_READ_ONCE(ctl->mode_ovr);
	__u32 mode = FG_READ_ONCE(ctl->mode);

	/* ovr 0: mode (the mask (0 - 1) >> 31 is 1); 1: enforce; 2: shadow */
	return (ovr >> 1) | (mode & ((ovr - 1) >> 31));
}

/* A rule: the operator's override where its bit is set (the bitmaps, past
 * the first cache line, are read only while rule_ovr_n says some bit may
 * be; the shadow bit only then; set before shadow, the CLI stores them in
 * the other order), else the rule's mode from the file. */
static __always_inline __u32 fg_rule_mode(const struct fg_ctl *ctl, const struct fg_rule *r,
					  __u32 id)
{
	__u32 w = (id >> 6) & (FG_OVR_WORDS - 1), b = id & 63;

	if (FG_READ_ONCE(ctl->rule_ovr_n) && (FG_READ_ONCE(ctl->rule_ovr_set[w]) >> b) & 1)
		return (FG_READ_ONCE(ctl->rule_ovr_shadow[w]) >> b) & 1;
	return r->mode;
}

/* A refusal counted as out and dropped; in shadow counted as out_shadow
 * and passed. */
static __always_inline void fg_refuse(struct fg_verd *v, int shadow, __u32 out, __u32 out_shadow)
{
	if (shadow) {
		v->out = out_shadow;
		v->verdict = XDP_PASS;
	} else {
		v->out = out;
		v->verdict = XDP_DROP;
	}
}

/* A drop: in shadow it is counted as would-drop and passed. */
static __always_inline void fg_drop(struct fg_verd *v, int shadow)
{
	fg_refuse(v, shadow, FG_OUT_DROP, FG_OUT_SHADOW);
}

/* A shed (the host is short of capacity, not the source over its quota):
 * in shadow counted as would-shed and passed. */
static __always_inline void fg_shed_verdict(struct fg_verd *v, int shadow)
{
	fg_refuse(v, shadow, FG_OUT_SHED, FG_OUT_SHED_SHADOW);
}

#endif /* FG_LIB_VERDICT_BPF_H */
