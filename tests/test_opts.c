// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The option and subcommand layer (user/lib/opts.c) on its own, table-driven:
 * long and short forms, "=" and attached values, unique prefixes and
 * ambiguity, missing values, unknown options, positional limits, "--",
 * optional values, callbacks, and the generated help. No root needed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include "fgtest.h"
#include "lib/opts.h"
#include "lib/sysutil.h"

struct tcfg {
	const char *dir;
	int verbose;
	bool json;
	__u64 n;
	bool countdown;
	bool watch;
	__u64 secs;
	int family;
	const char *rule;
	__u64 every;
};

#define T struct tcfg
static const struct fg_opt g_opts[] = {
	FG_OPT_STR("pin-dir", 'p', T, dir, "DIR", "pin dir"),
	FG_OPT_COUNT("verbose", 'v', T, verbose, "debug output"),
	FG_OPT_HELP("help"),
	FG_OPT_END,
};
static const struct fg_opt status_opts[] = {
	FG_OPT_BOOL("json", 'j', T, json, "JSON output"),
	FG_OPT_CHOICE(NULL, '4', T, family, 4, "-4 and -6 exclude each other", "IPv4"),
	FG_OPT_CHOICE(NULL, '6', T, family, 6, "-4 and -6 exclude each other", "IPv6"),
	FG_OPT_END,
};
static const struct fg_opt stats_opts[] = {
	FG_OPT_BOOL("json", 'j', T, json, "JSON output"),
	FG_OPT_FLAG_U64("watch", 'w', T, watch, secs, "SECS", 1, 60, "a number of seconds",
			"every SECS"),
	{ .name = "every",
	  .kind = FGO_U64,
	  .flags = FG_OPT_OPTIONAL,
	  .off = FG_OPT_AT(T, every, __u64),
	  .arg = "N",
	  .min = 1,
	  .max = 9,
	  .what = "a digit",
	  .help = "an optional number" },
	FG_OPT_END,
};
static const struct fg_opt top_opts[] = {
	FG_OPT_U64("count", 'n', T, n, "N", 1, 100, "a count", "show N"),
	FG_OPT_BOOL("countdown", 0, T, countdown, "count down"),
	FG_OPT_END,
};
static const struct fg_opt mode_opts[] = {
	FG_OPT_STR("rule", 'r', T, rule, "NAME", "only this rule"),
	FG_OPT_END,
};
#undef T

static int run_nothing(void *cfg)
{
	(void)cfg;
	return 0;
}

static const struct fg_cmd t_cmds[] = {
	{ "status", "[--json]", "status", 0, 0, status_opts, run_nothing },
	{ "stats", "[--json] [--watch [SECS]]", "counters", 0, 0, stats_opts, run_nothing },
	{ "top", "[-n N]", "top sources", 0, 0, top_opts, run_nothing },
	{ "mode", "enforce|shadow [--rule NAME]", "mode", 1, 1, mode_opts, run_nothing },
	{ "check", "FILE", "check a file", 1, 1, NULL, run_nothing },
	{ NULL },
};
static const struct fg_prog t_prog = {
	.name = "t",
	.usage = "[--pin-dir DIR] COMMAND [ARGS]",
	.opts = g_opts,
	.cmds = t_cmds,
};
/* a program without commands: one or two positional words */
static const struct fg_prog t_plain = {
	.name = "plain",
	.usage = "A [B]",
	.opts = g_opts,
	.min_pos = 1,
	.max_pos = 2,
};

/* One command line and what must come of it. */
struct pcase {
	const char *args[8]; /* after argv[0], NULL-terminated */
	const char *why;     /* NULL: must parse; else a substring of the error */
	const char *cmd;     /* the command found (also on an error inside it) */
	struct tcfg want;    /* fields compared: all of them */
	int npos;
	const char *pos0;
	bool help;
};

