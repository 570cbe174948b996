// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Attaching floodgate's XDP program through libxdp's dispatcher or as an
 * exclusive bpf_link; the contract is in xdpattach.h, the measurements
 * behind the choices in docs/libxdp.md.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <net/if.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "attach/xdpattach.h"
#include "lib/sysutil.h"

#define NAME_MAX_KERNEL 15 /* BPF_OBJ_NAME_LEN - 1: what the kernel keeps of a name */
#define MAX_PROG_MAPS	64

__attribute__((format(printf, 3, 4))) static int fail(char *why, int err, const char *fmt, ...)
{
	va_list ap;

	if (why) {
		va_start(ap, fmt);
		vsnprintf(why, FG_WHY_LEN, fmt, ap);
		va_end(ap);
	}
	return err;
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

const char *fg_xdp_mode_str(enum fg_xdp_mode m)
{
	return m == FG_XDP_NATIVE ? "native" : m == FG_XDP_SKB ? "generic" : "auto";
}

static __u32 mode_flags(enum fg_xdp_mode m)
{
	return m == FG_XDP_NATIVE ? XDP_FLAGS_DRV_MODE : m == FG_XDP_SKB ? XDP_FLAGS_SKB_MODE : 0;
}

static enum xdp_attach_mode to_libxdp(enum fg_xdp_mode m)
{
	return m == FG_XDP_NATIVE ? XDP_MODE_NATIVE :
	       m == FG_XDP_SKB	  ? XDP_MODE_SKB :
				    XDP_MODE_UNSPEC;
}

static enum fg_xdp_mode from_libxdp(enum xdp_attach_mode m)
{
	return m == XDP_MODE_SKB ? FG_XDP_SKB : FG_XDP_NATIVE;
}

static bool name_is(const char *name, const char *ours)
{
	return ours && *ours && !strncmp(name, ours, NAME_MAX_KERNEL);
}

/* The XDP bpf_link that holds prog_id on ifindex, as a new fd; -ENOENT when
 * the program is attached by netlink. Matching the program id (global)
 * as well as the ifindex (per network namespace) keeps another namespace's
 * link with the same ifindex out. */
static int find_xdp_link(int ifindex, __u32 prog_id)
{
	struct bpf_link_info info;
	__u32 id = 0;
	int fd;

	while ((fd = fg_link_next(&id, &info)) >= 0) {
		if (info.type == BPF_LINK_TYPE_XDP && info.prog_id == prog_id &&
		    (int)info.xdp.ifindex == ifindex)
			return fd;
		close(fd);
	}
	return -ENOENT;
}

int fg_link_next(__u32 *id, struct bpf_link_info *li)
{
	while (!bpf_link_get_next_id(*id, id)) {
		__u32 len = sizeof(*li);
		int fd = bpf_link_get_fd_by_id(*id);

		if (fd < 0)
			continue; /* gone meanwhile */
		memset(li, 0, sizeof(*li));
		if (!bpf_obj_get_info_by_fd(fd, li, &len))
			return fd;
		close(fd);
	}
	return -ENOENT;
}

static __u32 chain_bits(const struct xdp_program *p)
{
	__u32 bits = 0;

	for (unsigned int a = XDP_ABORTED; a <= XDP_REDIRECT; a++)
		if (xdp_program__chain_call_enabled(p, a))
			bits |= 1u << a;
	return bits;
}

static void add_entry(struct fg_xdp_list *l, const struct xdp_program *p, bool in_dispatcher,
		      const char *ours)
{
	struct fg_xdp_entry *e;

	if (l->n >= FG_XDP_MAX_LIST)
		return;
	e = &l->e[l->n++];
	e->id = xdp_program__id(p);
	snprintf(e->name, sizeof(e->name), "%s", xdp_program__name(p));
	e->run_prio = in_dispatcher ? xdp_program__run_prio(p) : FG_XDP_PRIO_NONE;
	e->chain_actions = in_dispatcher ? chain_bits(p) : 0;
	e->ours = name_is(e->name, ours);
}

int fg_xdp_list(int ifindex, const char *ours_name, struct fg_xdp_list *l, char *why)
{
	char ifname[IF_NAMESIZE];
	struct xdp_multiprog *mp;
	struct xdp_program *p;
	long err;
	int lfd;

	memset(l, 0, sizeof(*l));
	if (ifindex <= 0 || !if_indextoname((unsigned int)ifindex, ifname))
		return fail(why, -ENODEV, "no interface with ifindex %d in this network namespace",
			    ifindex);
	mp = xdp_multiprog__get_from_ifindex(ifindex);
	err = libxdp_get_error(mp);
	if (err == -ENOENT)
		return 0; /* nothing attached */
	if (err)
		return fail(why, (int)err, "ifindex %d: cannot read its XDP programs: %s", ifindex,
			    strerror((int)-err));
	if (!xdp_multiprog__main_prog(mp)) { /* only an offloaded program */
		xdp_multiprog__close(mp);
		return 0;
	}
	l->mode = from_libxdp(xdp_multiprog__attach_mode(mp));
	if (xdp_multiprog__is_legacy(mp)) {
		add_entry(l, xdp_multiprog__main_prog(mp), false, ours_name);
	} else {
		l->dispatcher_id = xdp_program__id(xdp_multiprog__main_prog(mp));
		l->frags = xdp_multiprog__xdp_frags_support(mp);
		for (p = xdp_multiprog__next_prog(NULL, mp); p; p = xdp_multiprog__next_prog(p, mp))
			add_entry(l, p, true, ours_name);
	}
	lfd = find_xdp_link(ifindex, xdp_program__id(xdp_multiprog__main_prog(mp)));
	l->via_link = lfd >= 0;
	if (lfd >= 0)
		close(lfd);
	xdp_multiprog__close(mp);
	return 0;
}

static const struct fg_xdp_entry *find_ours(const struct fg_xdp_list *l)
{
	for (int i = 0; i < l->n; i++)
		if (l->e[i].ours)
			return &l->e[i];
	return NULL;
}

const struct fg_xdp_entry *fg_xdp_list_ours(const struct fg_xdp_list *l)
{
	return find_ours(l);
}

/* ---- the dispatcher probe ------------------------------------------------ */

/* What libxdp checks before it builds a dispatcher (its compat check is not
 * exported in 1.3.1): load xdp-dispatcher.o's xdp_pass, then the same
 * function as an freplace extension of it, and attach that. */
int fg_xdp_probe_dispatcher(char *why)
{
	DECLARE_LIBXDP_OPTS(xdp_program_opts, to, .find_filename = "xdp-dispatcher.o",
			    .prog_name = "xdp_pass");
	DECLARE_LIBXDP_OPTS(xdp_program_opts, eo, .find_filename = "xdp-dispatcher.o",
			    .prog_name = "xdp_pass");
	struct xdp_program *tgt = NULL, *ext = NULL;
	struct bpf_object *tobj, *eobj;
	struct bpf_program *tp, *ep, *q;
	struct bpf_link *link;
	int err;

	/* a refusal is the answer here, not a warning: keep libbpf and libxdp quiet */
	libbpf_print_fn_t bpf_print = libbpf_set_print(NULL);
	libxdp_print_fn_t xdp_print = libxdp_set_print(NULL);

	tgt = xdp_program__create(&to);
	ext = tgt ? xdp_program__create(&eo) : NULL;
	if (!tgt || !ext) {
		err = -errno;
		err = fail(why, err ? err : -ENOENT, "cannot open libxdp's xdp-dispatcher.o: %s",
			   strerror(err ? -err : ENOENT));
		goto out;
	}
	tobj = xdp_program__bpf_obj(tgt);
	eobj = xdp_program__bpf_obj(ext);
	tp = bpf_object__find_program_by_name(tobj, "xdp_pass");
	ep = bpf_object__find_program_by_name(eobj, "xdp_pass");
	if (!tp || !ep) {
		err = fail(why, -ENOENT, "xdp-dispatcher.o has no xdp_pass program");
		goto out;
	}
	bpf_object__for_each_program(q, tobj)
		bpf_program__set_autoload(q, q == tp);
	bpf_object__for_each_program(q, eobj)
		bpf_program__set_autoload(q, q == ep);
	err = bpf_object__load(tobj);
	if (err) {
		err = fail(why, -EOPNOTSUPP, "cannot load libxdp's test program: %s",
			   strerror(-err));
		goto out;
	}
	bpf_program__set_type(ep, BPF_PROG_TYPE_EXT);
	bpf_program__set_expected_attach_type(ep, 0);
	err = bpf_program__set_attach_target(ep, bpf_program__fd(tp), "xdp_pass");
	if (!err)
		err = bpf_object__load(eobj);
	if (err) {
		err = fail(why, -EOPNOTSUPP,
			   "this kernel refuses freplace (BPF_PROG_TYPE_EXT) programs: %s; "
			   "libxdp cannot build a dispatcher here",
			   strerror(-err));
		goto out;
	}
	link = bpf_program__attach_freplace(ep, bpf_program__fd(tp), "xdp_pass");
	if (!link) {
		err = -errno;
		err = fail(why, -EOPNOTSUPP,
			   "this kernel refuses to attach freplace programs: %s; "
			   "libxdp cannot build a dispatcher here",
			   strerror(-err));
		goto out;
	}
	bpf_link__destroy(link);
	err = 0;
out:
	xdp_program__close(ext);
	xdp_program__close(tgt);
	libxdp_set_print(xdp_print);
	libbpf_set_print(bpf_print);
	return err;
}

/* ---- libxdp: a component sharing the loaded object's maps --------------- */

/* A fresh, unloaded copy of p's program from its ELF bytes, every map
 * reusing the loaded object's map (internal ones included, so rodata is
 * the caller's). libxdp loads it: as EXT into a dispatcher, or as XDP when
 * it falls back to a single program. */
static int open_component(const struct fg_xdp_prog *p, const struct fg_xdp_opts *o,
			  struct bpf_object **objp, struct xdp_program **xpp, char *why)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = bpf_object__name(p->obj));
	const char *name = bpf_program__name(p->prog);
	struct bpf_program *cp, *q;
	struct xdp_program *xp;
	struct bpf_object *obj;
	struct bpf_map *m;
	int err;

	obj = bpf_object__open_mem(p->elf, p->elf_sz, &oo);
	if (!obj) {
		err = errno ? -errno : -EINVAL;
		return fail(why, err, "cannot open a copy of %s: %s", name, strerror(-err));
	}
	bpf_object__for_each_map(m, obj) {
		struct bpf_map *src = bpf_object__find_map_by_name(p->obj, bpf_map__name(m));

		if (!src || bpf_map__fd(src) < 0) {
			err = fail(why, -ENOENT, "map %s of %s is not loaded", bpf_map__name(m),
				   name);
			goto err;
		}
		err = bpf_map__reuse_fd(m, bpf_map__fd(src));
		if (err) {
			fail(why, err, "map %s: %s", bpf_map__name(m), strerror(-err));
			goto err;
		}
	}
	cp = bpf_object__find_program_by_name(obj, name);
	if (!cp) {
		err = fail(why, -ENOENT, "no program %s in the ELF given", name);
		goto err;
	}
	bpf_object__for_each_program(q, obj)
		bpf_program__set_autoload(q, q == cp);
	bpf_program__set_flags(cp, bpf_program__flags(p->prog)); /* BPF_F_XDP_HAS_FRAGS */

	DECLARE_LIBXDP_OPTS(xdp_program_opts, xo, .obj = obj, .prog_name = name);
	xp = xdp_program__create(&xo);
	if (!xp) {
		err = errno ? -errno : -EINVAL;
		fail(why, err, "libxdp cannot use %s: %s", name, strerror(-err));
		goto err;
	}
	err = xdp_program__set_run_prio(xp, o->run_prio);
	for (unsigned int a = XDP_ABORTED; !err && a <= XDP_REDIRECT; a++) {
		__u32 want = o->chain_actions ? o->chain_actions : FG_XDP_CHAIN_PASS;

		err = xdp_program__set_chain_call_enabled(xp, a, want & (1u << a));
	}
	if (err) {
		xdp_program__close(xp);
		fail(why, err, "run priority %u / chain actions %#x: %s", o->run_prio,
		     o->chain_actions, strerror(-err));
		goto err;
	}
	*objp = obj;
	*xpp = xp;
	return 0;
