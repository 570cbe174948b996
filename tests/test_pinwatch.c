// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * pinwatch and discover without an interface: the real skeleton loaded (not
 * attached), its maps pinned in a pin dir of this test's own on bpffs; pins
 * removed one by one and all at once, a foreign object in a pin's place, a
 * pin dir that cannot be made again (its failure said once a minute, on a
 * simulated clock); the maps of a loaded program found by id (cold maps by
 * BTF), checked as pinned ones are. FG_NEEDS_ROOT (BPF maps, bpffs).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "fgtest.h"
#include "attach/discover.h"
#include "maps/fgmaps.h"
#include "attach/pinwatch.h"
#include "floodgate.skel.h"

#define SEC_NS 1000000000ull

static struct floodgate_bpf *skel;
static char pin[128];

static void pin_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", pin, name);
}

/* Pin every map of the skeleton in pin (made if needed). */
static int pin_all(void)
{
	struct bpf_map *maps[FGM_NMAPS];
	char p[256];

	if (mkdir(pin, 0700) && errno != EEXIST)
		return -errno;
	fg_skel_maps(skel, maps);
	for (int i = 0; i < FGM_NMAPS; i++) {
		pin_path(p, sizeof(p), fg_map_name(i));
		if (bpf_obj_pin(bpf_map__fd(maps[i]), p))
			return -errno;
	}
	return 0;
}

/* The pin of map name removed. */
static void unpin(const char *name)
{
	char p[256];

	pin_path(p, sizeof(p), name);
	unlink(p);
}

static void unpin_all(void)
{
	for (int i = 0; i < FGM_NMAPS; i++)
		unpin(fg_map_name(i));
	rmdir(pin);
}

static __u32 pinned_id(const char *name)
{
	char p[256];
	int fd;
	__u32 id;

	pin_path(p, sizeof(p), name);
	fd = bpf_obj_get(p);
	if (fd < 0)
		return 0;
	id = fg_obj_id(fd);
	close(fd);
	return id;
}

/* The maps pinned and opened, and a watcher on them: 1, or 0 when the maps are not there. */
static int watch_pinned(struct fg_pinwatch *pw, struct fg_maps *m)
{
	if (!ASSERT_OK(pin_all(), "pin the maps") ||
	    !ASSERT_OK(fg_maps_from_skel(m, skel, pin), "maps"))
		return 0;
	ASSERT_OK(fg_pinwatch_init(pw, m), "init");
	return 1;
}

static void test_repin_one_map(void)
{
	struct fg_pinwatch pw;
	struct fg_maps m;
	__u32 id;

	if (!watch_pinned(&pw, &m))
		return;
	ASSERT_EQ(fg_pinwatch_check(&pw, &m, NULL, 0, SEC_NS), 0, "all in place: nothing to say");
	id = pinned_id("fg_stats");
	unpin("fg_stats");
	ASSERT_EQ(fg_pinwatch_check(&pw, &m, NULL, 0, 2 * SEC_NS), 1, "fg_stats gone: said");
	ASSERT_TRUE(strstr(pw.msg, "pins removed from") && strstr(pw.msg, ": fg_stats;"), pw.msg);
	ASSERT_EQ(pinned_id("fg_stats"), id, "the same map is pinned again");
	ASSERT_EQ(fg_pinwatch_check(&pw, &m, NULL, 0, 3 * SEC_NS), 0, "said once");
	fg_maps_close(&m);
	unpin_all();
}

static void test_repin_whole_dir(void)
{
	struct stat a, b;
	struct fg_pinwatch pw;
	struct fg_maps m;
	__u32 id;
	char want[160];

	if (!watch_pinned(&pw, &m))
		return;
	id = pinned_id("fg_ctl");
	unpin_all();
	ASSERT_EQ(fg_pinwatch_check(&pw, &m, NULL, 0, SEC_NS), 1, "pin dir gone: said");
	snprintf(want, sizeof(want),
		 "was removed under the running daemon: made it again and "
		 "re-pinned all %d maps",
		 FGM_NMAPS);
	ASSERT_TRUE(strstr(pw.msg, want), pw.msg);
	ASSERT_EQ(pinned_id("fg_ctl"), id, "fg_ctl is the same map");
	ASSERT_NEQ(pinned_id("fg_meta"), 0, "fg_meta pinned again");
	/* the lock is taken on the directory the CLI sees */
	ASSERT_TRUE(!fstat(m.dirfd, &a) && !stat(pin, &b) && a.st_ino == b.st_ino, "dirfd moved");
	fg_maps_close(&m);
	unpin_all();
}