static const struct pcase cases[] = {
	/* commands: exact, unique prefix, ambiguous, unknown, missing */
	{ { "status" }, NULL, "status" },
	{ { "sta" }, "ambiguous command \"sta\": could be status stats" },
	{ { "stat" }, "ambiguous command \"stat\": could be status stats" },
	{ { "stats" }, NULL, "stats" },
	{ { "to" }, NULL, "top" },
	{ { "frob" }, "unknown command \"frob\"" },
	{ { NULL }, "no command given" },
	/* global options before and after the command, every form of a value */
	{ { "-p", "/x", "status" }, NULL, "status", { .dir = "/x" } },
	{ { "-p/x", "status" }, NULL, "status", { .dir = "/x" } },
	{ { "--pin-dir", "/x", "status" }, NULL, "status", { .dir = "/x" } },
	{ { "--pin-dir=/x", "status" }, NULL, "status", { .dir = "/x" } },
	{ { "--pin-dir=", "status" }, NULL, "status", { .dir = "" } },
	{ { "--pin", "/x", "status" }, NULL, "status", { .dir = "/x" } },
	{ { "status", "-p", "/y" }, NULL, "status", { .dir = "/y" } },
	{ { "-p", "/x", "status", "--pin-dir=/y" }, NULL, "status", { .dir = "/y" } },
	/* missing values name the option and the value it needs */
	{ { "-p" }, "option -p needs a value (DIR)" },
	{ { "--pin-dir" }, "option --pin-dir needs a value (DIR)" },
	{ { "status", "--pin-dir" }, "status: option --pin-dir needs a value (DIR)", "status" },
	{ { "mode", "shadow", "--rule" }, "mode: option --rule needs a value (NAME)", "mode" },
	/* a required value is the next word even if it looks like an option */
	{ { "mode", "shadow", "-r", "-x" }, NULL, "mode", { .rule = "-x" }, 1, "shadow" },
	/* unknown options, options of another command, values where none go */
	{ { "--frob", "status" }, "unknown option --frob" },
	{ { "status", "--frob" }, "status: unknown option --frob", "status" },
	{ { "status", "-x" }, "status: unknown option -x", "status" },
	{ { "status", "--count", "3" }, "status: unknown option --count", "status" },
	{ { "status", "--json=yes" }, "status: option --json takes no value", "status" },
	{ { "--=x", "status" }, "unknown option --" },
	/* long prefixes: exact beats prefix, unique prefix, ambiguous prefix */
	{ { "top", "--count", "5" }, NULL, "top", { .n = 5 } },
	{ { "top", "--countd" }, NULL, "top", { .countdown = true } },
	{ { "top", "--coun", "5" },
	  "top: ambiguous option --coun: could be --count --countdown",
	  "top" },
	{ { "top", "--js" }, "top: unknown option --js", "top" },
	/* numbers: ranges and strictness */
	{ { "top", "-n", "100" }, NULL, "top", { .n = 100 } },
	{ { "top", "-n7" }, NULL, "top", { .n = 7 } },
	{ { "top", "--count=7" }, NULL, "top", { .n = 7 } },
	{ { "top", "-n", "0" }, "top: -n: \"0\" is not a count (1..100)", "top" },
	{ { "top", "-n", "101" }, "is not a count (1..100)", "top" },
	{ { "top", "-n", "-3" }, "top: -n: \"-3\" is not a count", "top" },
	{ { "top", "-n", " 5" }, "is not a count", "top" },
	{ { "top", "-n", "5x" }, "is not a count", "top" },
	{ { "top", "-n", "99999999999999999999" }, "is not a count", "top" },
	{ { "top", "--count=" }, "top: --count: \"\" is not a count", "top" },
	{ { "top", "-nj" }, "top: -n: \"j\" is not a count", "top" },
	/* bundled flags and counted flags */
	{ { "-vv", "status" }, NULL, "status", { .verbose = 2 } },
	{ { "-v", "status", "-v", "--verbose" }, NULL, "status", { .verbose = 3 } },
	{ { "status", "-jv" }, NULL, "status", { .json = true, .verbose = 1 } },
	{ { "status", "-vjx" }, "status: unknown option -x", "status" },
	/* short-only options through one callback, which can refuse */
	{ { "status", "-4" }, NULL, "status", { .family = 4 } },
	{ { "status", "-4", "-6" }, "status: -6: -4 and -6 exclude each other", "status" },
	{ { "status", "--4" }, "status: unknown option --4", "status" },
	/* an optional value: "=" or a next word starting with a digit */
	{ { "stats", "--watch" }, NULL, "stats", { .watch = true, .secs = 1 } },
	{ { "stats", "--watch", "5" }, NULL, "stats", { .watch = true, .secs = 5 } },
	{ { "stats", "--watch=5" }, NULL, "stats", { .watch = true, .secs = 5 } },
	{ { "stats", "-w", "7" }, NULL, "stats", { .watch = true, .secs = 7 } },
	{ { "stats", "-w7" }, NULL, "stats", { .watch = true, .secs = 7 } },
	{ { "stats", "--watch", "--json" },
	  NULL,
	  "stats",
	  { .watch = true, .secs = 1, .json = true } },
	{ { "stats", "--watch=abc" },
	  "stats: --watch: \"abc\" is not a number of seconds",
	  "stats" },
	{ { "stats", "--watch", "0" }, "stats: --watch: \"0\" is not a number of seconds", "stats" },
	{ { "stats", "--watch", "abc" }, "stats: unexpected argument \"abc\"", "stats" },
	{ { "stats", "--every" }, NULL, "stats" },
	{ { "stats", "--every", "3" }, NULL, "stats", { .every = 3 } },
	{ { "stats", "--every=12" }, "stats: --every: \"12\" is not a digit (1..9)", "stats" },
	/* positional limits, "--", "-" */
	{ { "status", "extra" }, "status: unexpected argument \"extra\"", "status" },
	{ { "check" }, "check: expected FILE", "check" },
	{ { "check", "a", "b" }, "check: unexpected argument \"b\"", "check" },
	{ { "check", "a" }, NULL, "check", {}, 1, "a" },
	{ { "check", "-" }, NULL, "check", {}, 1, "-" },
	{ { "check", "--", "-p" }, NULL, "check", {}, 1, "-p" },
	{ { "check", "-p", "/x", "--", "--json" }, NULL, "check", { .dir = "/x" }, 1, "--json" },
	{ { "mode", "-r", "x", "shadow" }, NULL, "mode", { .rule = "x" }, 1, "shadow" },
	/* help stops parsing, globally or for a command */
	{ { "--help" }, NULL, NULL, {}, 0, NULL, true },
	{ { "-h", "--frob" }, NULL, NULL, {}, 0, NULL, true },
	{ { "status", "-h" }, NULL, "status", {}, 0, NULL, true },
	{ { "top", "--help", "--frob" }, NULL, "top", {}, 0, NULL, true },
	{ { "-vh", "status" }, NULL, NULL, { .verbose = 1 }, 0, NULL, true },
};

