// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The policy's xdp_attach, xdp_priority and xdp_chain (policy.c), how
 * `floodgate check` prints them (policy_print.c), and how floodgated
 * resolves them (attach.c fg_attach_conf_init, which probes the kernel for
 * libxdp's dispatcher: auto must follow the probe). No attach here: that
 * is tests/test_xdpattach.c and tests/e2e_xdpattach.sh.
 * Last line: "N passed, N failed, N skipped".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/bpf.h>
#include "fgtest.h"
#include "attach/attach.h"
#include "policy/policy.h"
#include "polcase.h"
#include "attach/xdpattach.h"
#include "lib/sysutil.h"

static int parse(const char *yaml, struct fg_config *cfg, struct fg_err *err)
{
	return fg_config_parse(yaml, strlen(yaml), "t.yaml", cfg, err);
}

static void test_defaults(void)
{
	struct fg_config cfg;
	struct fg_err err;

	if (!ASSERT_OK(parse("rules: []\n", &cfg, &err), err.msg))
		return;
	ASSERT_EQ(cfg.xdp_attach, FG_ATTACH_AUTO, "xdp_attach defaults to auto");
	ASSERT_EQ(cfg.xdp_priority, FG_XDP_PRIO_DEFAULT, "xdp_priority defaults to first (1)");
	ASSERT_EQ(cfg.xdp_chain, 1u << XDP_PASS, "xdp_chain defaults to [pass]");
	fg_config_free(&cfg);
}

static void test_good(void)
{
	static const struct {
		const char *yaml;
		int attach;
		unsigned int prio;
		__u32 chain;
	} good[] = {
		{ "xdp_attach: exclusive\n", FG_ATTACH_EXCLUSIVE, FG_XDP_PRIO_DEFAULT,
		  1u << XDP_PASS },
		{ "xdp_attach: libxdp\n", FG_ATTACH_LIBXDP, FG_XDP_PRIO_DEFAULT, 1u << XDP_PASS },
		{ "xdp_attach: auto\nxdp_priority: 0\n", FG_ATTACH_AUTO, 0, 1u << XDP_PASS },
		{ "xdp_attach: libxdp\nxdp_priority: 1000\nxdp_chain: [pass, drop]\n",
		  FG_ATTACH_LIBXDP, 1000, (1u << XDP_PASS) | (1u << XDP_DROP) },
		{ "xdp_chain: [aborted, drop, pass, tx, redirect]\n", FG_ATTACH_AUTO,
		  FG_XDP_PRIO_DEFAULT, 0x1f },
		{ "xdp_priority: 60\n", FG_ATTACH_AUTO, 60, 1u << XDP_PASS },
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct fg_config cfg;
		struct fg_err err;
		char name[96];

		snprintf(name, sizeof(name), "good[%zu]", i);
		if (!ASSERT_OK(parse(good[i].yaml, &cfg, &err), err.msg))
			continue;
		ASSERT_EQ(cfg.xdp_attach, good[i].attach, name);
		ASSERT_EQ(cfg.xdp_priority, good[i].prio, name);
		ASSERT_EQ(cfg.xdp_chain, good[i].chain, name);
		fg_config_free(&cfg);
	}
}

static void test_bad(void)
{
	pc_check_refused("tests/policies/cases/xdp_refused.cases", "bad");
}

static void test_print(void)
{
	struct fg_config cfg;
	struct fg_err err;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	if (!ASSERT_OK(parse("xdp_attach: libxdp\nxdp_priority: 7\nxdp_chain: [pass, drop]\n", &cfg,
			     &err),
		       err.msg))
		return;
	f = open_memstream(&buf, &len);
	if (!ASSERT_TRUE(f != NULL, "open_memstream"))
		goto out;
	fg_config_print(f, &cfg, true);
	fclose(f);
	ASSERT_STR_CONTAINS(buf, "xdp_attach:  libxdp (priority 7, chain on drop pass)", "printed");
out:
	free(buf);
	fg_config_free(&cfg);
}

/* auto follows the probe; libxdp and exclusive are what they say. */
static void test_resolve(void)
{
	char why[FG_WHY_LEN];
	bool dispatcher = !fg_xdp_probe_dispatcher(why);
	struct fg_attach_conf ac;

	printf("  info: libxdp dispatcher on this kernel: %s\n", dispatcher ? "yes" : why);
	if (!ASSERT_OK(fg_attach_conf_init(&ac, FG_XDP_AUTO, FG_ATTACH_AUTO, 1, 1u << XDP_PASS),
		       "auto"))
		return;
	ASSERT_EQ(ac.how, dispatcher ? FG_XDP_LIBXDP : FG_XDP_EXCLUSIVE, "auto follows the probe");
	ASSERT_TRUE(ac.from_auto, "auto: from_auto");
	ASSERT_EQ(ac.dispatcher, dispatcher, "auto: probed");
	if (!dispatcher)
		ASSERT_STR_CONTAINS(ac.probe, "dispatcher", "auto: the reason is kept for the log");
	ASSERT_OK(fg_attach_conf_init(&ac, FG_XDP_SKB, FG_ATTACH_LIBXDP, 9, 0x5), "libxdp");
	ASSERT_EQ(ac.how, FG_XDP_LIBXDP, "libxdp is libxdp, dispatcher or not");
	ASSERT_EQ(ac.run_prio, 9u, "priority kept");
	ASSERT_EQ(ac.chain, 0x5u, "chain kept");
	ASSERT_EQ(ac.xdp_mode, FG_XDP_SKB, "mode kept");
	ASSERT_OK(fg_attach_conf_init(&ac, FG_XDP_NATIVE, FG_ATTACH_EXCLUSIVE, 1, 0), "exclusive");
	ASSERT_EQ(ac.how, FG_XDP_EXCLUSIVE, "exclusive");
	ASSERT_TRUE(!ac.dispatcher && !ac.probe[0], "exclusive does not probe");
	ASSERT_EQ(fg_attach_conf_init(&ac, FG_XDP_AUTO, 3, 1, 0), -EINVAL, "xdp_attach 3");
	ASSERT_EQ(fg_attach_conf_init(&ac, FG_XDP_AUTO, -1, 1, 0), -EINVAL, "xdp_attach -1");
	ASSERT_EQ(fg_attach_conf_init(&ac, FG_XDP_AUTO, FG_ATTACH_LIBXDP, FG_XDP_PRIO_MAX + 1, 0),
		  -EINVAL, "priority above the maximum");
}

int main(int argc, char **argv)
{
	fg_test_init(argc, argv);
	FG_RUN(test_defaults);
	FG_RUN(test_good);
	FG_RUN(test_bad);
	FG_RUN(test_print);
	FG_RUN(test_resolve);
	return fg_test_summary();
}