err:
	bpf_object__close(obj);
	return err;
}

static void close_component(struct bpf_object *obj, struct xdp_program *xp)
{
	xdp_program__close(xp); /* does not close an object it was given */
	bpf_object__close(obj);
}

/*
 * libxdp checks for dispatcher support by loading its own xdp_pass (from
 * xdp-dispatcher.o) each attach; where the kernel refuses it, libbpf warns
 * about that program, with a misleading "try raising 'ulimit -l'", before
 * libxdp falls back. Those lines are dropped while libxdp attaches; the
 * rest (floodgate's copy included) go where they went.
 */
static libbpf_print_fn_t attach_print_next;

static int attach_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[512];
	va_list cp;

	va_copy(cp, ap);
	vsnprintf(line, sizeof(line), fmt, cp);
	va_end(cp);
	if (strstr(line, "'xdp_pass'") || strstr(line, "xdp-dispatcher.o") ||
	    strstr(line, "ulimit -l"))
		return 0;
	return attach_print_next ? attach_print_next(level, fmt, ap) : 0;
}

/* One libxdp attach in one mode: a fresh copy each time, because a failed
 * attempt may leave the copy loaded (as EXT or XDP). */
static int libxdp_attach_once(const struct fg_xdp_prog *p, int ifindex, const struct fg_xdp_opts *o,
			      enum fg_xdp_mode mode, char *why)
{
	struct xdp_program *xp = NULL;
	struct bpf_object *obj = NULL;
	int err;