static int run_case(const struct fg_prog *prog, const char *const *args, struct tcfg *got,
		    struct fg_parsed *p, char *why)
{
	char *argv[10] = { (char *)prog->name };
	int argc = 1;

	for (; args[argc - 1] && argc < 9; argc++)
		argv[argc] = (char *)args[argc - 1];
	memset(got, 0, sizeof(*got));
	return fg_prog_parse(prog, argc, argv, got, p, why);
}

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

#define CHECK_FIELD(f)                                   \
	do {                                             \
		snprintf(n, sizeof(n), "%s: " #f, name); \
		ASSERT_EQ(got->f, want->f, n);           \
	} while (0)

static void check_fields(const char *name, const struct tcfg *got, const struct tcfg *want)
{
	char n[160];

	snprintf(n, sizeof(n), "%s: --pin-dir is \"%s\" (want \"%s\")", name,
		 got->dir ? got->dir : "(unset)", want->dir ? want->dir : "(unset)");
	ASSERT_TRUE(str_eq(got->dir, want->dir), n);
	snprintf(n, sizeof(n), "%s: --rule is \"%s\"", name, got->rule ? got->rule : "(unset)");
	ASSERT_TRUE(str_eq(got->rule, want->rule), n);
	CHECK_FIELD(verbose);
	CHECK_FIELD(json);
	CHECK_FIELD(n);
	CHECK_FIELD(countdown);
	CHECK_FIELD(watch);
	CHECK_FIELD(secs);
	CHECK_FIELD(family);
	CHECK_FIELD(every);
}

static void test_table(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct pcase *c = &cases[i];
		struct fg_parsed p;
		struct tcfg got;
		char why[FG_WHY_LEN], name[200] = "", *e = name;
		int err;

		for (int k = 0; c->args[k]; k++)
			e += snprintf(e, sizeof(name) - (size_t)(e - name) - 1, "%s'%s'",
				      k ? " " : "", c->args[k]);
		if (name == e)
			snprintf(name, sizeof(name), "(no arguments)");
		err = run_case(&t_prog, c->args, &got, &p, why);
		if (c->why) {
			ASSERT_EQ(err, -EINVAL, name);
			ASSERT_STR_CONTAINS(why, c->why, name);
		} else {
			ASSERT_EQ(err, 0, name);
			if (err)
				printf("  (%s: %s)\n", name, why);
			check_fields(name, &got, &c->want);
			ASSERT_EQ(p.npos, c->npos, name);
			if (c->pos0)
				ASSERT_TRUE(p.npos >= 1 && str_eq(p.pos[0], c->pos0), name);
			ASSERT_EQ(p.help, c->help, name);
		}
		ASSERT_TRUE(str_eq(p.cmd ? p.cmd->name : NULL, c->cmd), name);
	}
}

