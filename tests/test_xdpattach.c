// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * user/attach/xdpattach.c against this kernel and Debian's xdp-tools: floodgate
 * beside xdp-filter through libxdp's dispatcher, or alone where the kernel
 * cannot run one, and the exclusive bpf_link. FG_NEEDS_ROOT.
 *
 * Everything happens in a private network namespace (one veth pair, fgx0
 * and its peer fgx1) and a private mount namespace with its own bpffs on
 * /sys/fs/bpf and its own /run: libxdp's pins (/sys/fs/bpf/xdp), xdp-filter's
 * (/sys/fs/bpf/xdp-filter) and xdp-filter's lock file (/run/xdp-filter.lck)
 * never meet another process's, and all of them go when the test exits.
 * The tests still detach what they attached and check that the pins went.
 *
 * What each test expects depends on one probe, fg_xdp_probe_dispatcher:
 * with a dispatcher, floodgate joins xdp-filter; without (a kernel that
 * refuses freplace), it must refuse and leave xdp-filter untouched. The
 * figures printed as "info:" lines are quoted in docs/libxdp.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include <xdp/prog_dispatcher.h>
#include "fgtest.h"
#include "dp.h"
#include "attach/xdpattach.h"
#include "fgtest_xdp.skel.h"
#include "lib/sysutil.h"

#define DEV0	  "fgx0" /* the programs' side */
#define DEV1	  "fgx1" /* where frames are sent from */
#define FGT_ETH_P 0x88b5
#define OURS	  "fgtest"

static int dispatcher_ok;
static char no_dispatcher[FG_WHY_LEN];
static int have_filter;

/* ---- fixture ------------------------------------------------------------- */

__attribute__((format(printf, 1, 2))) static int sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	if (!getenv("FGT_VERBOSE"))
		strncat(cmd, " >/dev/null 2>&1", sizeof(cmd) - strlen(cmd) - 1);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int private_namespaces(char *why)
{
	if (unshare(CLONE_NEWNET | CLONE_NEWNS)) {
		fg_why(why, "unshare: %s", strerror(errno));
		return -errno;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("bpf", "/sys/fs/bpf", "bpf", 0, NULL) ||
	    mount("tmpfs", "/run", "tmpfs", 0, "size=1m,mode=0755")) {
		fg_why(why, "private mounts: %s", strerror(errno));
		return -errno;
	}
	if (sh("ip link set lo up")) {
		fg_why(why, "ip link set lo up failed");
		return -EIO;
	}
	return 0;
}

/* A fresh veth pair, both ends up, both at mtu. */
static int veth(int mtu)
{
	sh("ip link del " DEV0);
	return sh("ip link add " DEV0 " mtu %d type veth peer name " DEV1 " mtu %d && "
		  "ip link set " DEV0 " up && ip link set " DEV1 " up",
		  mtu, mtu);
}

static int ifx(void)
{
	return (int)if_nametoindex(DEV0);
}

/* fgtest counting in fgt_cnt[gen]; share_fd >= 0: reuse that fgt_cnt, as
 * floodgate's restarted daemon reuses its pinned maps. */
static struct fgtest_xdp_bpf *load_fgtest(__u32 gen, int share_fd)
{
	struct fgtest_xdp_bpf *s = fgtest_xdp_bpf__open();

	if (!s)
		return NULL;
	s->rodata->fgt_gen = gen;
	if ((share_fd >= 0 && bpf_map__reuse_fd(s->maps.fgt_cnt, share_fd)) ||
	    fgtest_xdp_bpf__load(s)) {
		fgtest_xdp_bpf__destroy(s);
		return NULL;
	}
	return s;
}

static struct fg_xdp_prog prog_of(struct fgtest_xdp_bpf *s, struct bpf_program *prog)
{
	struct fg_xdp_prog p = { .obj = s->obj, .prog = prog };

	p.elf = fgtest_xdp_bpf__elf_bytes(&p.elf_sz);
	return p;
}

static __u64 counted(struct fgtest_xdp_bpf *s, __u32 gen)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 v[ncpu > 0 ? ncpu : 1], sum = 0;

	if (ncpu <= 0 || bpf_map_lookup_elem(bpf_map__fd(s->maps.fgt_cnt), &gen, v))
		return 0;
	for (int i = 0; i < ncpu; i++)
		sum += v[i];
	return sum;
}

/* Sends marker frames from DEV1 to DEV0 until *stop (or n, when stop is
 * NULL); returns how many the kernel accepted: every one of those reaches
 * DEV0's XDP hook (a veth drop fails the send). */
static long send_marker(long n, volatile int *stop)
{
	unsigned char f[60] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1 };
	struct sockaddr_ll sa = { .sll_family = AF_PACKET, .sll_halen = ETH_ALEN };
	long sent = 0;
	int fd;

	f[12] = FGT_ETH_P >> 8;
	f[13] = FGT_ETH_P & 0xff;
	sa.sll_ifindex = (int)if_nametoindex(DEV1);
	fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (fd < 0)
		return -errno;
	for (long i = 0; stop ? !*stop : i < n; i++) {
		if (sendto(fd, f, sizeof(f), 0, (struct sockaddr *)&sa, sizeof(sa)) == sizeof(f))
			sent++;
		if ((i & 63) == 63)
			sched_yield(); /* let the receiving NAPI keep up */
	}
	close(fd);
	return sent;
}

/* Frames already accepted are processed in softirq: give it a moment. */
static void settle(void)
{
	usleep(50 * 1000);
}

static int pin_dirs(void)
{
	int n = 0;
	FILE *f = popen("ls -d /sys/fs/bpf/xdp/dispatch-* 2>/dev/null | wc -l", "r");

	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = -1;
		pclose(f);
	}
	return n;
}