	err = open_component(p, o, &obj, &xp, why);
	if (err)
		return err;
	attach_print_next = libbpf_set_print(attach_print);
	err = xdp_program__attach(xp, ifindex, to_libxdp(mode), 0);
	libbpf_set_print(attach_print_next);
	if (err)
		fail(why, err, "ifindex %d: libxdp attach (%s) failed: %s", ifindex,
		     fg_xdp_mode_str(mode), strerror(-err));
	close_component(obj, xp); /* pins (dispatcher) or netlink (alone) hold it now */
	return err;
}

/* Why libxdp cannot add us beside the program that is there, for the reason. */
static int refuse_legacy(int ifindex, const struct fg_xdp_list *cur, char *why)
{
	char probe[FG_WHY_LEN] = "";

	if (fg_xdp_probe_dispatcher(probe))
		return fail(why, -EBUSY,
			    "ifindex %d has XDP program %s (id %u, %s) attached directly, and %s; "
			    "floodgate will not replace it: remove it, or run floodgate alone",
			    ifindex, cur->e[0].name, cur->e[0].id, fg_xdp_mode_str(cur->mode),
			    probe);
	return fail(
		why, -EBUSY,
		"ifindex %d has XDP program %s (id %u, %s) attached without libxdp's dispatcher; "
		"floodgate will not replace it: load it through libxdp (xdp-loader, or its own "
		"tool's libxdp mode) and start floodgate again",
		ifindex, cur->e[0].name, cur->e[0].id, fg_xdp_mode_str(cur->mode));
}

