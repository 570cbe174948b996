/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Declared options and subcommands, shared by floodgate, floodgated and the
 * tools fgen, fgbench, fgdump and fgfill (in the manner of xdp-tools' lib/util/params.c): each program
 * describes its options once, in a typed table that points into its own
 * options struct, and gets parsing, errors and --help from here.
 *
 * Accepted syntax, the same for every program:
 *   --name VALUE, --name=VALUE, or any unique prefix of a long name;
 *   -x VALUE, -xVALUE, bundled flags (-fv);
 *   options and positional words in any order; "--" ends the options;
 *   a command (floodgate, fgbench) by its name or any unique prefix.
 * An option declared with FG_OPT_OPTIONAL takes "--name=V", or the next
 * word only if it starts with a digit ("--watch 5"; "--watch" alone).
 *
 * Nothing here prints except fg_prog_args (for main) and the help
 * printers; fg_prog_parse returns 0 or -EINVAL with the reason in why.
 */
#ifndef FG_OPTS_H
#define FG_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

enum fg_opt_kind {
	FGO_END = 0, /* ends a table */
	FGO_BOOL,    /* bool = true */
	FGO_COUNT,   /* int, +1 each time given */
	FGO_STR,     /* const char * = the value (points into argv) */
	FGO_U64,     /* __u64, decimal, in [min, max] */
	FGO_U32,     /* __u32, the same */
	FGO_U16,     /* __u16, the same */
	FGO_FUNC,    /* fn parses the value (or, without arg, acts on presence) */
	FGO_HELP,    /* stop parsing: the caller prints help */
	FGO_CHOICE,  /* int = ival; a different ival given before fails with what */
	FGO_VERSION, /* stop parsing: fg_prog_args prints the version */
};

/* The value may be left out (see above): a FGO_FUNC's fn then gets NULL,
 * any other kind keeps the field's default. */
#define FG_OPT_OPTIONAL 0x1

struct fg_opt;

/* Parse val (NULL when an optional value or a flag has none) into cfg.
 * 0, or -EINVAL with why saying what is wrong with val. */
typedef int (*fg_opt_fn)(const struct fg_opt *opt, const char *val, void *cfg, char *why);

struct fg_opt {
	const char *name; /* long name, without "--"; NULL: only the short one */
	char sname;	  /* short letter; 0: none */
	enum fg_opt_kind kind;
	unsigned int flags; /* FG_OPT_OPTIONAL */
	size_t off;	    /* offsetof the field in the caller's struct */
	const char *arg;    /* the value's name in help and errors; NULL: no value */
	const char *help;
	const char *what; /* numbers: "is not <what> (min..max)" */
	__u64 min, max;	  /* numbers */
	int ival;	  /* FGO_FUNC: a constant for fn (one fn, several options) */
	fg_opt_fn fn;
};

/* 0 if member of T has type want; a compile error otherwise. */
#define FG_OPT_TYPECHECK(T, member, want)                                                 \
	(0 * sizeof(struct {                                                              \
		 int fg_opt_field_has_the_wrong_type                                      \
		     : __builtin_types_compatible_p(__typeof__(((T *)0)->member), want) ? \
		       1 :                                                                \
		       -1;                                                                \
	 }))
#define FG_OPT_AT(T, member, want) (offsetof(T, member) + FG_OPT_TYPECHECK(T, member, want))

#define FG_OPT_BOOL(l, s, T, m, h)                                                               \
	{                                                                                        \
		.name = l, .sname = s, .kind = FGO_BOOL, .off = FG_OPT_AT(T, m, bool), .help = h \
	}
#define FG_OPT_COUNT(l, s, T, m, h)                                                              \
	{                                                                                        \
		.name = l, .sname = s, .kind = FGO_COUNT, .off = FG_OPT_AT(T, m, int), .help = h \
	}
#define FG_OPT_STR(l, s, T, m, a, h)                                                          \
	{                                                                                     \
		.name = l, .sname = s, .kind = FGO_STR, .off = FG_OPT_AT(T, m, const char *), \
		.arg = a, .help = h                                                           \
	}
#define FG_OPT_NUM(l, s, K, W, T, m, a, lo, hi, wh, h)                                            \
	{                                                                                         \
		.name = l, .sname = s, .kind = K, .off = FG_OPT_AT(T, m, W), .arg = a, .help = h, \
		.what = wh, .min = lo, .max = hi                                                  \
	}
#define FG_OPT_U64(l, s, T, m, a, lo, hi, wh, h) \
	FG_OPT_NUM(l, s, FGO_U64, __u64, T, m, a, lo, hi, wh, h)
#define FG_OPT_U32(l, s, T, m, a, lo, hi, wh, h) \
	FG_OPT_NUM(l, s, FGO_U32, __u32, T, m, a, lo, hi, wh, h)
#define FG_OPT_U16(l, s, T, m, a, lo, hi, wh, h) \
	FG_OPT_NUM(l, s, FGO_U16, __u16, T, m, a, lo, hi, wh, h)
/* a = NULL: a flag whose presence fn handles (val is NULL) */
#define FG_OPT_FUNC(l, s, f, iv, a, h)                                                            \
	{                                                                                         \
		.name = l, .sname = s, .kind = FGO_FUNC, .fn = f, .ival = iv, .arg = a, .help = h \
	}
/* One of a group of flags that store their own ival in one int field (-4 / -6); conflict is the
 * error when a different one of them was given before. */
#define FG_OPT_CHOICE(l, s, T, m, iv, conflict, h)                                      \
	{                                                                               \
		.name = l, .sname = s, .kind = FGO_CHOICE, .off = FG_OPT_AT(T, m, int), \
		.ival = iv, .what = conflict, .help = h                                 \
	}
/* --NAME [N] (N optional): sets the bool flag and the __u64 m to N, in lo..hi, or to lo when
 * N is left out; a bad N fails as "\"N\" is not <wh> (lo..hi)" and changes nothing. */
#define FG_OPT_FLAG_U64(l, s, T, flag, m, a, lo, hi, wh, h)                                        \
	{                                                                                          \
		.name = l, .sname = s, .kind = FGO_FUNC, .flags = FG_OPT_OPTIONAL,                 \
		.fn = fg_opt_flag_u64, .off = FG_OPT_AT(T, m, __u64),                              \
		.ival = (int)FG_OPT_AT(T, flag, bool), .arg = a, .help = h, .what = wh, .min = lo, \
		.max = hi                                                                          \
	}
#define FG_OPT_HELP(h)                                                    \
	{                                                                 \
		.name = "help", .sname = 'h', .kind = FGO_HELP, .help = h \
	}
#define FG_OPT_VERSION                                                            \
	{                                                                         \
		.name = "version", .sname = 'V', .kind = FGO_VERSION,             \
		.help = "print the versions (floodgate, libbpf, libxdp) and exit" \
	}
#define FG_OPT_END              \
	{                       \
		.kind = FGO_END \
	}
/* How a program's own table ends: -h/--help (h is its line in the help), then the end. */
#define FG_OPT_HELP_END(h) FG_OPT_HELP(h), FG_OPT_END

/* A subcommand. fn gets the program's options struct. */
struct fg_cmd {
	const char *name;	   /* NULL ends a table */
	const char *usage;	   /* what follows the name in the synopsis */
	const char *help;	   /* one line */
	int min_pos, max_pos;	   /* positional words */
	const struct fg_opt *opts; /* the command's own; the program's are added */
	int (*fn)(void *cfg);
};

struct fg_prog {
	const char *name;
	const char *usage;	   /* what follows the name in the synopsis */
	const char *help;	   /* what the program does */
	const struct fg_opt *opts; /* before the command, and after it */
	const struct fg_cmd *cmds; /* NULL: the program has no commands */
	int min_pos, max_pos;	   /* positional words, for a program without commands */
	const char *epilog;	   /* printed after the program's help */
};

/* Defines the program var: named n, synopsis u, its own options o; the rest, if
 * any, are designated initializers (.help, .cmds, .epilog, ...), as LIBBPF_OPTS. */
#define FG_DEFINE_PROG(var, n, u, o, ...) \
	static const struct fg_prog var = { .name = n, .usage = u, .opts = o, __VA_ARGS__ }

#define FG_MAX_POS 8

struct fg_parsed {
	const struct fg_cmd *cmd;    /* the command (also set when its options failed) */
	const char *pos[FG_MAX_POS]; /* positional words */
	int npos;
	bool help;    /* --help or --version: parsing stopped there */
	bool version; /* --version */
};

/* The whole command line (argv[0] is the program's name). */
int fg_prog_parse(const struct fg_prog *prog, int argc, char **argv, void *cfg, struct fg_parsed *p,
		  char *why);

/* For main: parse; on an error print it and a pointer to --help to stderr,
 * on --help print the help to stdout, on --version the version. Returns -1 when main should go on,
 * else the exit status: 0 after --help or --version, 2 after a usage error. */
#define FG_EXIT_USAGE 2
int fg_prog_args(const struct fg_prog *prog, int argc, char **argv, void *cfg, struct fg_parsed *p);

/* Generated help: the program's (cmd NULL) or one command's. */
void fg_prog_help(FILE *f, const struct fg_prog *prog, const struct fg_cmd *cmd);

/* The command named by word: its exact name or a unique prefix of it.
 * 0, -ENOENT (unknown) or -EINVAL (ambiguous; why lists the candidates). */
int fg_cmd_find(const struct fg_cmd *cmds, const char *word, const struct fg_cmd **out, char *why);

/* For a fg_opt_fn: write why and return -EINVAL. */
int fg_opt_fail(char *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A decimal number in [min, max], whole string, no sign or space. 0,
 * -EINVAL (not a number) or -ERANGE. */
int fg_opt_parse_u64(const char *s, __u64 min, __u64 max, __u64 *out);
/* The fn of FG_OPT_FLAG_U64: .off is the number's offset, .ival the flag's. */
int fg_opt_flag_u64(const struct fg_opt *o, const char *val, void *cfg, char *why);

#endif /* FG_OPTS_H */