static const struct fg_xdp_entry *entry(const struct fg_xdp_list *l, const char *prefix)
{
	for (int i = 0; i < l->n; i++)
		if (!strncmp(l->e[i].name, prefix, strlen(prefix)))
			return &l->e[i];
	return NULL;
}

static void print_list(const char *what, const struct fg_xdp_list *l)
{
	printf("  info: %s: %d program(s), %s%s, dispatcher %u:", what, l->n,
	       fg_xdp_mode_str(l->mode), l->via_link ? ", bpf_link" : "", l->dispatcher_id);
	for (int i = 0; i < l->n; i++) {
		if (l->e[i].run_prio == FG_XDP_PRIO_NONE)
			printf(" [%s id %u%s]", l->e[i].name, l->e[i].id,
			       l->e[i].ours ? " ours" : "");
		else
			printf(" [%s id %u prio %u chain %#x%s]", l->e[i].name, l->e[i].id,
			       l->e[i].run_prio, l->e[i].chain_actions,
			       l->e[i].ours ? " ours" : "");
	}
	printf("\n");
}

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static struct fg_xdp_opts libxdp_opts(void)
{
	return (struct fg_xdp_opts){ .how = FG_XDP_LIBXDP, .run_prio = FG_XDP_PRIO_FIRST };
}

/* One test's state: fgtest (s) and its fgtest program (p), the options (o),
 * the attachment (a), the device's last listing (l) and the last reason
 * (why). fx_attach .. fx_detach return what the library call returned, so
 * that each check stays at its caller's line. */
struct fx {
	struct fgtest_xdp_bpf *s;
	struct fg_xdp_opts o;
	struct fg_xdp_prog p;
	struct fg_xdp_att a;
	struct fg_xdp_list l;
	char why[512];
};

/* The usual start: fgtest loaded, o = libxdp_opts() and a fresh veth pair
 * at mtu. 0, or -1 with the failed check counted; f->s is NULL or loaded. */
static int fx_setup(struct fx *f, int mtu, const char *veth_check)
{
	memset(f, 0, sizeof(*f));
	f->o = libxdp_opts();
	f->s = load_fgtest(0, -1);
	if (!ASSERT_TRUE(f->s, "fgtest loads") || !ASSERT_OK(veth(mtu), veth_check))
		return -1;
	f->p = prog_of(f->s, f->s->progs.fgtest);
	return 0;
}

static int fx_attach(struct fx *f)
{
	return fg_xdp_attach(&f->p, ifx(), &f->o, &f->a, f->why);
}

static int fx_adopt(struct fx *f)
{
	return fg_xdp_adopt(&f->p, ifx(), &f->o, &f->a, f->why);
}

static int fx_list(struct fx *f)
{
	return fg_xdp_list(ifx(), OURS, &f->l, f->why);
}

static int fx_detach(struct fx *f, const char *link_pin)
{
	return fg_xdp_detach_ours(ifx(), OURS, link_pin, f->why);
}

/* n marker frames sent; every one the kernel accepted must reach fgtest. */
static void all_seen(struct fx *f, long n, const char *check)
{
	long sent = send_marker(n, NULL);

	settle();
	ASSERT_EQ(counted(f->s, 0), sent, check);
}

/* prog attached directly in native mode, as a program that is not ours:
 * 0 and its id (0 when not listed), or -1 with the failed check counted. */
static int attach_direct(struct fx *f, struct bpf_program *prog, const char *check, __u32 *id)
{
	if (!ASSERT_OK(bpf_xdp_attach(ifx(), bpf_program__fd(prog), XDP_FLAGS_DRV_MODE, NULL),
		       check))
		return -1;
	ASSERT_OK(fx_list(f), f->why);
	*id = f->l.n ? f->l.e[0].id : 0;
	return 0;
}

/* ---- tests ---------------------------------------------------------------- */

static void test_probe(void)
{
	char why[FG_WHY_LEN] = "";
	int err = fg_xdp_probe_dispatcher(why);

	printf("  info: libxdp dispatcher on this kernel: %s%s\n", err ? "no: " : "yes", why);
	if (err)
		ASSERT_EQ(err, -EOPNOTSUPP, "probe error");
	ASSERT_EQ(!err, dispatcher_ok, "probe agrees with the first probe");
}
/* libxdp mode on a free device: ours, with its priority where there is a
 * dispatcher; alone by netlink where there is not. Detach removes it and
 * libxdp's pins. */
static void test_libxdp_alone(void)
{
	struct fx f;

	if (fx_setup(&f, 1500, "veth") || !ASSERT_OK(fx_attach(&f), f.why))
		goto out;
	ASSERT_EQ(f.a.dispatcher, dispatcher_ok, "in a dispatcher exactly when the kernel has one");
	ASSERT_EQ(f.a.mode, FG_XDP_NATIVE, "auto is native on veth");
	ASSERT_OK(fx_list(&f), f.why);
	print_list("libxdp alone", &f.l);
	ASSERT_EQ(f.l.n, 1, "one program");
	ASSERT_TRUE(f.l.e[0].ours, "it is ours");
	ASSERT_EQ(f.l.e[0].id, f.a.prog_id, "the id attach reported");
	ASSERT_TRUE(!f.l.via_link, "attached by netlink, not a bpf_link");
	if (dispatcher_ok) {
		ASSERT_EQ(f.l.e[0].run_prio, FG_XDP_PRIO_FIRST, "our run priority");
		ASSERT_EQ(f.l.e[0].chain_actions, FG_XDP_CHAIN_PASS, "chain on XDP_PASS");
		ASSERT_EQ(pin_dirs(), 1, "libxdp pinned one dispatcher");
	} else {
		ASSERT_EQ(f.l.e[0].run_prio, FG_XDP_PRIO_NONE, "no priority without a dispatcher");
		ASSERT_EQ(pin_dirs(), 0, "nothing pinned without a dispatcher");
	}
	all_seen(&f, 200, "every frame sent was seen by ours");
	fg_xdp_att_close(&f.a);
	ASSERT_OK(fx_detach(&f, NULL), f.why);
	ASSERT_OK(fx_list(&f), f.why);
	ASSERT_EQ(f.l.n, 0, "nothing left on the device");
	ASSERT_EQ(pin_dirs(), 0, "no dispatcher pins left");
	ASSERT_EQ(fx_detach(&f, NULL), -ENOENT, "detaching again: not there");
out:
	fgtest_xdp_bpf__destroy(f.s);
}