/* Join (or create) the dispatcher on ifindex; cur is what is there now. */
static int libxdp_join(const struct fg_xdp_prog *p, int ifindex, const struct fg_xdp_opts *o,
		       const struct fg_xdp_list *cur, char *why)
{
	int err;

	if (cur->n && !cur->dispatcher_id)
		return refuse_legacy(ifindex, cur, why);
	if (cur->n && cur->via_link)
		return fail(why, -EBUSY,
			    "ifindex %d: its dispatcher is held by a bpf_link, "
			    "which libxdp 1.3.1 cannot replace",
			    ifindex);
	if (cur->n && o->mode != FG_XDP_AUTO && o->mode != cur->mode)
		return fail(
			why, -EBUSY,
			"ifindex %d: its dispatcher runs in %s mode and floodgate asked for %s; "
			"one device runs one mode",
			ifindex, fg_xdp_mode_str(cur->mode), fg_xdp_mode_str(o->mode));
	if (cur->n) /* AUTO joins the mode that is there */
		return libxdp_attach_once(p, ifindex, o, cur->mode, why);
	if (o->mode != FG_XDP_AUTO)
		return libxdp_attach_once(p, ifindex, o, o->mode, why);
	err = libxdp_attach_once(p, ifindex, o, FG_XDP_NATIVE, why);
	if (err)
		err = libxdp_attach_once(p, ifindex, o, FG_XDP_SKB, why);
	return err;
}

/* out from what is on the device now, with ours in it. */
static int fill_att(int ifindex, const char *ours, enum fg_xdp_how how, struct fg_xdp_att *out,
		    char *why)
{
	struct fg_xdp_list l;
	const struct fg_xdp_entry *e;
	int err = fg_xdp_list(ifindex, ours, &l, why);

	if (err)
		return err;
	e = find_ours(&l);
	if (!e)
		return fail(why, -ENOENT, "ifindex %d: %s is not attached after all", ifindex,
			    ours);
	out->ifindex = ifindex;
	out->how = how;
	out->mode = l.mode;
	out->dispatcher = l.dispatcher_id != 0;
	out->dispatcher_id = l.dispatcher_id;
	out->prog_id = e->id;
	return 0;
}

/* ---- exclusive: a bpf_link ---------------------------------------------- */

static __u32 prog_id_of(int prog_fd)
{
	struct bpf_prog_info info = {};
	__u32 ilen = sizeof(info);

	return bpf_obj_get_info_by_fd(prog_fd, &info, &ilen) ? 0 : info.id;
}

