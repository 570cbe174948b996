// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The option and subcommand layer: parsing, errors and help (see opts.h). */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "lib/opts.h"
#include "lib/sysutil.h"
#include "lib/units.h"
#include "lib/version.h"

#define MAX_TABS 3 /* a command's options, the program's, NULL */

struct parser {
	const struct fg_opt *tabs[MAX_TABS];
	const struct fg_cmd *cmd; /* the command being parsed, for messages */
	int argc, i;		  /* argv[i]: the next word */
	char **argv;
	void *cfg;
	struct fg_parsed *p;
	char *why;
};

static bool takes_value(const struct fg_opt *o)
{
	return o->arg != NULL;
}

/* Say what is wrong (prefixed by the command, if any); returns -EINVAL. */
static int __attribute__((format(printf, 2, 3))) fail(struct parser *ps, const char *fmt, ...)
{
	size_t n = 0;
	va_list ap;

	if (ps->cmd)
		n = (size_t)snprintf(ps->why, FG_WHY_LEN, "%s: ", ps->cmd->name);
	if (n >= FG_WHY_LEN)
		n = 0;
	va_start(ap, fmt);
	vsnprintf(ps->why + n, FG_WHY_LEN - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int fg_opt_fail(char *why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, FG_WHY_LEN, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int fg_opt_parse_u64(const char *s, __u64 min, __u64 max, __u64 *out)
{
	__u64 v;
	int err;

	err = fg_parse_u64(s, &v);
	if (err)
		return err;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

static int store_num(struct parser *ps, const struct fg_opt *o, const char *spelled,
		     const char *val)
{
	void *dst = (char *)ps->cfg + o->off;
	__u64 v;

	if (fg_opt_parse_u64(val, o->min, o->max, &v))
		return fail(ps, "%s: \"%s\" is not %s (%llu..%llu)", spelled, val,
			    o->what ? o->what : "a number", (unsigned long long)o->min,
			    (unsigned long long)o->max);
	if (o->kind == FGO_U64)
		*(__u64 *)dst = v;
	else if (o->kind == FGO_U32)
		*(__u32 *)dst = (__u32)v;
	else
		*(__u16 *)dst = (__u16)v;
	return 0;
}

/* Give option o (as the user spelled it) its value val (NULL: none). */
static int apply(struct parser *ps, const struct fg_opt *o, const char *spelled, const char *val)
{
	void *dst = (char *)ps->cfg + o->off;
	char msg[FG_WHY_LEN] = "";

	if (!val && takes_value(o) && o->kind != FGO_FUNC)
		return 0; /* an optional value left out: the default stands */
	switch (o->kind) {
	case FGO_BOOL:
		*(bool *)dst = true;
		return 0;
	case FGO_COUNT:
		(*(int *)dst)++;
		return 0;
	case FGO_STR:
		*(const char **)dst = val;
		return 0;
	case FGO_U64:
	case FGO_U32:
	case FGO_U16:
		return store_num(ps, o, spelled, val);
	case FGO_FUNC:
		if (o->fn(o, val, ps->cfg, msg))
			return fail(ps, "%s: %s", spelled, msg[0] ? msg : "bad value");
		return 0;
	case FGO_HELP:
		ps->p->help = true;
		return 0;
	case FGO_VERSION:
		ps->p->help = ps->p->version = true;
		return 0;
	case FGO_CHOICE:
		if (*(int *)dst && *(int *)dst != o->ival)
			return fail(ps, "%s: %s", spelled, o->what);
		*(int *)dst = o->ival;
		return 0;
	case FGO_END:
		break;
	}
	return fail(ps, "%s: option of unknown kind %d", spelled, (int)o->kind);
}

/* The next word as an optional value: only if it starts with a digit. */
static const char *optional_next(struct parser *ps)
{
	if (ps->i < ps->argc && isdigit((unsigned char)ps->argv[ps->i][0]))
		return ps->argv[ps->i++];
	return NULL;
}

static int list_prefixed(struct parser *ps, const char *body, size_t n)
{
	char names[256] = "";
	size_t used = 0;

	for (int t = 0; ps->tabs[t]; t++)
		for (const struct fg_opt *o = ps->tabs[t]; o->kind; o++)
			if (o->name && !strncmp(o->name, body, n) && used < sizeof(names))
				used += (size_t)snprintf(names + used, sizeof(names) - used,
							 " --%s", o->name);
	return fail(ps, "ambiguous option --%.*s: could be%s", (int)n, body, names);
}

/* Exact long name first, else a unique prefix. */
static int find_long(struct parser *ps, const char *body, size_t n, const struct fg_opt **out)
{
	const struct fg_opt *hit = NULL;
	int nhit = 0;

	for (int t = 0; n && ps->tabs[t]; t++) {
		for (const struct fg_opt *o = ps->tabs[t]; o->kind; o++) {
			if (!o->name || strncmp(o->name, body, n))
				continue;
			if (!o->name[n]) {
				*out = o;
				return 0;
			}
			hit = o;
			nhit++;
		}
	}
	if (nhit == 1) {
		*out = hit;
		return 0;
	}
	if (nhit > 1)
		return list_prefixed(ps, body, n);
	return fail(ps, "unknown option --%.*s", (int)n, body);
}

/* "--name", "--name=value", "--name value" */
static int parse_long(struct parser *ps, const char *body)
{
	const char *eq = strchr(body, '=');
	size_t n = eq ? (size_t)(eq - body) : strlen(body);
	const char *val = eq ? eq + 1 : NULL;
	const struct fg_opt *o = NULL;
	char spelled[64];
	int err;

	err = find_long(ps, body, n, &o);
	if (err)
		return err;
	snprintf(spelled, sizeof(spelled), "--%s", o->name);
	if (!takes_value(o)) {
		if (eq)
			return fail(ps, "option %s takes no value", spelled);
	} else if (!eq && (o->flags & FG_OPT_OPTIONAL)) {
		val = optional_next(ps);
	} else if (!eq) {
		if (ps->i >= ps->argc)
			return fail(ps, "option %s needs a value (%s)", spelled, o->arg);
		val = ps->argv[ps->i++];
	}
	return apply(ps, o, spelled, val);
}

static const struct fg_opt *find_short(struct parser *ps, char c)
{
	for (int t = 0; ps->tabs[t]; t++)
		for (const struct fg_opt *o = ps->tabs[t]; o->kind; o++)
			if (o->sname && o->sname == c)
				return o;
	return NULL;
}

/* "-x", "-fv" (bundled flags), "-xVALUE", "-x VALUE" */
static int parse_shorts(struct parser *ps, const char *s)
{
	for (; *s; s++) {
		const struct fg_opt *o = find_short(ps, *s);
		char spelled[3] = { '-', *s, 0 };
		const char *val = NULL;
		int err;

		if (!o)
			return fail(ps, "unknown option %s", spelled);
		if (!takes_value(o)) {
			err = apply(ps, o, spelled, NULL);
			if (err || ps->p->help)
				return err;
			continue;
		}
		if (s[1])
			val = s + 1;
		else if (o->flags & FG_OPT_OPTIONAL)
			val = optional_next(ps);
		else if (ps->i < ps->argc)
			val = ps->argv[ps->i++];
		else
			return fail(ps, "option %s needs a value (%s)", spelled, o->arg);
		return apply(ps, o, spelled, val);
	}
	return 0;
}

static int add_pos(struct parser *ps, const char *w, int max_pos)
{
	if (ps->p->npos >= max_pos || ps->p->npos >= FG_MAX_POS)
		return fail(ps, "unexpected argument \"%s\"", w);
	ps->p->pos[ps->p->npos++] = w;
	return 0;
}

/* Words from argv[ps->i] on. stop_at_word: return at the first positional
 * word, left in argv[ps->i] (options before a command). */
static int parse_words(struct parser *ps, int max_pos, bool stop_at_word)
{
	int err = 0;

	while (ps->i < ps->argc && !err && !ps->p->help) {
		const char *w = ps->argv[ps->i];

		if (w[0] != '-' || !w[1]) {
			if (stop_at_word)
				return 0;
			err = add_pos(ps, w, max_pos);
			ps->i++;
			continue;
		}
		ps->i++;
		if (!strcmp(w, "--")) {
			while (ps->i < ps->argc && !err && !stop_at_word)
				err = add_pos(ps, ps->argv[ps->i++], max_pos);
			return err;
		}
		err = w[1] == '-' ? parse_long(ps, w + 2) : parse_shorts(ps, w + 1);
	}
	return err;
}

int fg_cmd_find(const struct fg_cmd *cmds, const char *word, const struct fg_cmd **out, char *why)
{
	size_t n = strlen(word), used;
	int nhit = 0;

	*out = NULL;
	for (const struct fg_cmd *c = cmds; c->name; c++) {
		if (!strcmp(c->name, word)) {
			*out = c;
			return 0;
		}
		if (n && !strncmp(c->name, word, n)) {
			*out = c;
			nhit++;
		}
	}
	if (nhit == 1)
		return 0;
	*out = NULL;
	if (!nhit) {
		fg_why(why, "unknown command \"%s\"", word);
		return -ENOENT;
	}
	used = (size_t)snprintf(why, FG_WHY_LEN, "ambiguous command \"%s\": could be", word);
	for (const struct fg_cmd *c = cmds; c->name && used < FG_WHY_LEN; c++)
		if (!strncmp(c->name, word, n))
			used += (size_t)snprintf(why + used, FG_WHY_LEN - used, " %s", c->name);
	return -EINVAL;
}

/* The command word and everything after it. */
static int parse_command(struct parser *ps, const struct fg_prog *prog)
{
	struct fg_parsed *p = ps->p;
	int err, t = 0;

	if (ps->i >= ps->argc) {
		snprintf(ps->why, FG_WHY_LEN, "no command given");
		return -EINVAL;
	}
	err = fg_cmd_find(prog->cmds, ps->argv[ps->i++], &p->cmd, ps->why);
	if (err)
		return -EINVAL;
	ps->cmd = p->cmd;
	if (p->cmd->opts)
		ps->tabs[t++] = p->cmd->opts;
	ps->tabs[t++] = prog->opts;
	ps->tabs[t] = NULL;
	err = parse_words(ps, p->cmd->max_pos, false);
	if (err || p->help)
		return err;
	if (p->npos < p->cmd->min_pos)
		return fail(ps, "expected %s", p->cmd->usage);
	return 0;
}

int fg_prog_parse(const struct fg_prog *prog, int argc, char **argv, void *cfg, struct fg_parsed *p,
		  char *why)
{
	struct parser ps = { .argc = argc, .argv = argv, .i = 1, .cfg = cfg, .p = p, .why = why };
	int err;

	memset(p, 0, sizeof(*p));
	why[0] = 0;
	ps.tabs[0] = prog->opts;
	if (!prog->cmds) {
		err = parse_words(&ps, prog->max_pos, false);
		if (!err && !p->help && p->npos < prog->min_pos)
			err = fail(&ps, "expected %s", prog->usage);
		return err;
	}
	err = parse_words(&ps, 0, true);
	if (err || p->help)
		return err;
	return parse_command(&ps, prog);
}

int fg_prog_args(const struct fg_prog *prog, int argc, char **argv, void *cfg, struct fg_parsed *p)
{
	char why[512];

	if (fg_prog_parse(prog, argc, argv, cfg, p, why)) {
		fprintf(stderr, "%s: %s\n", prog->name, why);
		if (prog->cmds && !p->cmd)
			fg_prog_help(stderr, prog, NULL);
		else
			fprintf(stderr, "'%s%s%s --help' lists the options.\n", prog->name,
				p->cmd ? " " : "", p->cmd ? p->cmd->name : "");
		return FG_EXIT_USAGE;
	}
	if (p->version) {
		fg_version_print(stdout, prog->name);
		return 0;
	}
	if (p->help) {
		fg_prog_help(stdout, prog, p->cmd);
		return 0;
	}
	return -1;
}

/* --- help ---------------------------------------------------------------------- */

/* "-x, --name ARG", "    --name [ARG]", "-x ARG" */
static void opt_left(const struct fg_opt *o, char *buf, size_t len)
{
	bool opt = o->flags & FG_OPT_OPTIONAL;
	char s[5] = "    ";

	if (o->sname)
		snprintf(s, sizeof(s), "-%c%s", o->sname, o->name ? ", " : "");
	snprintf(buf, len, "%s%s%s%s%s%s%s", s, o->name ? "--" : "", o->name ? o->name : "",
		 o->arg ? " " : "", opt ? "[" : "", o->arg ? o->arg : "", opt ? "]" : "");
}

#define HELP_WIDTH 80 /* help fits 80 columns */
#define HELP_COL_MAX \
	30 /* the help text's column, at most; a longer left goes on a line of its own */

/* "  left  help", help wrapped at HELP_WIDTH from column col. */
static void print_row(FILE *f, const char *left, const char *help, int col)
{
	int at = fprintf(f, "  %s", left);
	const char *w = help;

	if (at + 2 > col) {
		fputc('\n', f);
		at = 0;
	}
	while (*w) {
		size_t n = strcspn(w, " ");

		if (at > col && at + 1 + (int)n > HELP_WIDTH) {
			fputc('\n', f);
			at = 0;
		}
		if (at < col)
			at += fprintf(f, "%*s", col - at, "");
		else
			at += fprintf(f, " ");
		at += fprintf(f, "%.*s", (int)n, w);
		w += n;
		w += strspn(w, " ");
	}
	fputc('\n', f);
}

/* "Usage: prog cmd usage", the usage wrapped at HELP_WIDTH under its start. */
static void print_usage(FILE *f, const char *prog, const char *cmd, const char *usage)
{
	int col = fprintf(f, "Usage: %s%s%s", prog, cmd ? " " : "", cmd ? cmd : "") + 1;
	int at = col - 1;
	const char *w = usage;

	while (*w) {
		/* an alternative ("| del PREFIX") starts a line rather than ends one */
		size_t n = strcspn(w, " ");
		const char *alt = w[0] == '|' ? strstr(w + 1, " | ") : NULL;
		int need = alt ? (int)(alt - w) : (w[0] == '|' ? (int)strlen(w) : (int)n);

		if (at + 1 + need > HELP_WIDTH && at > col) {
			fprintf(f, "\n%*s", col - 1, "");
			at = col - 1;
		}
		at += fprintf(f, " %.*s", (int)n, w);
		w += n;
		w += strspn(w, " ");
	}
	fputc('\n', f);
}

/* The help column: past the widest left part that fits HELP_COL_MAX. */
static int help_col(int widest)
{
	int col = widest + 4;

	return col > HELP_COL_MAX ? HELP_COL_MAX : col;
}

static void print_opts(FILE *f, const struct fg_opt *const *tabs)
{
	int width = 0, col;
	char left[96];

	for (int t = 0; tabs[t]; t++) {
		for (const struct fg_opt *o = tabs[t]; o->kind; o++) {
			opt_left(o, left, sizeof(left));
			if ((int)strlen(left) > width && (int)strlen(left) + 4 <= HELP_COL_MAX)
				width = (int)strlen(left);
		}
	}
	col = help_col(width);
	for (int t = 0; tabs[t]; t++) {
		for (const struct fg_opt *o = tabs[t]; o->kind; o++) {
			opt_left(o, left, sizeof(left));
			print_row(f, left, o->help ? o->help : "", col);
		}
	}
}

/* Commands: "name usage" then the help; a long usage goes on its own line. */
static void print_cmds(FILE *f, const struct fg_cmd *cmds)
{
	char left[128];

	for (const struct fg_cmd *c = cmds; c->name; c++) {
		snprintf(left, sizeof(left), "%s %s", c->name, c->usage);
		print_row(f, left, c->help, HELP_COL_MAX);
	}
}

void fg_prog_help(FILE *f, const struct fg_prog *prog, const struct fg_cmd *cmd)
{
	const struct fg_opt *tabs[MAX_TABS] = { prog->opts };

	if (cmd) {
		if (cmd->opts) {
			tabs[0] = cmd->opts;
			tabs[1] = prog->opts;
		}
		print_usage(f, prog->name, cmd->name, cmd->usage);
		fprintf(f, "%s\n\nOptions:\n", cmd->help);
		print_opts(f, tabs);
		return;
	}
	print_usage(f, prog->name, NULL, prog->usage);
	if (prog->help)
		fprintf(f, "\n%s\n", prog->help);
	if (prog->cmds) {
		fprintf(f, "\nCommands (any unique prefix works):\n");
		print_cmds(f, prog->cmds);
	}
	fprintf(f, "\n%s:\n", prog->cmds ? "Options for every command" : "Options");
	print_opts(f, tabs);
	if (prog->epilog)
		fprintf(f, "\n%s", prog->epilog);
	if (prog->cmds)
		fprintf(f, "\n'%s COMMAND --help' shows a command's options.\n", prog->name);
}

int fg_opt_flag_u64(const struct fg_opt *o, const char *val, void *cfg, char *why)
{
	__u64 v = o->min;

	if (val && fg_opt_parse_u64(val, o->min, o->max, &v))
		return fg_opt_fail(why, "\"%s\" is not %s (%llu..%llu)", val,
				   o->what ? o->what : "a number", (unsigned long long)o->min,
				   (unsigned long long)o->max);
	*(bool *)((char *)cfg + o->ival) = true;
	*(__u64 *)((char *)cfg + o->off) = v;
	return 0;
}