/* The real floodgate program (12 maps, rodata, bss) through the same path:
 * the component copy must take every map of the loaded skeleton. */
static void test_floodgate_program(void)
{
	struct dp d = {};
	struct fx f = { .o = libxdp_opts() };
	double t;

	if (!ASSERT_OK(dp_open(&d, 4096), "floodgate loads") || !ASSERT_OK(veth(1500), "veth"))
		goto out;
	f.p = (struct fg_xdp_prog){ .obj = d.skel->obj, .prog = d.skel->progs.floodgate };
	f.p.elf = floodgate_bpf__elf_bytes(&f.p.elf_sz);
	t = mono_ms();
	if (!ASSERT_OK(fx_attach(&f), f.why))
		goto out;
	printf("  info: libxdp attach of floodgate (loads and verifies its copy): %.1f ms\n",
	       mono_ms() - t);
	ASSERT_OK(fg_xdp_list(ifx(), "floodgate", &f.l, f.why), f.why);
	print_list("floodgate", &f.l);
	ASSERT_TRUE(f.l.n == 1 && f.l.e[0].ours, "floodgate attached and ours");
	ASSERT_OK(fg_xdp_detach_ours(ifx(), "floodgate", NULL, f.why), f.why);
	ASSERT_OK(fg_xdp_list(ifx(), "floodgate", &f.l, f.why), f.why);
	ASSERT_EQ(f.l.n, 0, "gone");
out:
	if (d.skel)
		dp_close(&d);
}

/* A program attached directly (not through libxdp): libxdp mode and
 * exclusive mode both refuse with a reason and leave it as it was. */
static void test_refuses_direct_program(void)
{
	struct fgtest_xdp_bpf *other = NULL;
	struct fx f;
	__u32 id;

	memset(&f, 0, sizeof(f));
	f.o = libxdp_opts();
	f.s = load_fgtest(0, -1);
	other = load_fgtest(1, -1);
	if (!ASSERT_TRUE(f.s && other, "fgtest loads") || !ASSERT_OK(veth(1500), "veth") ||
	    attach_direct(&f, other->progs.fgt_pass, "someone else's program", &id))
		goto out;
	f.p = prog_of(f.s, f.s->progs.fgtest);
	ASSERT_EQ(fx_attach(&f), -EBUSY, "libxdp refuses");
	printf("  info: libxdp: %s\n", f.why);
	ASSERT_STR_CONTAINS(f.why, "fgt_pass", "names the program that is there");
	f.o.how = FG_XDP_EXCLUSIVE;
	ASSERT_EQ(fx_attach(&f), -EBUSY, "exclusive refuses");
	printf("  info: exclusive: %s\n", f.why);
	ASSERT_STR_CONTAINS(f.why, "does not share", "says why");
	ASSERT_OK(fx_list(&f), f.why);
	ASSERT_TRUE(f.l.n == 1 && f.l.e[0].id == id && !f.l.e[0].ours,
		    "the other program is untouched");
	ASSERT_EQ(fx_detach(&f, NULL), -ENOENT, "detach_ours does not touch it");
	ASSERT_OK(bpf_xdp_detach(ifx(), XDP_FLAGS_DRV_MODE, NULL), "remove the other program");
out:
	fgtest_xdp_bpf__destroy(f.s);
	fgtest_xdp_bpf__destroy(other);
}

/* Bad input: a clear error, and the device stays as it was. */
static void test_bad_input(void)
{
	struct fg_xdp_prog none = {};
	struct fx f;

	if (fx_setup(&f, 1500, "veth"))
		goto out;
	f.o.chain_actions = 1u << 7;
	ASSERT_EQ(fx_attach(&f), -EINVAL, "chain action 7");
	ASSERT_STR_CONTAINS(f.why, "chain actions", "says which option");
	f.o = libxdp_opts();
	f.o.how = 7;
	ASSERT_EQ(fx_attach(&f), -EINVAL, "attach method 7");
	f.o = libxdp_opts();
	f.o.mode = 9;
	ASSERT_EQ(fx_adopt(&f), -EINVAL, "adopt, mode 9");
	f.o = libxdp_opts();
	ASSERT_EQ(fg_xdp_attach(&none, ifx(), &f.o, &f.a, f.why), -EINVAL, "no program");
	ASSERT_EQ(fg_xdp_attach(&f.p, 0, &f.o, &f.a, f.why), -EINVAL, "ifindex 0");
	ASSERT_EQ(fg_xdp_attach(&f.p, 99999, &f.o, &f.a, f.why), -ENODEV, "no such device");
	ASSERT_STR_CONTAINS(f.why, "no interface", "says so");
	ASSERT_EQ(fg_xdp_detach_ours(ifx(), "", NULL, f.why), -EINVAL, "no name");
	ASSERT_OK(fx_list(&f), f.why);
	ASSERT_EQ(f.l.n, 0, "nothing attached by any of it");
	ASSERT_EQ(pin_dirs(), 0, "nothing pinned");
out:
	fgtest_xdp_bpf__destroy(f.s);
}