static int exclusive_attach(const struct fg_xdp_prog *p, int ifindex, const struct fg_xdp_opts *o,
			    const struct fg_xdp_list *cur, struct fg_xdp_att *out, char *why)
{
	static const enum fg_xdp_mode order[] = { FG_XDP_NATIVE, FG_XDP_SKB };
	int prog_fd = bpf_program__fd(p->prog), fd = -1, err = -EINVAL;

	if (cur->n)
		return fail(why, -EBUSY,
			    "ifindex %d already has XDP program %s (id %u, %s%s); exclusive attach "
			    "does not share a device: remove it, or use xdp_attach: libxdp",
			    ifindex, cur->e[0].name, cur->e[0].id, fg_xdp_mode_str(cur->mode),
			    cur->dispatcher_id ? ", in libxdp's dispatcher" : "");
	for (size_t i = 0; i < 2; i++) {
		if (o->mode != FG_XDP_AUTO && o->mode != order[i])
			continue;
		LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = mode_flags(order[i]));
		fd = bpf_link_create(prog_fd, ifindex, BPF_XDP, &lo);
		if (fd >= 0) {
			out->mode = order[i];
			break;
		}
		err = -errno;
	}
	if (fd < 0)
		return fail(why, err, "ifindex %d: cannot attach XDP (%s): %s%s", ifindex,
			    fg_xdp_mode_str(o->mode), strerror(-err),
			    err == -EBUSY || err == -EEXIST ?
				    " (a program was attached meanwhile)" :
				    "");
	if (o->link_pin && bpf_obj_pin(fd, o->link_pin)) {
		err = -errno;
		close(fd); /* detaches */
		return fail(why, err, "cannot pin the link at %s: %s", o->link_pin, strerror(-err));
	}
	out->ifindex = ifindex;
	out->how = FG_XDP_EXCLUSIVE;
	out->link_fd = fd;
	out->prog_id = prog_id_of(prog_fd);
	return 0;
}

/* ---- the public entry points -------------------------------------------- */

static void att_init(struct fg_xdp_att *out)
{
	memset(out, 0, sizeof(*out));
	out->link_fd = -1;
}

/* Through libxdp the object's maps suffice: libxdp loads its own copy
 * of the program (open_component), so the caller may leave the
 * program itself unloaded and have it verified once. */
static int check_prog(const struct fg_xdp_prog *p, const struct fg_xdp_opts *o, char *why)
{
	if (!p || !p->obj || !p->prog || !p->elf || !p->elf_sz)
		return fail(why, -EINVAL, "no program given");
	if (bpf_program__fd(p->prog) < 0 && (!o || o->how != FG_XDP_LIBXDP))
		return fail(why, -EINVAL, "%s is not loaded", bpf_program__name(p->prog));
	return 0;
}

static int check_opts(const struct fg_xdp_opts *o, char *why)
{
	if (o->how != FG_XDP_LIBXDP && o->how != FG_XDP_EXCLUSIVE)
		return fail(why, -EINVAL, "unknown attach method %d", (int)o->how);
	if (o->mode != FG_XDP_AUTO && o->mode != FG_XDP_NATIVE && o->mode != FG_XDP_SKB)
		return fail(why, -EINVAL, "unknown XDP mode %d", (int)o->mode);
	if (o->chain_actions & ~((1u << (XDP_REDIRECT + 1)) - 1))
		return fail(why, -EINVAL,
			    "chain actions %#x: only XDP_ABORTED..XDP_REDIRECT "
			    "(bits 0..4) exist",
			    o->chain_actions);
	return 0;
}

/* What attach and adopt check first: the program, the interface, the
 * options; then what the interface runs now, into *cur. */
static int attach_begin(const struct fg_xdp_prog *p, int ifindex, const struct fg_xdp_opts *o,
			struct fg_xdp_att *out, struct fg_xdp_list *cur, char *why)
{
	int err;

	att_init(out);
	err = check_prog(p, o, why);
	if (!err && ifindex <= 0)
		err = fail(why, -EINVAL, "no interface (ifindex %d)", ifindex);
	if (!err)
		err = check_opts(o, why);
	if (!err)
		err = fg_xdp_list(ifindex, bpf_program__name(p->prog), cur, why);
	return err;
}

int fg_xdp_attach(const struct fg_xdp_prog *p, int ifindex, const struct fg_xdp_opts *o,
		  struct fg_xdp_att *out, char *why)
{
	const char *ours;
	struct fg_xdp_list cur;
	int err;

	err = attach_begin(p, ifindex, o, out, &cur, why);
	if (err)
		return err;
	ours = bpf_program__name(p->prog);
	if (find_ours(&cur))
		return fail(why, -EEXIST, "ifindex %d already runs %s (id %u): adopt it", ifindex,
			    ours, find_ours(&cur)->id);
	if (o->how == FG_XDP_EXCLUSIVE)
		return exclusive_attach(p, ifindex, o, &cur, out, why);
	err = libxdp_join(p, ifindex, o, &cur, why);
	if (err)
		return err;
	return fill_att(ifindex, ours, FG_XDP_LIBXDP, out, why);
}

