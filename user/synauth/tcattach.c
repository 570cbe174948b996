// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The handoff way's tc program (bpf/fgsyn.bpf.c) on each interface, at
 * ingress, next to the XDP program: a tcx link (6.6+) pinned in the pin
 * dir as tclink_<ifname>, so it outlives the daemon as the XDP link does
 * and `floodgate detach` (which unpins links before maps) removes it; not
 * link_*, which the XDP attach owns (and sweeps when unconfigured); else a
 * clsact qdisc and a filter of floodgate's handle and priority. The
 * handoff needs 6.9, so the clsact branch serves only kernels with the
 * kfunc backported and no tcx; FLOODGATE_TC_ATTACH=clsact forces it (the
 * tests run it on kernels with tcx), =tcx forbids it.
 *
 * libbpf 1.1 (Debian 12) has no tcx API: the link is made with
 * bpf_link_create and the attach type's number, which the kernel's ABI
 * fixes (BPF_TCX_INGRESS, 6.6).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "attach/attach.h"
#include "maps/fgmaps.h"
#include "lib/sysutil.h"
#include "synauth/synauth.h"

#define TCX_INGRESS   46 /* enum bpf_attach_type BPF_TCX_INGRESS (6.6) */
#define LINK_TYPE_TCX 11 /* enum bpf_link_type BPF_LINK_TYPE_TCX (6.6) */

const char *const fg_tc_how_names[3] = { "none", "tcx", "clsact" };

int fg_tc_pin_path(char *buf, size_t len, const char *dir, const char *ifname)
{
	int n = snprintf(buf, len, "%s/" FG_TC_LINK_PREFIX "%s", dir, ifname);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The ifindex a tcx link is attached to, 0 when severed or not a tcx link.
 * bpf_link_info's tcx member starts with its ifindex, where xdp's does:
 * Debian 12's uapi header predates tcx. */
static int tcx_ifindex(int fd)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len) || info.type != LINK_TYPE_TCX)
		return 0;
	return (int)info.xdp.ifindex;
}

/* A live link pinned at path on ifc's device: swap our program in. 1 when
 * there is none (a severed one is unpinned). */
static int adopt(int prog_fd, const char *path, struct fg_tc_iface *ifc)
{
	int fd = bpf_obj_get(path), err;

	if (fd < 0)
		return 1;
	if (tcx_ifindex(fd) != ifc->ifindex) {
		close(fd);
		unlink(path); /* severed, or another device's: ours to replace */
		return 1;
	}
	if (bpf_link_update(fd, prog_fd, NULL)) {
		err = -errno;
		snprintf(ifc->why, sizeof(ifc->why), "cannot swap the program into %.160s: %s",
			 path, strerror(-err));
		close(fd);
		return err;
	}
	ifc->link_fd = fd;
	ifc->how = FG_TC_TCX;
	ifc->adopted = true;
	return 0;
}

static int attach_tcx(int prog_fd, const char *path, struct fg_tc_iface *ifc)
{
	int fd = bpf_link_create(prog_fd, ifc->ifindex, (enum bpf_attach_type)TCX_INGRESS, NULL),
	    err;

	if (fd < 0)
		return -errno;
	if (bpf_obj_pin(fd, path)) {
		err = -errno;
		snprintf(ifc->why, sizeof(ifc->why), "cannot pin the tc link at %.160s: %s", path,
			 strerror(-err));
		close(fd); /* the link goes with its last fd */
		return err;
	}
	ifc->link_fd = fd;
	ifc->how = FG_TC_TCX;
	return 0;
}

static int attach_clsact(int prog_fd, struct fg_tc_iface *ifc)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifc->ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, o, .handle = FG_TC_HANDLE, .priority = FG_TC_PRIO,
		    .prog_fd = prog_fd, .flags = BPF_TC_F_REPLACE);
	int err = bpf_tc_hook_create(&hook);

	if (err && err != -EEXIST)
		return err;
	err = bpf_tc_attach(&hook, &o);
	if (err)
		return err;
	ifc->how = FG_TC_CLSACT;
	return 0;
}

int fg_tc_want(const char *s, char *why)
{
	if (!s || !*s || !strcmp(s, "auto"))
		return FG_TC_NONE;
	if (!strcmp(s, "tcx"))
		return FG_TC_TCX;
	if (!strcmp(s, "clsact"))
		return FG_TC_CLSACT;
	fg_why(why, FG_TC_ATTACH_ENV "=%.40s names no way (auto, tcx or clsact)", s);
	return -EINVAL;
}