/* Exclusive: a bpf_link, pinned or not, detached by detach_ours. */
static void test_exclusive(void)
{
	struct fx f;
	struct stat st;

	if (fx_setup(&f, 1500, "veth"))
		goto out;
	f.o = (struct fg_xdp_opts){ .how = FG_XDP_EXCLUSIVE,
				    .mode = FG_XDP_SKB,
				    .link_pin = "/sys/fs/bpf/fgx_link" };
	if (!ASSERT_OK(fx_attach(&f), f.why))
		goto out;
	ASSERT_EQ(f.a.mode, FG_XDP_SKB, "generic as asked");
	ASSERT_TRUE(f.a.link_fd >= 0, "a link");
	fg_xdp_att_close(&f.a); /* the pin holds it */
	ASSERT_OK(fx_list(&f), f.why);
	print_list("exclusive", &f.l);
	ASSERT_TRUE(f.l.n == 1 && f.l.e[0].ours && f.l.via_link, "ours, held by a link");
	ASSERT_EQ(f.l.mode, FG_XDP_SKB, "listed as generic");
	ASSERT_EQ(fx_attach(&f), -EEXIST, "attaching twice: adopt instead");
	ASSERT_OK(fx_detach(&f, f.o.link_pin), f.why);
	ASSERT_OK(fx_list(&f), f.why);
	ASSERT_EQ(f.l.n, 0, "detached");
	ASSERT_TRUE(stat(f.o.link_pin, &st) && errno == ENOENT, "link pin removed");

	f.o.link_pin = NULL; /* unpinned: goes with its fd */
	f.o.mode = FG_XDP_AUTO;
	if (!ASSERT_OK(fx_attach(&f), f.why))
		goto out;
	ASSERT_EQ(f.a.mode, FG_XDP_NATIVE, "auto is native on veth");
	fg_xdp_att_close(&f.a);
	ASSERT_OK(fx_list(&f), f.why);
	ASSERT_EQ(f.l.n, 0, "an unpinned link detaches when closed");
out:
	fgtest_xdp_bpf__destroy(f.s);
}

/* The xdp-filter tests' start: fx_setup; -1 if xdp-filter is missing
 * (skipped) or that failed (counted), with nothing left to free. */
static int filter_begin(struct fx *f)
{
	if (!have_filter) {
		fg_test_skip("xdp-filter is not installed (Debian package xdp-tools)");
		return -1;
	}
	if (fx_setup(f, 1500, "veth")) {
		fgtest_xdp_bpf__destroy(f->s);
		return -1;
	}
	return 0;
}

/* Their end: no program on the device, no dispatcher pins. */
static void nothing_left(void)
{
	struct fg_xdp_list l;
	char why[512] = "";

	ASSERT_OK(fg_xdp_list(ifx(), OURS, &l, why), why);
	ASSERT_EQ(l.n, 0, "nothing left");
	ASSERT_EQ(pin_dirs(), 0, "no dispatcher pins left");
}

/* The listing holds xdp-filter's program, id filter_id. */
static int filter_there(const struct fg_xdp_list *l, __u32 filter_id)
{
	const struct fg_xdp_entry *e = entry(l, "xdpfilt");

	return e && e->id == filter_id;
}

/* xdp-filter first, then floodgate through libxdp. */
static void test_filter_then_ours(void)
{
	const struct fg_xdp_entry *e;
	struct fx f;
	__u32 filter_id;

	if (filter_begin(&f))
		return;
	if (!ASSERT_OK(sh("xdp-filter load " DEV0), "xdp-filter load"))
		goto out;
	ASSERT_OK(fx_list(&f), f.why);
	print_list("xdp-filter alone", &f.l);
	e = entry(&f.l, "xdpfilt");
	if (!ASSERT_TRUE(e, "xdp-filter listed"))
		goto out;
	filter_id = e->id;
	ASSERT_EQ(f.l.dispatcher_id != 0, dispatcher_ok,
		  "xdp-filter in a dispatcher iff the kernel has one");
	if (dispatcher_ok) {
		if (!ASSERT_OK(fx_attach(&f), f.why))
			goto out;
		ASSERT_OK(fx_list(&f), f.why);
		print_list("xdp-filter, then ours", &f.l);
		ASSERT_EQ(f.l.n, 2, "two programs");
		ASSERT_TRUE(f.l.n == 2 && f.l.e[0].ours,
			    "ours runs first (priority 1 < xdp-filter's 10)");
		ASSERT_TRUE(filter_there(&f.l, filter_id), "xdp-filter's program is the same one");
		all_seen(&f, 200, "ours sees every frame beside xdp-filter");
		ASSERT_OK(fx_detach(&f, NULL), f.why);
		ASSERT_OK(fx_list(&f), f.why);
		ASSERT_TRUE(f.l.n == 1 && filter_there(&f.l, filter_id),
			    "detaching ours leaves xdp-filter's program");
	} else {
		ASSERT_EQ(fx_attach(&f), -EBUSY, "no dispatcher: refuses to share");
		printf("  info: %s\n", f.why);
		ASSERT_STR_CONTAINS(f.why, "xdpfilt", "names xdp-filter's program");
		ASSERT_OK(fx_list(&f), f.why);
		ASSERT_TRUE(f.l.n == 1 && f.l.e[0].id == filter_id,
			    "xdp-filter's program untouched");
	}
	ASSERT_OK(sh("xdp-filter unload " DEV0), "xdp-filter unload");
	nothing_left();
out:
	sh("xdp-filter unload --all");
	fgtest_xdp_bpf__destroy(f.s);
}