static int detach_component(int ifindex, const char *ours, char *why)
{
	struct xdp_program *mine[FG_XDP_MAX_LIST];
	struct xdp_multiprog *mp;
	struct xdp_program *p;
	size_t n = 0;
	long err;

	mp = xdp_multiprog__get_from_ifindex(ifindex);
	err = libxdp_get_error(mp);
	if (err)
		return fail(why, (int)err, "ifindex %d: %s", ifindex, strerror((int)-err));
	for (p = xdp_multiprog__next_prog(NULL, mp); p && n < FG_XDP_MAX_LIST;
	     p = xdp_multiprog__next_prog(p, mp))
		if (name_is(xdp_program__name(p), ours))
			mine[n++] = p;
	/* libxdp builds a dispatcher without them (or removes it if they were
	 * all) and swaps it in atomically; the others keep running */
	err = n ? xdp_program__detach_multi(mine, n, ifindex, xdp_multiprog__attach_mode(mp), 0) :
		  -ENOENT;
	xdp_multiprog__close(mp);
	if (err)
		return fail(why, (int)err, "ifindex %d: removing %s from the dispatcher: %s",
			    ifindex, ours, strerror((int)-err));
	return 0;
}

static int detach_single(int ifindex, const struct fg_xdp_list *cur, const char *link_pin,
			 char *why)
{
	int fd, err;

	fd = find_xdp_link(ifindex, cur->e[0].id);
	if (fd >= 0) {
		err = bpf_link_detach(fd) ? -errno : 0;
		close(fd);
		if (err)
			return fail(why, err, "ifindex %d: detaching the link: %s", ifindex,
				    strerror(-err));
		if (link_pin && unlink(link_pin) && errno != ENOENT)
			return fail(why, -errno, "detached, but cannot unpin %s: %s", link_pin,
				    strerror(errno));
		return 0;
	}
	fd = bpf_prog_get_fd_by_id(cur->e[0].id);
	if (fd < 0)
		return fail(why, -errno, "ifindex %d: program %u: %s", ifindex, cur->e[0].id,
			    strerror(errno));
	/* REPLACE with the expected fd: removes it only if it is still ours */
	LIBBPF_OPTS(bpf_xdp_attach_opts, ao, .old_prog_fd = fd);
	err = bpf_xdp_detach(ifindex, mode_flags(cur->mode) | XDP_FLAGS_REPLACE, &ao);
	close(fd);
	if (err)
		return fail(why, err, "ifindex %d: detaching %s: %s", ifindex, cur->e[0].name,
			    strerror(-err));
	return 0;
}

int fg_xdp_detach_ours(int ifindex, const char *ours_name, const char *link_pin, char *why)
{
	struct fg_xdp_list cur;
	int err;

	if (!ours_name || !*ours_name)
		return fail(why, -EINVAL, "no program name given");
	err = fg_xdp_list(ifindex, ours_name, &cur, why);
	if (err)
		return err;
	if (!find_ours(&cur))
		return fail(why, -ENOENT, "ifindex %d does not run %s", ifindex, ours_name);
	if (cur.dispatcher_id)
		return detach_component(ifindex, ours_name, why);
	return detach_single(ifindex, &cur, link_pin, why);
}

/* ---- adoption ------------------------------------------------------------ */

static bool is_rodata(const char *map_name)
{
	const char *dot = strrchr(map_name, '.');

	return dot && !strcmp(dot, ".rodata");
}

/* A map each loaded copy of the program has of its own, never pinned:
 * .bss and .data (every other map, fg_clk included, is pinned and shared).
 * Its contents are the running copy's; they say nothing of its maps.
 * fg_clk stays pinned, not named here: then every map a kept program runs
 * on is one the restarted daemon opened, with no list of exceptions to
 * keep in step with the object. (Named here, as in bfe21e5, it was
 * harmless: nothing in userspace reads it and it caches only what the
 * clock helper returned this jiffy. e2e_escalate's restart check that
 * failed then was drop-sampling aliasing, FG_DROP_SAMPLED in floodgate.h;
 * an exclusive attach, auto's choice where freplace is refused, never
 * keeps a program: adopt_link in attach.c swaps it into the link.) */
static bool is_own_state(const char *map_name)
{
	return strstr(map_name, ".bss") || strstr(map_name, ".data") ||
	       fg_map_prog_private(map_name);
}

bool fg_map_prog_private(const char *map_name)
{
	return !strcmp(map_name, "fg_sascr");
}

static int map_value_eq(int a_fd, int b_fd, __u32 value_size)
{
	char a[4096], b[4096];
	__u32 key = 0;

	if (value_size > sizeof(a))
		return 0;
	if (bpf_map_lookup_elem(a_fd, &key, a) || bpf_map_lookup_elem(b_fd, &key, b))
		return 0;
	return !memcmp(a, b, value_size);
}

/* Is program running_id the same code over the same maps as p's program,
 * with the same rodata? Then replacing it would change nothing. Maps of
 * is_own_state are the running copy's own (no policy or source state). */