static void test_foreign_left_alone(void)
{
	struct fg_pinwatch pw;
	struct fg_maps m;
	char p[256];
	int other;

	if (!watch_pinned(&pw, &m))
		return;
	/* someone else's map where fg_ctl was, and fg_stats missing */
	other = bpf_map_create(BPF_MAP_TYPE_ARRAY, "other", 4, 4, 1, NULL);
	unpin("fg_ctl");
	pin_path(p, sizeof(p), "fg_ctl");
	ASSERT_OK(bpf_obj_pin(other, p), "pin a foreign map");
	unpin("fg_stats");
	ASSERT_EQ(fg_pinwatch_check(&pw, &m, NULL, 0, SEC_NS), 1, "foreign: said at once");
	ASSERT_TRUE(strstr(pw.msg, "not this daemon's (fg_ctl)"), pw.msg);
	ASSERT_EQ(pinned_id("fg_ctl"), fg_obj_id(other), "the foreign map is left");
	ASSERT_EQ(pinned_id("fg_stats"), 0, "nothing pinned beside it");
	ASSERT_EQ(fg_pinwatch_check(&pw, &m, NULL, 0, 30 * SEC_NS), 0, "not again within a minute");
	ASSERT_EQ(fg_pinwatch_check(&pw, &m, NULL, 0, 61 * SEC_NS), 1, "again after a minute");
	unpin("fg_ctl");
	ASSERT_EQ(fg_pinwatch_check(&pw, &m, NULL, 0, 62 * SEC_NS), 1, "foreign gone: re-pinned");
	ASSERT_TRUE(strstr(pw.msg, "fg_ctl, fg_stats") && strstr(pw.msg, "after 61 s"), pw.msg);
	ASSERT_EQ(pinned_id("fg_ctl"), fg_obj_id(m.fd[FGM_CTL]), "ours again");
	close(other);
	fg_maps_close(&m);
	unpin_all();
}

/* A pin dir outside bpffs (a tmp dir) that goes: it cannot be made
 * again, and that is said at once, then once a minute. */
static void test_cannot_repin(void)
{
	char dir[] = "/tmp/fgpinwatch.XXXXXX";
	struct fg_pinwatch pw;
	struct fg_maps m;

	if (!ASSERT_TRUE(mkdtemp(dir), "mkdtemp") ||
	    !ASSERT_OK(fg_maps_from_skel(&m, skel, dir), "maps"))
		return;
	ASSERT_OK(fg_pinwatch_init(&pw, &m), "init");
	rmdir(dir);
	ASSERT_EQ(fg_pinwatch_check(&pw, &m, NULL, 0, 100 * SEC_NS), 1, "said at once");
	ASSERT_TRUE(strstr(pw.msg, "cannot be made again: /tmp is not a bpf filesystem"), pw.msg);
	ASSERT_EQ(fg_pinwatch_check(&pw, &m, NULL, 0, 101 * SEC_NS), 0, "not every second");
	ASSERT_EQ(fg_pinwatch_check(&pw, &m, NULL, 0, 159 * SEC_NS), 0, "not within the minute");
	ASSERT_EQ(fg_pinwatch_check(&pw, &m, NULL, 0, 160 * SEC_NS), 1, "once a minute");
	ASSERT_TRUE(access(dir, F_OK) != 0, "no directory made outside bpffs");
	fg_maps_close(&m);
}

