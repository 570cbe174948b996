/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The packet's parse (fg_parse.h), with the IPv6 extension header walk verified once. */
#ifndef FG_LIB_PARSE_BPF_H
#define FG_LIB_PARSE_BPF_H

/*
 * fg_parse_ext6 as a global function: the walk's paths (a state each for
 * the verifier) are checked once, on their own, not once per VLAN depth
 * and path of the caller: 6.18 processed ~100k instructions in the walk
 * inline, a third of the program's count. Only a packet with extension
 * headers pays the call.
 */
__noinline int fg_parse_ext6_at(struct xdp_md *ctx, __u32 off, __u32 plen, __u32 nh,
				struct fg_pkt *p)
{
	struct fg_ext6 x = { .off = off, .plen = plen, .nh = nh };

	if (!p)
		return FG_P_MALFORMED;
	return fg_parse_ext6((const __u8 *)(long)ctx->data, (const __u8 *)(long)ctx->data_end, &x,
			     p);
}

/* fg_parse for the program: fills *p, returns FG_P_IP, FG_P_NONIP or FG_P_MALFORMED. */
static __always_inline int fg_parse_frame(struct xdp_md *ctx, __u64 len, struct fg_pkt *p)
{
	struct fg_ext6 x = {};
	int rc = fg_parse_fixed((void *)(long)ctx->data, (void *)(long)ctx->data_end, len, p, &x);

	if (rc == FG_P_EXT6)
		rc = fg_parse_ext6_at(ctx, x.off, x.plen, x.nh, p);
	return rc;
}

#endif /* FG_LIB_PARSE_BPF_H */