static void test_no_commands(void)
{
	static const struct {
		const char *args[6];
		const char *why;
		int npos;
	} pc[] = {
		{ { "a" }, NULL, 1 },
		{ { "a", "-p", "/x", "b" }, NULL, 2 },
		{ { NULL }, "expected A [B]" },
		{ { "a", "b", "c" }, "unexpected argument \"c\"" },
		{ { "-p" }, "option -p needs a value (DIR)" },
		{ { "status" }, NULL, 1 }, /* no commands: a word is a word */
	};

	for (size_t i = 0; i < sizeof(pc) / sizeof(pc[0]); i++) {
		struct fg_parsed p;
		struct tcfg got;
		char why[FG_WHY_LEN];
		int err = run_case(&t_plain, pc[i].args, &got, &p, why);

		if (pc[i].why) {
			ASSERT_EQ(err, -EINVAL, pc[i].why);
			ASSERT_STR_CONTAINS(why, pc[i].why, "plain: the error");
		} else {
			ASSERT_EQ(err, 0, "plain: parses");
			ASSERT_EQ(p.npos, pc[i].npos, "plain: positional words");
		}
		ASSERT_TRUE(p.cmd == NULL, "plain: no command");
	}
}

static void test_cmd_find(void)
{
	const struct fg_cmd *c;
	char why[FG_WHY_LEN];

	ASSERT_EQ(fg_cmd_find(t_cmds, "check", &c, why), 0, "exact name");
	ASSERT_TRUE(c && !strcmp(c->name, "check"), "exact name: check");
	ASSERT_EQ(fg_cmd_find(t_cmds, "m", &c, why), 0, "unique prefix m");
	ASSERT_TRUE(c && !strcmp(c->name, "mode"), "m is mode");
	ASSERT_EQ(fg_cmd_find(t_cmds, "s", &c, why), -EINVAL, "s is ambiguous");
	ASSERT_STR_CONTAINS(why, "could be status stats", "s: the candidates");
	ASSERT_TRUE(c == NULL, "ambiguous: no command");
	ASSERT_EQ(fg_cmd_find(t_cmds, "", &c, why), -ENOENT, "empty word");
	ASSERT_EQ(fg_cmd_find(t_cmds, "checks", &c, why), -ENOENT, "a longer word is no prefix");
}

static void test_parse_u64(void)
{
	static const struct {
		const char *s;
		__u64 min, max;
		int err;
		__u64 v;
	} nc[] = {
		{ "0", 0, 10, 0, 0 },
		{ "10", 0, 10, 0, 10 },
		{ "11", 0, 10, -ERANGE },
		{ "4", 5, 10, -ERANGE },
		{ "18446744073709551615", 0, UINT64_MAX, 0, UINT64_MAX },
		{ "18446744073709551616", 0, UINT64_MAX, -ERANGE },
		{ "", 0, 10, -EINVAL },
		{ " 5", 0, 10, -EINVAL },
		{ "+5", 0, 10, -EINVAL },
		{ "-5", 0, 10, -EINVAL },
		{ "5 ", 0, 10, -EINVAL },
		{ "0x5", 0, 10, -EINVAL },
		{ "5k", 0, 10, -EINVAL },
	};

	for (size_t i = 0; i < sizeof(nc) / sizeof(nc[0]); i++) {
		__u64 v = 12345;
		char name[64];

		snprintf(name, sizeof(name), "fg_opt_parse_u64(\"%s\", %llu, %llu)", nc[i].s,
			 (unsigned long long)nc[i].min, (unsigned long long)nc[i].max);
		ASSERT_EQ(fg_opt_parse_u64(nc[i].s, nc[i].min, nc[i].max, &v), nc[i].err, name);
		ASSERT_EQ(v, nc[i].err ? 12345 : nc[i].v, name);
	}
}

static char *help_of(const struct fg_prog *prog, const struct fg_cmd *cmd)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	fg_prog_help(f, prog, cmd);
	fclose(f);
	return buf;
}

/* The column where a line's help text starts: after the option and 2 spaces. */
static int help_column(const char *help, const char *opt)
{
	const char *l = strstr(help, opt), *p;

	if (!l)
		return -1;
	p = l + strlen(opt);
	while (*p == ' ')
		p++;
	while (l > help && l[-1] != '\n')
		l--;
	return (int)(p - l);
}