/* floodgate first, then xdp-filter. */
static void test_ours_then_filter(void)
{
	struct fx f;
	int rc;

	if (filter_begin(&f))
		return;
	if (!ASSERT_OK(fx_attach(&f), f.why))
		goto out;
	rc = sh("xdp-filter load " DEV0);
	ASSERT_OK(fx_list(&f), f.why);
	print_list("ours, then xdp-filter", &f.l);
	if (dispatcher_ok) {
		ASSERT_EQ(rc, 0, "xdp-filter joins our dispatcher");
		ASSERT_TRUE(f.l.n == 2 && f.l.e[0].ours && entry(&f.l, "xdpfilt"),
			    "both, ours first");
		ASSERT_OK(sh("xdp-filter unload " DEV0), "xdp-filter unload");
		ASSERT_OK(fx_list(&f), f.why);
		ASSERT_TRUE(f.l.n == 1 && f.l.e[0].ours, "xdp-filter leaving leaves ours");
		all_seen(&f, 200, "and ours still sees every frame");
	} else {
		ASSERT_NEQ(rc, 0, "no dispatcher: xdp-filter refuses to replace ours");
		ASSERT_TRUE(f.l.n == 1 && f.l.e[0].ours && f.l.e[0].id == f.a.prog_id,
			    "ours untouched");
	}
	ASSERT_OK(fx_detach(&f, NULL), f.why);
	nothing_left();
out:
	sh("xdp-filter unload --all");
	fgtest_xdp_bpf__destroy(f.s);
}

/* A daemon killed with SIGKILL: its netlink attach (alone or the
 * dispatcher) and a pinned link stay; an unpinned link goes. */
static int child_attach_and_die(struct fx *f)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (fg_xdp_attach(&f->p, ifx(), &f->o, &f->a, NULL))
			_exit(1);
		raise(SIGKILL);
		_exit(2);
	}
	if (waitpid(pid, &st, 0) != pid)
		return -ECHILD;
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL ? 0 : -EIO;
}

static void test_sigkill(void)
{
	struct fx f;

	if (fx_setup(&f, 1500, "veth"))
		goto out;
	ASSERT_OK(child_attach_and_die(&f), "libxdp: attached, then SIGKILL");
	ASSERT_OK(fx_list(&f), f.why);
	ASSERT_TRUE(f.l.n == 1 && f.l.e[0].ours, "libxdp: still attached");
	all_seen(&f, 100, "libxdp: still counting");
	ASSERT_OK(fx_detach(&f, NULL), f.why);

	f.o = (struct fg_xdp_opts){ .how = FG_XDP_EXCLUSIVE, .link_pin = "/sys/fs/bpf/fgx_kill" };
	ASSERT_OK(child_attach_and_die(&f), "pinned link: attached, then SIGKILL");
	ASSERT_OK(fx_list(&f), f.why);
	ASSERT_TRUE(f.l.n == 1 && f.l.e[0].ours && f.l.via_link, "pinned link: still attached");
	ASSERT_OK(fx_detach(&f, f.o.link_pin), f.why);

	f.o.link_pin = NULL;
	ASSERT_OK(child_attach_and_die(&f), "unpinned link: attached, then SIGKILL");
	ASSERT_OK(fx_list(&f), f.why);
	ASSERT_EQ(f.l.n, 0, "unpinned link: gone with the process");
out:
	fgtest_xdp_bpf__destroy(f.s);
}

struct sender {
	volatile int stop;
	long sent;
};

static void *sender_main(void *arg)
{
	struct sender *sd = arg;

	sd->sent = send_marker(0, &sd->stop);
	return NULL;
}

/* Adopt after a restart: the same program is kept; a changed one (other
 * rodata) replaces it while frames flow, and no frame goes unseen. */
static void adopt_under_traffic(const struct fg_xdp_opts *o, const char *what)
{
	struct fgtest_xdp_bpf *same = NULL, *s1 = NULL;
	struct fx f;
	struct sender sd = {};
	pthread_t th;
	__u64 c0, c1;
	__u32 old_id;

	if (fx_setup(&f, 1500, "veth"))
		goto out;
	f.o = *o;
	same = load_fgtest(0, bpf_map__fd(f.s->maps.fgt_cnt));
	s1 = load_fgtest(1, bpf_map__fd(f.s->maps.fgt_cnt));
	if (!ASSERT_TRUE(same && s1, "restarted copies load") || !ASSERT_OK(fx_attach(&f), f.why))
		goto out;
	old_id = f.a.prog_id;
	fg_xdp_att_close(&f.a);

	f.p = prog_of(same, same->progs.fgtest);
	if (!ASSERT_OK(fx_adopt(&f), f.why))
		goto out;
	ASSERT_TRUE(f.a.kept, "same code, same rodata: kept");
	ASSERT_EQ(f.a.prog_id, old_id, "the same program runs");
	fg_xdp_att_close(&f.a);

	if (!ASSERT_OK(pthread_create(&th, NULL, sender_main, &sd), "sender"))
		goto out;
	usleep(50 * 1000);
	f.p = prog_of(s1, s1->progs.fgtest);
	ASSERT_OK(fx_adopt(&f), f.why);
	usleep(50 * 1000);
	sd.stop = 1;
	pthread_join(th, NULL);
	settle();
	ASSERT_TRUE(!f.a.kept, "changed rodata: replaced");
	ASSERT_NEQ(f.a.prog_id, old_id, "another program runs");
	fg_xdp_att_close(&f.a);
	c0 = counted(f.s, 0);
	c1 = counted(f.s, 1);
	printf("  info: adopt (%s, %s): %ld frames sent, old saw %llu, new saw %llu, "
	       "unseen %lld, seen twice %lld, overlap %.3f ms\n",
	       what, f.a.dispatcher ? "dispatcher" : "alone", sd.sent, (unsigned long long)c0,
	       (unsigned long long)c1, (long long)sd.sent - (long long)(c0 + c1),
	       (long long)(c0 + c1) - sd.sent, f.a.overlap_ns / 1e6);
	ASSERT_TRUE(c0 > 0 && c1 > 0, "frames flowed before and after the swap");
	ASSERT_GE((long long)(c0 + c1), sd.sent, "no frame unseen by floodgate");
	if (!f.a.dispatcher)
		ASSERT_EQ(c0 + c1, sd.sent, "alone: an atomic swap, no frame seen twice");
	ASSERT_OK(fx_list(&f), f.why);
	ASSERT_TRUE(f.l.n == 1 && f.l.e[0].ours, "one copy of ours left");
	ASSERT_OK(fx_detach(&f, f.o.link_pin), f.why);
out:
	fgtest_xdp_bpf__destroy(s1);
	fgtest_xdp_bpf__destroy(same);
	fgtest_xdp_bpf__destroy(f.s);
}

