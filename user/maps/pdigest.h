/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What the pinned policy is (issue 25): an adopting start whose file
 * compiles to exactly what the pin dir holds need not rewrite it (a million
 * prefixes took most of two seconds to read back, delete and write again).
 *
 * After every successful apply floodgated writes $FLOODGATE_RUN_DIR
 * /policy-PIN.state: a digest of the compiled config it applied (the
 * policy as compiled, the rules as written, the flattened prefixes, the
 * mode, max_sources, the admission limit) and of this very executable,
 * with the state that apply left: the active slot, its policy version and
 * the id of every pinned map. Before any apply writes, the file goes. An
 * adoption takes the pinned policy as equal only if all of it holds and,
 * read back, the active fg_policy is byte for byte what an apply of the
 * file would write and fg_names holds exactly its rules: a crash mid-apply
 * (no file), another build or an older daemon's reload (digest, version),
 * a pin dir made again or a map re-pinned (ids), fg_policy or fg_names
 * edited by hand all rewrite. The prefix tables themselves (fg_pfx4/6,
 * fg_dir4, fg_blk4) are vouched for by the digest and their map ids only:
 * an entry changed by hand (bpftool) is not seen; FLOODGATE_ADOPT_RELOAD=1
 * or a reload rewrites them.
 */
#ifndef FG_PDIGEST_H
#define FG_PDIGEST_H

#include <linux/types.h>

struct fg_maps;
struct fg_config;

struct fg_pdigest {
	__u64 h[2];
};

/* The digest of cfg as compiled (before an apply assigns ids), and of this
 * executable; -errno if /proc/self/exe cannot be read (then never equal). */
int fg_pdigest_of(const struct fg_config *cfg, struct fg_pdigest *d);

/* After a successful apply of what d digests: the file, with the pinned
 * state as it is now and dir4 (the IPv4 lists' four figures, metrics). */
int fg_pdigest_save(struct fg_maps *m, const char *pin_dir, const struct fg_pdigest *d,
		    const __u32 dir4[4]);

/* Before an apply writes anything (or when the pin dir goes). */
void fg_pdigest_forget(const char *pin_dir);

/*
 * Does the pin dir hold exactly what cfg compiles to (d its digest)? 0:
 * yes, and cfg->pol is then what an apply would have left in it (ids,
 * gens, version, lists, admission: the active slot's policy), dir4 as
 * saved. Else -ESTALE (or -errno) with why saying what differs, cfg as it was.
 */
int fg_pdigest_check(struct fg_maps *m, const char *pin_dir, struct fg_config *cfg,
		     const struct fg_pdigest *d, __u32 dir4[4], char *why);

#endif /* FG_PDIGEST_H */
