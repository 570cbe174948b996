/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A packet's verdict on its way to fg_exit (struct fg_verd), the modes in
 * force (shadow, global or per rule) and the one verdict setter.
 */
#ifndef FG_LIB_VERDICT_BPF_H
#define FG_LIB_VERDICT_BPF_H

struct fg_verd {
	struct fg_stats *st; /* row's counters, once known */
	__u32 ev;	     /* bit per enum fg_event */
	__u16 row;
	__u8 out;     /* enum fg_outcome, set by fg_verdict_set only */
	__u8 verdict; /* XDP_PASS, XDP_DROP (XDP_TX: an answer), set by fg_verdict_set only */
};
_Static_assert(FG_EV_MAX <= 32, "fg_verd.ev has a bit per event");
/* narrow: 16 bytes, not 24, of fg_decide's frame (6.1's 512 B a call chain) */
_Static_assert(FG_OUT_MAX <= 256 && FG_ROW_GLOBAL < 65536 && XDP_REDIRECT < 256,
	       "fg_verd: an outcome and a verdict in a byte, a row in 16 bits");

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

/*
 * The one verdict setter: every stage that decides a packet's outcome
 * says it here, so that the shadow rule is written once. out is the
 * outcome in enforce; action what enforce does: XDP_PASS (out counts a
 * pass), XDP_DROP, or XDP_TX for a stage that answers from XDP (it writes
 * its answer into the frame only when this returns 1). A packet that
 * enforce would refuse is, in shadow, passed untouched and counted as
 * out's shadow twin (fg_out_shadow, include/floodgate.h). Returns 1 when
 * action is taken, 0 when shadow passed a refusal. out and action are
 * constants at every call: only the shadow test is left.
 */
static __always_inline int fg_verdict_set(struct fg_verd *v, __u32 out, __u32 action, int shadow)
{
	if (action == XDP_PASS) {
		v->out = out;
		return 1;
	}
	if (shadow) {
		/* the verdict stays XDP_PASS: a packet's first refusal is its last */
		v->out = fg_out_shadow(out);
		return 0;
	}
	v->out = out;
	v->verdict = action;
	return 1;
}

/* A drop (FG_OUT_DROP, or a refusal of its own kind), through the setter. */
static __always_inline int fg_refuse(struct fg_verd *v, __u32 out, int shadow)
{
	return fg_verdict_set(v, out, XDP_DROP, shadow);
}

/* An outcome that lets the packet through (allow, bypass, ...). */
static __always_inline void fg_let(struct fg_verd *v, __u32 out)
{
	fg_verdict_set(v, out, XDP_PASS, 0);
}

#endif /* FG_LIB_VERDICT_BPF_H */