static void test_adopt_libxdp(void)
{
	struct fg_xdp_opts o = libxdp_opts();

	adopt_under_traffic(&o, "libxdp");
}

static void test_adopt_exclusive(void)
{
	struct fg_xdp_opts o = { .how = FG_XDP_EXCLUSIVE, .link_pin = "/sys/fs/bpf/fgx_adopt" };

	adopt_under_traffic(&o, "exclusive");
}

/* MTU 9000 on veth needs a frags-aware program in native mode. */
static void test_jumbo_frags(void)
{
	struct fx f;

	if (fx_setup(&f, 9000, "veth mtu 9000"))
		goto out;
	f.o.mode = FG_XDP_NATIVE;
	f.o.how = FG_XDP_EXCLUSIVE;
	f.p = prog_of(f.s, f.s->progs.fgt_pass); /* SEC("xdp"): no frags */
	ASSERT_EQ(fx_attach(&f), -ERANGE, "a non-frags program is refused at mtu 9000");
	printf("  info: non-frags, mtu 9000: %s\n", f.why);
	f.o.how = FG_XDP_LIBXDP;
	f.p = prog_of(f.s, f.s->progs.fgtest); /* SEC("xdp.frags") */
	if (!ASSERT_OK(fx_attach(&f), f.why))
		goto out;
	if (have_filter) {
		int rc = sh("xdp-filter load " DEV0);

		/* xdp-filter is not frags-aware: with a dispatcher it would
		 * make it non-frags, which the device refuses; without one it
		 * cannot share. Either way ours stays. */
		ASSERT_NEQ(rc, 0, "xdp-filter cannot join at mtu 9000");
		if (!rc)
			sh("xdp-filter unload --all");
	}
	ASSERT_OK(fx_list(&f), f.why);
	ASSERT_TRUE(f.l.n == 1 && f.l.e[0].ours, "ours runs at mtu 9000");
	if (dispatcher_ok)
		ASSERT_TRUE(f.l.frags, "a frags-aware dispatcher for a frags-aware component");
	ASSERT_OK(fx_detach(&f, NULL), f.why);
out:
	fgtest_xdp_bpf__destroy(f.s);
}

/* Two interfaces, one native and one generic: each its own attach (and
 * its own dispatcher, where there is one); detaching one leaves the other.
 * f's attachment and listing are DEV0's; a1 and l1 fgy0's. */
static void test_two_interfaces(void)
{
	struct fx f;
	struct fg_xdp_att a1;
	struct fg_xdp_list l1;
	int if1;

	if (fx_setup(&f, 1500, "veth") ||
	    !ASSERT_OK(sh("ip link add fgy0 type veth peer name fgy1 && ip link set fgy0 up && "
			  "ip link set fgy1 up"),
		       "second veth"))
		goto out;
	if1 = (int)if_nametoindex("fgy0");
	if (!ASSERT_OK(fx_attach(&f), f.why))
		goto out;
	f.o.mode = FG_XDP_SKB;
	if (!ASSERT_OK(fg_xdp_attach(&f.p, if1, &f.o, &a1, f.why), f.why))
		goto out;
	ASSERT_OK(fx_list(&f), f.why);
	ASSERT_OK(fg_xdp_list(if1, OURS, &l1, f.why), f.why);
	print_list(DEV0, &f.l);
	print_list("fgy0", &l1);
	ASSERT_TRUE(f.l.n == 1 && f.l.e[0].ours && f.l.mode == FG_XDP_NATIVE, "native on " DEV0);
	ASSERT_TRUE(l1.n == 1 && l1.e[0].ours && l1.mode == FG_XDP_SKB, "generic on fgy0");
	ASSERT_NEQ(f.l.e[0].id, l1.e[0].id, "a program each");
	if (dispatcher_ok)
		ASSERT_TRUE(f.l.dispatcher_id && l1.dispatcher_id &&
				    f.l.dispatcher_id != l1.dispatcher_id,
			    "a dispatcher each");
	ASSERT_OK(fx_detach(&f, NULL), f.why);
	ASSERT_OK(fg_xdp_list(if1, OURS, &l1, f.why), f.why);
	ASSERT_TRUE(l1.n == 1 && l1.e[0].ours, "fgy0 keeps its program");
	ASSERT_OK(fg_xdp_detach_ours(if1, OURS, NULL, f.why), f.why);
	ASSERT_EQ(pin_dirs(), 0, "no dispatcher pins left");
out:
	sh("ip link del fgy0");
	fgtest_xdp_bpf__destroy(f.s);
}

/* Deleted and recreated: the program goes with the device; the new
 * device (new ifindex) is free and takes an attach again. */