/* Our clsact filter on ifc's device (one a killed daemon left), or none.
 * libbpf is muted meanwhile: without a clsact qdisc (the usual case) it
 * would log the kernel's "Parent Qdisc doesn't exists" as a warning. */
static bool clsact_ours(const struct fg_tc_iface *ifc)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifc->ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, o, .handle = FG_TC_HANDLE, .priority = FG_TC_PRIO);
	libbpf_print_fn_t print = libbpf_set_print(NULL);
	bool ours = !bpf_tc_query(&hook, &o);

	libbpf_set_print(print);
	return ours;
}

static void clsact_remove(const struct fg_tc_iface *ifc)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifc->ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, o, .handle = FG_TC_HANDLE, .priority = FG_TC_PRIO);

	bpf_tc_detach(&hook, &o);
}

int fg_tc_attach(int prog_fd, const char *dir, struct fg_tc_iface *ifc)
{
	char path[FG_LINK_PATH_LEN + 8];
	bool left;
	int err, terr = 0;

	ifc->how = FG_TC_NONE;
	ifc->link_fd = -1;
	ifc->adopted = false;
	ifc->why[0] = 0;
	ifc->ifindex = (int)if_nametoindex(ifc->name);
	if (!ifc->ifindex) {
		snprintf(ifc->why, sizeof(ifc->why), "no interface %s", ifc->name);
		return -ENODEV;
	}
	err = fg_tc_pin_path(path, sizeof(path), dir, ifc->name);
	if (err)
		return err;
	/* a filter a killed daemon left behind: replaced in place when clsact
	 * is the way (adopted), removed when tcx is, or both would run and the
	 * second handoff of one ACK fail (and drop it) */
	left = clsact_ours(ifc);
	if (ifc->want != FG_TC_CLSACT) {
		err = adopt(prog_fd, path, ifc);
		if (err <= 0) {
			if (!err && left)
				clsact_remove(ifc);
			return err;
		}
		terr = attach_tcx(prog_fd, path, ifc);
		if (!terr && left)
			clsact_remove(ifc);
		if (!terr || ifc->why[0] || ifc->want == FG_TC_TCX) {
			if (terr && !ifc->why[0])
				snprintf(ifc->why, sizeof(ifc->why), "tcx (forced by %s): %s",
					 FG_TC_ATTACH_ENV, strerror(-terr));
			return terr;
		}
	} else {
		/* a tcx link pinned by an earlier daemon would run beside the filter */
		int fd = bpf_obj_get(path);

		if (fd >= 0) {
			if (tcx_ifindex(fd) == ifc->ifindex)
				bpf_link_detach(fd);
			close(fd);
			unlink(path);
		}
	}
	/* no tcx here (before 6.6: EINVAL), or clsact forced */
	err = attach_clsact(prog_fd, ifc);
	if (err && ifc->want == FG_TC_CLSACT)
		snprintf(ifc->why, sizeof(ifc->why), "clsact (forced by %s): %s", FG_TC_ATTACH_ENV,
			 strerror(-err));
	else if (err)
		snprintf(ifc->why, sizeof(ifc->why), "tcx: %s; clsact: %s", strerror(-terr),
			 strerror(-err));
	else
		ifc->adopted = left;
	return err;
}

int fg_tc_detach(const char *dir, struct fg_tc_iface *ifc)
{
	char path[FG_LINK_PATH_LEN + 8];
	int err = 0;

	if (ifc->how == FG_TC_TCX) {
		if (bpf_link_detach(ifc->link_fd) && errno != ENOLINK && errno != ENOENT)
			err = -errno;
		if (!fg_tc_pin_path(path, sizeof(path), dir, ifc->name))
			unlink(path);
		close(ifc->link_fd);
	} else if (ifc->how == FG_TC_CLSACT) {
		LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifc->ifindex,
			    .attach_point = BPF_TC_INGRESS);
		LIBBPF_OPTS(bpf_tc_opts, o, .handle = FG_TC_HANDLE, .priority = FG_TC_PRIO);

		err = bpf_tc_detach(&hook, &o);
		if (err == -ENOENT || err == -ENODEV)
			err = 0;
	}
	ifc->link_fd = -1;
	ifc->how = FG_TC_NONE;
	return err;
}