static void test_maps_open_fds(void)
{
	struct bpf_map *maps[FGM_NMAPS];
	char why[FG_WHY_LEN] = "";
	int fd[FGM_NMAPS];
	struct fg_maps m;

	fg_skel_maps(skel, maps);
	for (int i = 0; i < FGM_NMAPS; i++)
		fd[i] = dup(bpf_map__fd(maps[i]));
	ASSERT_OK(fg_maps_open_fds(&m, fd, "test", why), why);
	ASSERT_EQ(m.dirfd, -1, "no pin dir");
	fg_maps_close(&m);
	for (int i = 0; i < FGM_NMAPS; i++)
		fd[i] = dup(bpf_map__fd(maps[i]));
	close(fd[FGM_META]);
	fd[FGM_META] = -1;
	ASSERT_EQ(fg_maps_open_fds(&m, fd, "test", why), -EPROTO, "a map missing");
	ASSERT_TRUE(strstr(why, "no map fg_meta"), why);
	for (int i = 0; i < FGM_NMAPS; i++)
		fd[i] = dup(bpf_map__fd(maps[i == FGM_CTL ? FGM_STATS : i]));
	ASSERT_EQ(fg_maps_open_fds(&m, fd, "test", why), -EPROTO, "a map of another layout");
	ASSERT_EQ(fd[FGM_CTL], -1, "the fds were taken (and closed)");
}

/* The maps of a loaded program by its id: hot ones from its map ids, the
 * cold ones (fg_meta, fg_names) through the BTF they share with fg_ctl. */
static void test_found_maps(void)
{
	struct fg_found_if at = { .ifname = "test", .how = FG_FOUND_NETLINK };
	char why[FG_WHY_LEN] = "", dir[256];
	unsigned int gone = ~0u;
	struct fg_maps m;

	at.prog_id = fg_obj_id(bpf_program__fd(skel->progs.floodgate));
	if (!ASSERT_OK(fg_found_maps(&at, &m, &gone, why), why))
		return;
	ASSERT_EQ(gone, 0, "no map missing");
	ASSERT_EQ(fg_obj_id(m.fd[FGM_META]), fg_obj_id(bpf_map__fd(skel->maps.fg_meta)),
		  "fg_meta by BTF");
	ASSERT_EQ(fg_obj_id(m.fd[FGM_NAMES]), fg_obj_id(bpf_map__fd(skel->maps.fg_names)),
		  "fg_names by BTF");
	ASSERT_EQ(fg_obj_id(m.fd[FGM_SRC4]), fg_obj_id(bpf_map__fd(skel->maps.fg_src4)),
		  "fg_src4 by id");
	/* where its fg_ctl is pinned, if anywhere */
	ASSERT_EQ(fg_found_pinned_at(fg_obj_id(m.fd[FGM_CTL]), dir, sizeof(dir)), -ENOENT,
		  "not pinned");
	if (ASSERT_OK(pin_all(), "pin the maps")) {
		ASSERT_OK(fg_found_pinned_at(fg_obj_id(m.fd[FGM_CTL]), dir, sizeof(dir)), "pinned");
		ASSERT_TRUE(!strcmp(dir, pin), dir);
	}
	unpin_all();
	fg_maps_close(&m);
}

int main(int argc, char **argv)
{
	int err;

	if (fg_test_init_root(argc, argv, "pinwatch", "needs root to create BPF maps and pin them"))
		return 0;
	snprintf(pin, sizeof(pin), "/sys/fs/bpf/fgtest-pinwatch-%d", getpid());
	skel = floodgate_bpf__open();
	if (!skel || bpf_map__set_max_entries(skel->maps.fg_src4, 1024) ||
	    bpf_map__set_max_entries(skel->maps.fg_src6, 1024) || floodgate_bpf__load(skel)) {
		err = FG_FAIL_ALL("setup", "skeleton load: %s", strerror(errno));
		floodgate_bpf__destroy(skel);
		return err;
	}
	FG_RUN(test_repin_one_map);
	FG_RUN(test_repin_whole_dir);
	FG_RUN(test_foreign_left_alone);
	FG_RUN(test_cannot_repin);
	FG_RUN(test_maps_open_fds);
	FG_RUN(test_found_maps);
	unpin_all();
	floodgate_bpf__destroy(skel);
	return fg_test_summary();
}