static void test_iface_recreated(void)
{
	struct fx f;
	int old_if, pins;

	if (fx_setup(&f, 1500, "veth") || !ASSERT_OK(fx_attach(&f), f.why))
		goto out;
	old_if = ifx();
	ASSERT_OK(veth(1500), "delete and recreate the pair");
	pins = pin_dirs();
	printf("  info: after the device went: ifindex %d -> %d, dispatcher pin dirs left: %d\n",
	       old_if, ifx(), pins);
	ASSERT_EQ(pins, dispatcher_ok ? 1 : 0, "a dispatcher's pins outlive its device");
	ASSERT_OK(fx_list(&f), f.why);
	ASSERT_EQ(f.l.n, 0, "the new device is free");
	ASSERT_OK(fx_attach(&f), f.why);
	ASSERT_OK(fx_detach(&f, NULL), f.why);
	if (dispatcher_ok)
		ASSERT_OK(libxdp_clean_references(old_if), "clean the dead device's pins");
	ASSERT_EQ(pin_dirs(), 0, "no dispatcher pins left");
out:
	fgtest_xdp_bpf__destroy(f.s);
}

/* ns per packet of a trivial program direct, and behind the dispatcher. */
static double ns_per_run(int prog_fd, __u32 *retval)
{
	unsigned char f[64] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00
	};
	double best = 1e18;

	for (int i = 0; i < 5; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, t, .data_in = f, .data_size_in = sizeof(f),
			    .repeat = 1000000);

		if (bpf_prog_test_run_opts(prog_fd, &t))
			return -1;
		*retval = t.retval;
		if (t.duration < best)
			best = t.duration;
	}
	return best;
}

/* libxdp's own dispatcher object with n empty slots (stubs returning the
 * "continue" value): what it costs before any component runs. */
static int stub_dispatcher(int n, struct xdp_program **out)
{
	DECLARE_LIBXDP_OPTS(xdp_program_opts, xo, .find_filename = "xdp-dispatcher.o",
			    .prog_name = "xdp_dispatcher");
	struct xdp_dispatcher_config conf = {
		.magic = XDP_DISPATCHER_MAGIC,
		.dispatcher_version = XDP_DISPATCHER_VERSION,
		.num_progs_enabled = (__u8)n,
	};
	struct xdp_program *xp = xdp_program__create(&xo);
	struct bpf_object *obj;
	struct bpf_map *m;
	struct bpf_program *q;
	int err;

	if (!xp)
		return -errno;
	for (int i = 0; i < n; i++)
		conf.chain_call_actions[i] = 1u << XDP_PASS | 1u << XDP_DISPATCHER_RETVAL;
	obj = xdp_program__bpf_obj(xp);
	m = bpf_object__next_map(obj, NULL);
	bpf_object__for_each_program(q, obj)
		bpf_program__set_autoload(q, !strcmp(bpf_program__name(q), "xdp_dispatcher"));
	err = m ? bpf_map__set_initial_value(m, &conf, sizeof(conf)) : -ENOENT;
	if (!err)
		err = bpf_object__load(obj);
	if (err) {
		xdp_program__close(xp);
		return err;
	}
	*out = xp;
	return 0;
}

/* prog attached with f->o beside fgt_pass (or as it): 0 and the ns per
 * packet of the device's dispatcher, its verdict checked under `check`;
 * -1 with the failed check counted. */
static int dispatcher_ns(struct fx *f, struct fg_xdp_prog *prog, const char *check, double *ns)
{
	__u32 r = 0;
	int fd;

	if (!ASSERT_OK(fg_xdp_attach(prog, ifx(), &f->o, &f->a, f->why), f->why) ||
	    !ASSERT_OK(fg_xdp_list(ifx(), "fgt_pass", &f->l, f->why), f->why))
		return -1;
	fd = bpf_prog_get_fd_by_id(f->l.dispatcher_id);
	*ns = ns_per_run(fd, &r);
	close(fd);
	ASSERT_EQ(r, XDP_PASS, check);
	return 0;
}

/* With freplace: one component (libxdp freplaces the dispatcher's entry
 * itself), then two (fgtest at priority 60 behind fgt_pass). */
static void measure_real_dispatcher(struct fgtest_xdp_bpf *s, double direct)
{
	struct fg_xdp_prog pass = prog_of(s, s->progs.fgt_pass), test = prog_of(s, s->progs.fgtest);
	struct fx f = { .o = libxdp_opts() };
	double one, two, direct2;
	__u32 r = 0;

	if (!ASSERT_OK(veth(1500), "veth") ||
	    dispatcher_ns(&f, &pass, "dispatcher, one component: XDP_PASS", &one))
		return;
	f.o.run_prio = 60;
	if (dispatcher_ns(&f, &test, "dispatcher, two components: XDP_PASS", &two))
		return;
	direct2 = ns_per_run(bpf_program__fd(s->progs.fgtest), &r);
	printf("  info: cost: fgt_pass direct %.1f ns/packet, alone in libxdp's dispatcher %.1f ns; "
	       "fgtest direct %.1f ns; both in the dispatcher %.1f ns (dispatcher share %.1f ns)\n",
	       direct, one, direct2, two, two - direct - direct2);
	fx_detach(&f, NULL);
	fg_xdp_detach_ours(ifx(), "fgt_pass", NULL, f.why);
}

static int stub_fd(struct xdp_program *xp)
{
	return bpf_program__fd(
		bpf_object__find_program_by_name(xdp_program__bpf_obj(xp), "xdp_dispatcher"));
}