static bool same_program(const struct fg_xdp_prog *p, __u32 running_id)
{
	__u32 rmaps[MAX_PROG_MAPS], pmaps[MAX_PROG_MAPS];
	struct bpf_prog_info ri = {}, pi = {};
	__u32 rlen = sizeof(ri), plen = sizeof(pi);
	int rfd, pfd = bpf_program__fd(p->prog);
	bool same = false;
	__u32 i, j;

	rfd = bpf_prog_get_fd_by_id(running_id);
	if (rfd < 0)
		return false;
	ri.nr_map_ids = MAX_PROG_MAPS;
	ri.map_ids = (__u64)(unsigned long)rmaps;
	pi.nr_map_ids = MAX_PROG_MAPS;
	pi.map_ids = (__u64)(unsigned long)pmaps;
	if (bpf_obj_get_info_by_fd(rfd, &ri, &rlen) || bpf_obj_get_info_by_fd(pfd, &pi, &plen) ||
	    ri.nr_map_ids > MAX_PROG_MAPS || pi.nr_map_ids > MAX_PROG_MAPS ||
	    memcmp(ri.tag, pi.tag, sizeof(ri.tag)))
		goto out;
	for (i = 0; i < ri.nr_map_ids; i++) {
		struct bpf_map_info mi = {};
		__u32 mlen = sizeof(mi);
		struct bpf_map *m;
		int mfd;

		for (j = 0; j < pi.nr_map_ids && pmaps[j] != rmaps[i]; j++)
			;
		if (j < pi.nr_map_ids)
			continue; /* the same map */
		mfd = bpf_map_get_fd_by_id(rmaps[i]);
		if (mfd < 0)
			goto out;
		if (bpf_obj_get_info_by_fd(mfd, &mi, &mlen)) {
			close(mfd);
			goto out;
		}
		if (is_own_state(mi.name)) {
			close(mfd);
			continue;
		}
		if (!is_rodata(mi.name)) {
			close(mfd);
			goto out; /* another map: not running on our maps */
		}
		bpf_object__for_each_map(m, p->obj)
			if (is_rodata(bpf_map__name(m)))
				break;
		if (!m || !map_value_eq(mfd, bpf_map__fd(m), mi.value_size)) {
			close(mfd);
			goto out;
		}
		close(mfd);
	}
	same = true;
out:
	close(rfd);
	return same;
}

/* Replace ours where it runs alone: atomically, by the link or by netlink. */
static int replace_single(const struct fg_xdp_prog *p, int ifindex, const struct fg_xdp_list *cur,
			  struct fg_xdp_att *out, char *why)
{
	int new_fd = bpf_program__fd(p->prog), old_fd, lfd, err;

	if (new_fd < 0) /* libxdp's copy only (check_prog): nothing to swap in alone */
		return fail(why, -EOPNOTSUPP,
			    "ifindex %d runs %s (id %u) alone, not in a dispatcher, and this "
			    "process loaded no program of its own to replace it with",
			    ifindex, cur->e[0].name, cur->e[0].id);
	old_fd = bpf_prog_get_fd_by_id(cur->e[0].id);
	if (old_fd < 0)
		return fail(why, -errno, "ifindex %d: program %u: %s", ifindex, cur->e[0].id,
			    strerror(errno));
	lfd = find_xdp_link(ifindex, cur->e[0].id);
	if (lfd >= 0) {
		LIBBPF_OPTS(bpf_link_update_opts, uo, .flags = BPF_F_REPLACE,
			    .old_prog_fd = old_fd);
		err = bpf_link_update(lfd, new_fd, &uo);
		if (err) {
			close(lfd);
			lfd = -1;
		}
		out->how = FG_XDP_EXCLUSIVE;
	} else {
		LIBBPF_OPTS(bpf_xdp_attach_opts, ao, .old_prog_fd = old_fd);
		err = bpf_xdp_attach(ifindex, new_fd, mode_flags(cur->mode) | XDP_FLAGS_REPLACE,
				     &ao);
		out->how = FG_XDP_LIBXDP;
	}
	close(old_fd);
	if (err)
		return fail(why, err, "ifindex %d: replacing %s (id %u): %s", ifindex,
			    cur->e[0].name, cur->e[0].id, strerror(-err));
	out->ifindex = ifindex;
	out->mode = cur->mode;
	out->link_fd = lfd;
	return 0;
}

/* Take component old_id out of the dispatcher on ifindex. */
static int detach_id(int ifindex, __u32 old_id, enum fg_xdp_mode mode)
{
	struct xdp_program *oldp = xdp_program__from_id(old_id);
	long err = libxdp_get_error(oldp);

	if (err)
		return (int)err;
	err = xdp_program__detach(oldp, ifindex, to_libxdp(mode), 0);
	xdp_program__close(oldp);
	return (int)err;
}