static void test_help(void)
{
	char *h = help_of(&t_prog, NULL);

	static const struct fg_want prog_help[] = {
		{ "Usage: t [--pin-dir DIR] COMMAND [ARGS]\n", "program help: usage" },
		{ "Commands (any unique prefix works):", "program help: commands" },
		{ "  stats [--json] [--watch [SECS]]\n                              counters\n",
		  "program help: a command, aligned (a long usage on a line of its own)" },
		{ "  status [--json]             status\n", "program help: a short one, aligned" },
		{ "  check FILE", "program help: check" },
		{ "Options for every command:\n", "program help: global options" },
		{ "  -p, --pin-dir DIR  pin dir\n", "program help: --pin-dir" },
		{ "  -h, --help", "program help: --help" },
	};
	ASSERT_CONTAINS_ALL(h, prog_help);
	ASSERT_TRUE(h && !strstr(h, "--json  JSON"), "program help: no command's options");
	for (const char *l = h; l && *l;) {
		size_t n = strcspn(l, "\n");

		if (!ASSERT_LE(n, 80, "program help: every line fits 80 columns"))
			break;
		l += n + (l[n] == '\n');
	}
	free(h);

	h = help_of(&t_prog, &t_cmds[2]);
	static const struct fg_want top_help[] = {
		{ "Usage: t top [-n N]\ntop sources\n", "top help: usage" },
		{ "  -n, --count N", "top help: -n" },
		{ "      --countdown", "top help: a long-only option" },
		{ "  -p, --pin-dir DIR", "top help: the global options too" },
	};
	ASSERT_CONTAINS_ALL(h, top_help);
	ASSERT_EQ(help_column(h, "--count N"), help_column(h, "--pin-dir DIR"),
		  "top help: one column for the help texts");
	free(h);

	h = help_of(&t_prog, &t_cmds[1]);
	ASSERT_STR_CONTAINS(h, "  -w, --watch [SECS]", "stats help: an optional value");
	free(h);

	h = help_of(&t_prog, &t_cmds[0]);
	ASSERT_STR_CONTAINS(h, "  -4 ", "status help: a short-only option");
	free(h);

	h = help_of(&t_plain, NULL);
	ASSERT_STR_CONTAINS(h, "Usage: plain A [B]\n", "plain help: usage");
	ASSERT_STR_CONTAINS(h, "\nOptions:\n", "plain help: options");
	ASSERT_TRUE(h && !strstr(h, "Commands"), "plain help: no commands");
	free(h);
}

/* fg_prog_args: the exit status main returns, with its output thrown away. */
static void test_prog_args(void)
{
	static const struct {
		const char *args[4];
		int rc;
	} ac[] = {
		{ { "status" }, -1 },	       { { "--help" }, 0 },
		{ { "top", "--help" }, 0 },    { { "-p" }, FG_EXIT_USAGE },
		{ { "frob" }, FG_EXIT_USAGE }, { { "top", "-n", "0" }, FG_EXIT_USAGE },
	};
	int null = open("/dev/null", O_WRONLY), out = dup(1), err = dup(2);

	if (null < 0 || out < 0 || err < 0) {
		fg_test_skip("cannot redirect stdout/stderr");
		return;
	}
	for (size_t i = 0; i < sizeof(ac) / sizeof(ac[0]); i++) {
		char *argv[6] = { "t" }, name[64];
		struct fg_parsed p;
		struct tcfg c = {};
		int argc = 1, rc;

		for (; ac[i].args[argc - 1]; argc++)
			argv[argc] = (char *)ac[i].args[argc - 1];
		fflush(stdout);
		dup2(null, 1);
		dup2(null, 2);
		rc = fg_prog_args(&t_prog, argc, argv, &c, &p);
		fflush(stdout);
		fflush(stderr);
		dup2(out, 1);
		dup2(err, 2);
		snprintf(name, sizeof(name), "fg_prog_args '%s%s%s'", argv[1] ? argv[1] : "",
			 argc > 2 ? " " : "", argc > 2 ? argv[2] : "");
		ASSERT_EQ(rc, ac[i].rc, name);
	}
	close(null);
	close(out);
	close(err);
}

int main(int argc, char **argv)
{
	fg_test_init(argc, argv);
	FG_RUN(test_table);
	FG_RUN(test_no_commands);
	FG_RUN(test_cmd_find);
	FG_RUN(test_parse_u64);
	FG_RUN(test_help);
	FG_RUN(test_prog_args);
	return fg_test_summary();
}