static void test_dispatcher_cost(void)
{
	struct fgtest_xdp_bpf *s = load_fgtest(0, -1);
	struct xdp_program *d1 = NULL, *d10 = NULL;
	__u32 r0 = 0, r1 = 0, r2 = 0;
	double direct, disp1, disp10;

	if (!ASSERT_TRUE(s, "fgtest loads"))
		goto out;
	direct = ns_per_run(bpf_program__fd(s->progs.fgt_pass), &r0);
	ASSERT_EQ(r0, XDP_PASS, "direct: XDP_PASS");
	if (dispatcher_ok) {
		measure_real_dispatcher(s, direct);
		goto out;
	}
	/* no freplace here: the dispatcher's own code, stubs in its slots */
	if (stub_dispatcher(1, &d1) || stub_dispatcher(10, &d10)) {
		fg_test_skip("libxdp's xdp-dispatcher.o cannot be opened or loaded");
		goto out;
	}
	disp1 = ns_per_run(stub_fd(d1), &r1);
	disp10 = ns_per_run(stub_fd(d10), &r2);
	ASSERT_EQ(r1, XDP_PASS, "dispatcher, 1 empty slot: XDP_PASS");
	ASSERT_EQ(r2, XDP_PASS, "dispatcher, 10 empty slots: XDP_PASS");
	printf("  info: cost (no freplace on this kernel: stubs in the slots): trivial program "
	       "direct %.1f ns/packet; libxdp's dispatcher with 1 slot %.1f ns, with 10 slots "
	       "%.1f ns (%.2f ns a slot)\n",
	       direct, disp1, disp10, (disp10 - disp1) / 9);
out:
	xdp_program__close(d10);
	xdp_program__close(d1);
	fgtest_xdp_bpf__destroy(s);
}

static int quiet_libxdp(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	return getenv("FGT_VERBOSE") || level == LIBXDP_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

static int quiet_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	return getenv("FGT_VERBOSE") ? vfprintf(stderr, fmt, ap) : 0;
}

/* A pin dir libxdp left for a dispatcher: removed only once that program
 * no longer runs on its device, never while libxdp's lock is held. The
 * "dispatcher" is a program attached directly (a real one needs freplace):
 * the check is by its id on the device, as for a real dispatcher. */
static void test_dead_dispatcher_dir(void)
{
	const char *base = "/sys/fs/bpf/fgt-xdp";
	char dir[128], pin[160];
	int map_fd = -1, lock_fd = -1;
	struct fx f;
	__u32 id = 0;

	if (fx_setup(&f, 1500, "veth") ||
	    attach_direct(&f, f.s->progs.fgt_pass, "the stand-in dispatcher runs", &id))
		goto out;
	snprintf(dir, sizeof(dir), "%s/dispatch-%d-%u", base, ifx(), id);
	snprintf(pin, sizeof(pin), "%s/prog0-prog", dir);
	map_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "fgt_pin", 4, 4, 1, NULL);
	if (!ASSERT_OK(sh("mkdir -p %s", dir), "mkdir") || !ASSERT_TRUE(map_fd >= 0, "a map") ||
	    !ASSERT_OK(bpf_obj_pin(map_fd, pin), "a pin in the dir"))
		goto out;
	ASSERT_EQ(fg_xdp_remove_dead_dispatcher(base, ifx(), id, f.why), -EBUSY,
		  "it still runs: kept");
	ASSERT_STR_CONTAINS(f.why, "still runs", "says why");
	ASSERT_OK(access(pin, F_OK), "its pin is still there");
	ASSERT_OK(bpf_xdp_detach(ifx(), XDP_FLAGS_DRV_MODE, NULL), "the dispatcher goes");
	lock_fd = open(base, O_RDONLY | O_DIRECTORY);
	if (!ASSERT_TRUE(lock_fd >= 0 && !flock(lock_fd, LOCK_EX), "hold libxdp's lock"))
		goto out;
	ASSERT_EQ(fg_xdp_remove_dead_dispatcher(base, ifx(), id, f.why), -EAGAIN,
		  "libxdp's lock held: not now, and no waiting");
	ASSERT_OK(access(pin, F_OK), "its pin is still there");
	flock(lock_fd, LOCK_UN);
	ASSERT_OK(fg_xdp_remove_dead_dispatcher(base, ifx(), id, f.why), f.why);
	ASSERT_TRUE(access(dir, F_OK) && errno == ENOENT, "the dir is gone");
	ASSERT_EQ(fg_xdp_remove_dead_dispatcher(base, ifx(), id, f.why), -ENOENT,
		  "again: nothing there");
	ASSERT_OK(access(base, F_OK), "libxdp's base dir stays");
out:
	if (lock_fd >= 0)
		close(lock_fd);
	if (map_fd >= 0)
		close(map_fd);
	sh("rm -rf %s", base);
	fgtest_xdp_bpf__destroy(f.s);
}

int main(int argc, char **argv)
{
	char why[FG_WHY_LEN];

	if (fg_test_init_root(argc, argv, "test_xdpattach", "needs root (namespaces, XDP)"))
		return 0;
	if (private_namespaces(why))
		return fg_test_skip_all("test_xdpattach", "cannot make private namespaces: %s",
					why);
	libbpf_set_print(quiet_libbpf);
	libxdp_set_print(quiet_libxdp);
	dispatcher_ok = !fg_xdp_probe_dispatcher(no_dispatcher);
	have_filter = !sh("command -v xdp-filter");
	FG_RUN_EACH(test_probe, test_libxdp_alone, test_floodgate_program,
		    test_refuses_direct_program, test_bad_input, test_exclusive,
		    test_filter_then_ours, test_ours_then_filter, test_sigkill, test_adopt_libxdp,
		    test_adopt_exclusive, test_jumbo_frags, test_two_interfaces,
		    test_iface_recreated, test_dispatcher_cost, test_dead_dispatcher_dir);
	sh("ip link del " DEV0);
	return fg_test_summary();
}