int fg_xdp_adopt(const struct fg_xdp_prog *p, int ifindex, const struct fg_xdp_opts *o,
		 struct fg_xdp_att *out, char *why)
{
	const struct fg_xdp_entry *old;
	struct fg_xdp_list cur;
	const char *ours;
	__u32 old_id;
	__u64 t_joined;
	int err;

	err = attach_begin(p, ifindex, o, out, &cur, why);
	if (err)
		return err;
	ours = bpf_program__name(p->prog);
	old = find_ours(&cur);
	if (!old)
		return fg_xdp_attach(p, ifindex, o, out, why);
	old_id = old->id;
	if (same_program(p, old_id)) {
		out->kept = true;
		err = fill_att(ifindex, ours, cur.via_link ? FG_XDP_EXCLUSIVE : FG_XDP_LIBXDP, out,
			       why);
		if (!err && cur.via_link)
			out->link_fd = find_xdp_link(ifindex, old_id);
		return err;
	}
	if (!cur.dispatcher_id) {
		err = replace_single(p, ifindex, &cur, out, why);
		if (!err)
			err = fill_att(ifindex, ours, out->how, out, why);
		return err;
	}
	if (o->how == FG_XDP_EXCLUSIVE)
		return fail(
			why, -EBUSY,
			"ifindex %d runs %s in libxdp's dispatcher but xdp_attach is exclusive: "
			"detach floodgate first to change how it attaches",
			ifindex, ours);
	/* libxdp 1.3.1 replaces the whole dispatcher for any change: add the
	 * new copy (both run), then take the old one out; never a moment
	 * without floodgate */
	if (cur.n >= 10)
		return fail(why, -E2BIG,
			    "ifindex %d: the dispatcher is full (10 programs); "
			    "no room to swap %s without a gap",
			    ifindex, ours);
	err = libxdp_attach_once(p, ifindex, o, cur.mode, why);
	if (err)
		return err;
	t_joined = now_ns();
	err = detach_id(ifindex, old_id, cur.mode);
	out->overlap_ns = now_ns() - t_joined;
	if (err)
		return fail(why, err,
			    "ifindex %d: the new %s runs, but the old one (id %u) "
			    "could not be removed: %s; both are counting",
			    ifindex, ours, old_id, strerror(-err));
	err = fill_att(ifindex, ours, FG_XDP_LIBXDP, out, why);
	return err;
}

void fg_xdp_att_close(struct fg_xdp_att *a)
{
	if (a->link_fd >= 0)
		close(a->link_fd);
	a->link_fd = -1;
}

const char *fg_xdp_pin_base(char *buf, size_t len)
{
	const char *root = getenv("LIBXDP_BPFFS");

	snprintf(buf, len, "%s/xdp", root && *root ? root : "/sys/fs/bpf");
	return buf;
}

/* Unlink every pin in dirfd's directory (libxdp puts only pins there). */
static int unlink_pins(int dirfd)
{
	DIR *d = fdopendir(dirfd);
	struct dirent *de;
	int err = 0;

	if (!d) {
		err = -errno;
		close(dirfd);
		return err;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    unlinkat(dirfd, de->d_name, 0) && !err)
			err = -errno;
	closedir(d); /* closes dirfd */
	return err;
}

int fg_xdp_remove_dead_dispatcher(const char *base, int ifindex, __u32 dispatcher_id, char *why)
{
	char name[64];
	int bfd, dfd, err;

	snprintf(name, sizeof(name), "dispatch-%d-%u", ifindex, dispatcher_id);
	bfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (bfd < 0)
		return errno == ENOENT ? -ENOENT :
					 fail(why, -errno, "%s: %s", base, strerror(errno));
	if (flock(bfd, LOCK_EX | LOCK_NB)) {
		err = errno == EWOULDBLOCK ? -EAGAIN : -errno;
		close(bfd);
		return fail(why, err, "%s: libxdp's lock: %s", base, strerror(-err));
	}
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	if (!bpf_xdp_query(ifindex, 0, &q) &&
	    (q.drv_prog_id == dispatcher_id || q.skb_prog_id == dispatcher_id)) {
		err = fail(why, -EBUSY, "%s/%s: dispatcher %u still runs on ifindex %d", base, name,
			   dispatcher_id, ifindex);
		goto out;
	}
	dfd = openat(bfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		err = -errno;
		if (err != -ENOENT)
			fail(why, err, "%s/%s: %s", base, name, strerror(-err));
		goto out;
	}
	err = unlink_pins(dfd);
	if (!err && unlinkat(bfd, name, AT_REMOVEDIR))
		err = -errno;
	if (err)
		fail(why, err, "removing %s/%s: %s", base, name, strerror(-err));
out:
	flock(bfd, LOCK_UN);
	close(bfd);
	return err;
}