void fg_tc_release(struct fg_tc_iface *ifc)
{
	if (ifc->link_fd >= 0)
		close(ifc->link_fd); /* the pin keeps the link */
	ifc->link_fd = -1;
	ifc->how = FG_TC_NONE;
}

bool fg_tc_alive(const struct fg_tc_iface *ifc)
{
	if (ifc->how == FG_TC_TCX)
		return tcx_ifindex(ifc->link_fd) == ifc->ifindex &&
		       (int)if_nametoindex(ifc->name) == ifc->ifindex;
	if (ifc->how == FG_TC_CLSACT) {
		LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifc->ifindex,
			    .attach_point = BPF_TC_INGRESS);
		LIBBPF_OPTS(bpf_tc_opts, o, .handle = FG_TC_HANDLE, .priority = FG_TC_PRIO);

		return !bpf_tc_query(&hook, &o);
	}
	return false;
}

/* --- counters ------------------------------------------------------------------------- */

const char *const fg_syn_stat_names[FG_SYN_NSTAT] = {
	[FG_SYN_HANDOFF] = "handoff",
	[FG_SYN_NOLISTEN] = "no_listener",
	[FG_SYN_FAIL] = "handoff_failed",
	[FG_SYN_NOMETA] = "not_approved",
};

/* One per-CPU value of vsz bytes summed as u64 words into out (nwords). */
static int percpu_sum(int fd, size_t vsz, __u64 *out, size_t nwords)
{
	int ncpu = libbpf_num_possible_cpus();
	size_t stride = (vsz + 7) / 8 * 8;
	__u32 zero = 0;
	__u64 *buf;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	buf = calloc((size_t)ncpu, stride);
	if (!buf)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &zero, buf)) {
		int err = -errno;

		free(buf);
		return err;
	}
	memset(out, 0, nwords * 8);
	for (int c = 0; c < ncpu; c++)
		for (size_t w = 0; w < nwords; w++)
			out[w] += buf[(size_t)c * stride / 8 + w];
	free(buf);
	return 0;
}

int fg_systat_read(int fd, __u64 out[FG_SYN_NSTAT])
{
	return percpu_sum(fd, sizeof(struct fg_systat), out, FG_SYN_NSTAT);
}

int fg_sadly_read(int fd, struct fg_sadly *out)
{
	return percpu_sum(fd, sizeof(*out), (__u64 *)out, sizeof(*out) / 8);
}

/* fg_systat of the program behind the tcx link fd; -ENOENT: none. */
static int systat_of_link(int fd)
{
	struct bpf_link_info li = {};
	struct bpf_prog_info pi = {};
	__u32 len = sizeof(li), plen = sizeof(pi), ids[8], n;
	int pfd, ret = -ENOENT;

	if (bpf_obj_get_info_by_fd(fd, &li, &len))
		return -errno;
	pfd = bpf_prog_get_fd_by_id(li.prog_id);
	if (pfd < 0)
		return -errno;
	pi.nr_map_ids = 8;
	pi.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(pfd, &pi, &plen))
		goto out;
	n = pi.nr_map_ids < 8 ? pi.nr_map_ids : 8;
	for (__u32 i = 0; i < n && ret < 0; i++) {
		struct bpf_map_info mi = {};
		__u32 mlen = sizeof(mi);
		int mfd = bpf_map_get_fd_by_id(ids[i]);

		if (mfd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(mfd, &mi, &mlen) && !strcmp(mi.name, "fg_systat"))
			ret = mfd;
		else
			close(mfd);
	}
out:
	close(pfd);
	return ret;
}

int fg_systat_find(const char *dir)
{
	size_t pl = strlen(FG_TC_LINK_PREFIX);
	DIR *d = opendir(dir);
	struct dirent *de;
	int ret = -ENOENT;

	if (!d)
		return -errno;
	while (ret < 0 && (de = readdir(d))) {
		size_t l = strlen(de->d_name);
		char path[FG_LINK_PATH_LEN + 8];
		int fd;

		if (l <= pl || strncmp(de->d_name, FG_TC_LINK_PREFIX, pl))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
			continue;
		fd = bpf_obj_get(path);
		if (fd < 0)
			continue;
		ret = systat_of_link(fd);
		close(fd);
	}
	closedir(d);
	return ret;
}
