/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Swapping floodgate's running XDP program for a second instance of it, on
 * every interface, while the first keeps enforcing (issue 21: a reload
 * that adds syn_auth loads the steps; issue 25 wants the same swap). The
 * second instance is opened from the same ELF with the first one's
 * .rodata, then edited (a load-time switch) and loaded over every map of
 * the first (bpf_map__reuse_fd): buckets, counters, switches and pins are
 * the same objects, so `floodgate status`, detach, the kill switch, shadow
 * and an adopting restart see one filter before, during and after.
 *
 * Per interface, by the way it is attached (attach.h):
 *   exclusive bpf_link   bpf_link_update with BPF_F_REPLACE against the old
 *                        program: atomic; the pinned link (link_<ifname>)
 *                        now runs the new one, which is what an adopting
 *                        restart finds there;
 *   libxdp, alone        netlink with XDP_FLAGS_REPLACE and the old
 *                        program's fd: atomic, fails if it changed;
 *   libxdp dispatcher    fg_xdp_adopt: libxdp (1.3.1 to 1.6) has no
 *                        single-component replace, so the new copy joins and
 *                        the old one leaves, two atomic dispatcher swaps: no
 *                        moment without floodgate, both run meanwhile
 *                        (docs/libxdp.md, "adoption").
 * When one interface fails, those already swapped go back to the old
 * program the same way, and the running instance stays as it was.
 * Functions return 0 or -errno and never log; why says what failed.
 */
#ifndef FG_SWAP_H
#define FG_SWAP_H

#include <stdbool.h>
#include "attach/attach.h"

struct floodgate_bpf;

/* Edits the second instance between open and load: its rodata, or a map
 * given another fd (bpf_map__reuse_fd again: a larger table, issue 25). */
typedef int fg_swap_edit_fn(struct floodgate_bpf *nskel, void *arg, char *why);

/* What a swap did, for the caller's log and counters. */
struct fg_swap_res {
	int swapped;	     /* interfaces now running the new instance */
	int skipped;	     /* interfaces without the filter now (gone): attached anew later */
	int rolled_back;     /* after a failure: interfaces put back to the old program */
	int rollback_failed; /* ... and those that could not be (they run the new one) */
	bool load_failed;    /* the new instance did not load: nothing was touched */
	__u32 new_id;	     /* the new program's id (0 in a dispatcher: per interface) */
	char failed_if[IF_NAMESIZE]; /* the interface whose replace failed */
};

struct fg_swap_opts {
	fg_swap_edit_fn *edit; /* required */
	void *arg;
	/* a test's way to make the replace on this interface fail after the
	 * ones before it succeeded (FLOODGATE_TEST_SWAP_FAIL, mod_synauth.c) */
	const char *fail_at;
};

/*
 * *skel (loaded, running on ifs as ac says) is replaced by a second
 * instance (opts->edit applied) on every interface of ifs that has the
 * filter now. On success *skel is the new instance (the old one is
 * destroyed; its program is unloaded once nothing runs it), ac->kept_fd
 * is closed (the kept program is not the one to attach again), each
 * interface's prog_id / dispatcher_id is the new one's, and 0. On failure
 * *skel, ac and ifs are as they were, every interface runs what it ran
 * (res->rollback_failed counts those that could not be put back), res
 * says what happened and why why.
 */
int fg_swap_program(struct floodgate_bpf **skel, struct fg_iface *ifs, int n,
		    struct fg_attach_conf *ac, const struct fg_swap_opts *opts,
		    struct fg_swap_res *res, char *why);

#endif /* FG_SWAP_H */
