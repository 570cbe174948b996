// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fgverify: the verifier budget. Loads every program of each BPF object on
 * the running kernel, one program per load, with the verifier's statistics
 * log (BPF_LOG_STATS), and compares what it reports ("processed N insns
 * ... total_states T peak_states P") with the committed budget of this
 * kernel, bpf/budget/<kernel tag>.txt, a line per compiler, object and
 * program (in the manner of Cilium's bpf/complexity-tests); an object's
 * variants (a load-time switch of its .rodata set, e.g. floodgate with
 * syn_auth's steps: `variants` below) have lines of their own, object
 * OBJECT+SUFFIX (floodgate+sa). A count more
 * than --tolerance percent (default 10) above its budget fails; so does a
 * program that loads on this kernel with no budget line, or does not load.
 *
 *   fgverify [--kernel-tag TAG] [--compiler TAG] [--update] [OBJ...]
 *       OBJ: .bpf.o files (default: the objects floodgate ships and tests
 *       with, from $OUTPUT, else .output: floodgate fgen bench_floor
 *       fgtest_xdp). The kernel tag is uname's release cut to
 *       major.minor (6.18, 6.1); the compiler tag is clang-<major>, from
 *       the `clang --version` line the Makefile writes beside the object
 *       (NAME.bpf.cc), or given.
 *   --update writes the measured counts into the budget file instead of
 *       checking them (other compilers' and objects' lines are kept): for a
 *       rise that is intended, say why in the commit that changes the file.
 *
 * Prints "ok - ..." or "FAIL - ..." per program, the counts, the budget and
 * the change, and ends with "N passed, N failed, N skipped" (tests/run.sh).
 * A load the kernel refuses prints the end of the verifier's log (level 1;
 * a kernel before 6.4 keeps the start of a log that overflows instead).
 * Exit status: 0, 1 when a check failed, 2 on a usage error. Needs root.
 *
 * It opens objects by path, not by skeleton: it is a tool over whichever
 * objects it is given, as veristat is.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "lib/kfeat.h"
#include "lib/opts.h"

#define STATS_LOG_SIZE	(64 * 1024)
#define FAIL_LOG_MB	64 /* the level-1 log of a refused load */
#define FAIL_TAIL_LINES 40
#define MAX_LINES	256 /* budget lines per file */
#define TAG_LEN		32
#define NAME_LEN	64

static const char *const default_objs[] = { "floodgate", "fgen", "bench_floor", "fgtest_xdp" };

struct verify_opts {
	const char *kernel_tag, *compiler, *budget_dir, *log_prefix;
	__u32 tolerance, log_mb;
	bool update, verbose;
};

/* One line of a budget file, or one measurement. */
struct budget_line {
	char compiler[TAG_LEN], object[NAME_LEN], program[NAME_LEN];
	unsigned long insns, states, peak;
	bool seen; /* measured in this run */
};

struct budget {
	char path[512];
	struct budget_line done[MAX_LINES]; /* the objects verified: compiler and object */
	int ndone;
	char head[4096]; /* the file's comment lines, kept by --update */
	struct budget_line l[MAX_LINES];
	int n;
};

static int npass, nfail, nskip;

static void ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void ok(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("ok - ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	npass++;
}

static void bad(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("FAIL - ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	nfail++;
}

static bool verbose;

/* Objects that need a kernel feature beyond the oldest kernel's: on a
 * kernel without it the object cannot load, which is no verifier
 * regression, so it is skipped with the probe's reason (user/lib/kfeat.c). */
static const struct {
	const char *object;
	enum fg_kf feature;
} needs[] = {
	{ "fgsyn", FG_KF_TCP_REQSK }, /* the handoff way's tc program */
};

/* Loads beside an object's default one: a load-time switch of its .rodata
 * set, judged against lines of their own (object column OBJECT+SUFFIX),
 * so that a step behind a switch the daemon turns on has a budget too. */
static const struct variant {
	const char *object, *suffix, *var;
	__u32 value;
} variants[] = {
	{ "floodgate", "sa", "fg_sa_on", 1 }, /* syn_auth's steps in (docs/syn-auth.md) */
};

static bool kernel_lacks(const char *object)
{
	const struct fg_kfeat *kf = fg_kfeat_get();

	for (size_t i = 0; i < sizeof(needs) / sizeof(needs[0]); i++)
		if (!strcmp(needs[i].object, object) && !kf->f[needs[i].feature].ok) {
			printf("skip - %s: needs %s, which this kernel lacks: %s\n", object,
			       fg_kf_desc[needs[i].feature], kf->f[needs[i].feature].why);
			nskip++;
			return true;
		}
	return false;
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* a refused load is reported from the log buffer, not libbpf's copy of it */
	if (!verbose)
		return 0;
	(void)level;
	return vfprintf(stderr, fmt, ap);
}

/* "6.18.44-fc-v1045" -> "6.18" */
static int kernel_tag(char *out, size_t len)
{
	struct utsname u;
	unsigned int maj, min;

	if (uname(&u) || sscanf(u.release, "%u.%u", &maj, &min) != 2)
		return -EINVAL;
	snprintf(out, len, "%u.%u", maj, min);
	return 0;
}

/* clang-<major> from the first line of `clang --version` that the
 * Makefile writes beside each object (NAME.bpf.cc): the BPF target writes
 * no .comment, and llvm-strip -g removes the DWARF producer. */
static int compiler_of(const char *path, char *out, size_t len)
{
	FILE *f = fopen(path, "r");
	char line[256];
	const char *c;
	unsigned int maj;
	int err = -EINVAL;

	if (!f)
		return -errno;
	if (fgets(line, sizeof(line), f) && (c = strstr(line, "clang version ")) &&
	    sscanf(c + 14, "%u", &maj) == 1) {
		snprintf(out, len, "clang-%u", maj);
		err = 0;
	}
	fclose(f);
	return err;
}

static int budget_read(struct budget *b)
{
	FILE *f = fopen(b->path, "r");
	char line[512];
	size_t hl = 0;
	int lineno = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		struct budget_line *l = &b->l[b->n];

		lineno++;
		if (line[0] == '#' || line[0] == '\n') {
			if (hl + strlen(line) < sizeof(b->head)) {
				memcpy(b->head + hl, line, strlen(line) + 1);
				hl += strlen(line);
			}
			continue;
		}
		if (b->n == MAX_LINES ||
		    sscanf(line, "%31s %63s %63s %lu %lu %lu", l->compiler, l->object, l->program,
			   &l->insns, &l->states, &l->peak) != 6) {
			fprintf(stderr,
				"fgverify: %s:%d: not \"compiler object program insns "
				"total_states peak_states\"\n",
				b->path, lineno);
			fclose(f);
			return -EINVAL;
		}
		b->n++;
	}
	fclose(f);
	return 0;
}

static struct budget_line *budget_find(struct budget *b, const struct budget_line *m)
{
	int i;

	for (i = 0; i < b->n; i++)
		if (!strcmp(b->l[i].compiler, m->compiler) && !strcmp(b->l[i].object, m->object) &&
		    !strcmp(b->l[i].program, m->program))
			return &b->l[i];
	return NULL;
}

static int line_cmp(const void *a, const void *b)
{
	const struct budget_line *x = a, *y = b;
	int c = strcmp(x->compiler, y->compiler);

	if (!c)
		c = strcmp(x->object, y->object);
	return c ? c : strcmp(x->program, y->program);
}

static int budget_write(struct budget *b, const char *ktag)
{
	char tmp[600];
	FILE *f;
	int i;

	snprintf(tmp, sizeof(tmp), "%s.tmp", b->path);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	if (b->head[0])
		fputs(b->head, f);
	else
		fprintf(f,
			"# Verifier budget on Linux %s: what the verifier reports for each program\n"
			"# (BPF_LOG_STATS), checked by tools/fgverify (tests/gameday_verifier.sh):\n"
			"# more than 10%% above a line fails. A rise that is intended: run\n"
			"#   .output/fgverify --update  (clang-19: tools/verify-clang.sh --update)\n"
			"# on this kernel and commit this file with the reason.\n"
			"# compiler object program insns total_states peak_states\n",
			ktag);
	qsort(b->l, b->n, sizeof(b->l[0]), line_cmp);
	for (i = 0; i < b->n; i++)
		fprintf(f, "%s %s %s %lu %lu %lu\n", b->l[i].compiler, b->l[i].object,
			b->l[i].program, b->l[i].insns, b->l[i].states, b->l[i].peak);
	if (fclose(f))
		return -errno;
	return rename(tmp, b->path) ? -errno : 0;
}

/* The counts of a BPF_LOG_STATS log; stack: its "stack depth" line. */
static int parse_stats(const char *log, struct budget_line *m, char *stack, size_t slen)
{
	const char *p = strstr(log, "processed ");
	const char *s = strstr(log, "stack depth ");

	if (!p || sscanf(p, "processed %lu insns", &m->insns) != 1)
		return -ENOENT;
	p = strstr(p, "total_states ");
	if (!p || sscanf(p, "total_states %lu", &m->states) != 1)
		return -ENOENT;
	p = strstr(p, "peak_states ");
	if (!p || sscanf(p, "peak_states %lu", &m->peak) != 1)
		return -ENOENT;
	stack[0] = 0;
	if (s)
		sscanf(s, "stack depth %127s", stack);
	(void)slen;
	return 0;
}

/* Set the __u32 variable var of obj's .rodata to val, before its load. */
static int set_rodata(struct bpf_object *obj, const char *var, __u32 val)
{
	struct btf *btf = bpf_object__btf(obj);
	const struct btf_var_secinfo *vs;
	const struct btf_type *t;
	struct bpf_map *m, *ro = NULL;
	const __u8 *init;
	size_t sz;
	__s32 id;
	__u8 *data;
	int i, err;

	bpf_object__for_each_map(m, obj) {
		const char *n = bpf_map__name(m);
		size_t nl = strlen(n);

		if (bpf_map__is_internal(m) && nl >= 7 && !strcmp(n + nl - 7, ".rodata"))
			ro = m;
	}
	id = btf ? btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC) : -ENOENT;
	if (!ro || id < 0)
		return -ENOENT;
	t = btf__type_by_id(btf, id);
	init = bpf_map__initial_value(ro, &sz);
	if (!t || !init)
		return -ENOENT;
	vs = btf_var_secinfos(t);
	for (i = 0; i < btf_vlen(t); i++, vs++) {
		const struct btf_type *v = btf__type_by_id(btf, vs->type);

		if (!v || strcmp(btf__name_by_offset(btf, v->name_off), var))
			continue;
		if (vs->size != sizeof(val) || vs->offset + sizeof(val) > sz)
			return -EINVAL;
		data = malloc(sz);
		if (!data)
			return -ENOMEM;
		memcpy(data, init, sz);
		memcpy(data + vs->offset, &val, sizeof(val));
		err = bpf_map__set_initial_value(ro, data, sz);
		free(data);
		return err;
	}
	return -ENOENT;
}

/* The object at path opened with only prog (by name) to load, and the
 * switch of variant vr (NULL: the default load) set. */
static struct bpf_object *open_one(const char *path, const struct variant *vr, const char *prog,
				   char *log, size_t size, __u32 level, int *err)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo);
	struct bpf_program *p;
	struct bpf_object *obj = bpf_object__open_file(path, &oo);

	if (!obj) {
		*err = -errno;
		return NULL;
	}
	if (vr) {
		*err = set_rodata(obj, vr->var, vr->value);
		if (*err) {
			fprintf(stderr, "fgverify: %s: no __u32 %s in .rodata: %s\n", path, vr->var,
				strerror(-*err));
			bpf_object__close(obj);
			return NULL;
		}
	}
	bpf_object__for_each_program(p, obj) {
		bool me = !strcmp(bpf_program__name(p), prog);

		bpf_program__set_autoload(p, me);
		if (me) {
			bpf_program__set_log_level(p, level);
			bpf_program__set_log_buf(p, log, size);
		}
	}
	*err = 0;
	return obj;
}

/* The end of a refused program's log at level 1, indented. */
static void print_refusal(const char *path, const struct variant *vr, const char *prog,
			  __u32 log_mb)
{
	size_t size = (size_t)log_mb << 20;
	char *log = calloc(1, size);
	struct bpf_object *obj;
	const char *t;
	int err, n = 0;

	if (!log)
		return;
	obj = open_one(path, vr, prog, log, size, 1 | 4, &err);
	if (obj) {
		err = bpf_object__load(obj);
		bpf_object__close(obj);
	}
	for (t = log + strlen(log); t > log && n <= FAIL_TAIL_LINES; t--)
		n += t[-1] == '\n';
	printf("    the verifier's log (%s), its last lines:\n",
	       err == -ENOSPC ? "truncated" : "end");
	for (; *t; t++) {
		if (t == log || t[-1] == '\n')
			fputs("    ", stdout);
		putchar(*t);
	}
	free(log);
}

/* The whole log of one more load at level 2 (every instruction the
 * verifier walked, with the registers), into PREFIX<object>.<program>.log:
 * where the count goes (a kernel before 6.4 keeps only what fits). */
static void write_log(const struct verify_opts *o, const char *path, const struct variant *vr,
		      const char *name, const char *prog)
{
	size_t size = (size_t)o->log_mb << 20;
	char *log = calloc(1, size), file[700];
	struct bpf_object *obj;
	int err;
	FILE *f;

	if (!log)
		return;
	obj = open_one(path, vr, prog, log, size, 2 | 4, &err);
	if (obj) {
		err = bpf_object__load(obj);
		bpf_object__close(obj);
	}
	snprintf(file, sizeof(file), "%s%s.%s.log", o->log_prefix, name, prog);
	f = fopen(file, "w");
	if (f) {
		fputs(log, f);
		fclose(f);
		printf("# %s: the level-2 log (%zu bytes%s)\n", file, strlen(log),
		       err == -ENOSPC ? ", truncated: --log-mb" :
		       err	      ? ", the load failed" :
					"");
	}
	free(log);
}

static void judge(const struct verify_opts *o, struct budget *b, struct budget_line *m,
		  const char *stack)
{
	const char *what[3] = { "insns", "total_states", "peak_states" };
	struct budget_line *l = budget_find(b, m);
	unsigned long now[3] = { m->insns, m->states, m->peak }, was[3];
	char desc[512], grew[256] = "";
	size_t dl = 0;
	int i;

	if (o->update) {
		if (!l) {
			if (b->n == MAX_LINES) {
				bad("%s %s: more than %d budget lines", m->object, m->program,
				    MAX_LINES);
				return;
			}
			l = &b->l[b->n++];
		}
		*l = *m;
		l->seen = true;
		ok("%s %s %s %s: %lu insns, %lu states (peak %lu), stack %s: written",
		   o->kernel_tag, m->compiler, m->object, m->program, m->insns, m->states, m->peak,
		   stack);
		return;
	}
	if (!l) {
		bad("%s %s %s %s: %lu insns, %lu states (peak %lu): no budget line in %s (after a "
		    "review, --update adds it)",
		    o->kernel_tag, m->compiler, m->object, m->program, m->insns, m->states, m->peak,
		    b->path);
		return;
	}
	l->seen = true;
	was[0] = l->insns;
	was[1] = l->states;
	was[2] = l->peak;
	for (i = 0; i < 3; i++) {
		double pct = was[i] ? 100.0 * ((double)now[i] - (double)was[i]) / (double)was[i] :
				      (now[i] ? 100.0 : 0.0);

		dl += snprintf(desc + dl, sizeof(desc) - dl, "%s%lu %s (budget %lu, %+.1f%%)",
			       i ? ", " : "", now[i], what[i], was[i], pct);
		if (now[i] * 100 > was[i] * (100 + (unsigned long)o->tolerance))
			snprintf(grew + strlen(grew), sizeof(grew) - strlen(grew), "%s%s +%.1f%%",
				 grew[0] ? ", " : "", what[i], pct);
	}
	if (grew[0])
		bad("%s %s %s %s grew more than %u%%: %s; %s (an intended rise: --update, and say "
		    "why in the commit)",
		    o->kernel_tag, m->compiler, m->object, m->program, o->tolerance, grew, desc);
	else
		ok("%s %s %s %s: %s; stack %s", o->kernel_tag, m->compiler, m->object, m->program,
		   desc, stack);
}

/* Every program of the object at path, one load each. */
/* Every program of the object at path (name: its line's object column,
 * comp its compiler), one load each, with variant vr's switch (or none). */
static void verify_load(const struct verify_opts *o, struct budget *b, const char *path,
			const struct variant *vr, const char *name, const char *comp, char *log)
{
	struct bpf_object *obj;
	struct bpf_program *p;
	char stack[128];
	int err;

	obj = bpf_object__open_file(path, NULL);
	if (!obj) {
		bad("%s: cannot open: %s", path, strerror(errno));
		return;
	}
	if (b->ndone < MAX_LINES) {
		snprintf(b->done[b->ndone].compiler, TAG_LEN, "%s", comp);
		snprintf(b->done[b->ndone++].object, NAME_LEN, "%s", name);
	}
	bpf_object__for_each_program(p, obj) {
		struct budget_line m = { 0 };
		const char *pn = bpf_program__name(p);
		struct bpf_object *one = open_one(path, vr, pn, log, STATS_LOG_SIZE, 4, &err);

		snprintf(m.compiler, sizeof(m.compiler), "%s", comp);
		snprintf(m.object, sizeof(m.object), "%s", name);
		snprintf(m.program, sizeof(m.program), "%s", pn);
		log[0] = 0;
		if (one)
			err = bpf_object__load(one);
		bpf_object__close(one);
		if (err) {
			struct budget_line *l = budget_find(b, &m);

			if (l) /* the program is there: its line is not stale */
				l->seen = true;
			bad("%s %s %s %s: not loaded: %s", o->kernel_tag, comp, name, pn,
			    strerror(-err));
			print_refusal(path, vr, pn, o->log_mb);
			continue;
		}
		if (parse_stats(log, &m, stack, sizeof(stack))) {
			bad("%s %s %s %s: loaded, but its log has no \"processed N insns ... "
			    "total_states ... peak_states\"",
			    o->kernel_tag, comp, name, pn);
			continue;
		}
		judge(o, b, &m, stack);
		if (o->log_prefix)
			write_log(o, path, vr, name, pn);
	}
	bpf_object__close(obj);
}

/* The object at path: its default load, then each of its variants. */
static void verify_object(const struct verify_opts *o, struct budget *b, const char *path)
{
	char name[NAME_LEN], vname[NAME_LEN + 16], ccpath[600], comp[TAG_LEN];
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	char *log = malloc(STATS_LOG_SIZE);
	size_t bl = strlen(base), i;
	int err;

	if (!log)
		return;
	if (bl < 7 || strcmp(base + bl - 6, ".bpf.o") || bl - 6 >= sizeof(name)) {
		bad("%s: not a NAME.bpf.o", path);
		goto out;
	}
	snprintf(name, sizeof(name), "%.*s", (int)(bl - 6), base);
	if (o->compiler) {
		snprintf(comp, sizeof(comp), "%s", o->compiler);
	} else {
		snprintf(ccpath, sizeof(ccpath), "%.*s%s.bpf.cc", (int)(base - path), path, name);
		err = compiler_of(ccpath, comp, sizeof(comp));
		if (err) {
			bad("%s: cannot tell its compiler from %s (%s): give --compiler", path,
			    ccpath, strerror(-err));
			goto out;
		}
	}
	if (kernel_lacks(name))
		goto out;
	verify_load(o, b, path, NULL, name, comp, log);
	for (i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		if (strcmp(variants[i].object, name))
			continue;
		snprintf(vname, sizeof(vname), "%s+%s", name, variants[i].suffix);
		verify_load(o, b, path, &variants[i], vname, comp, log);
	}
out:
	free(log);
}

/* Lines of the objects verified whose program is gone: a failure, or
 * dropped by --update. */
static void stale_lines(const struct verify_opts *o, struct budget *b)
{
	int i, j, k = 0;

	for (i = 0; i < b->n; i++) {
		bool checked = false;

		for (j = 0; j < b->ndone && !checked; j++)
			checked = !strcmp(b->l[i].compiler, b->done[j].compiler) &&
				  !strcmp(b->l[i].object, b->done[j].object);
		if (checked && !b->l[i].seen) {
			if (o->update) {
				printf("# %s %s %s: no such program any more, line removed\n",
				       b->l[i].compiler, b->l[i].object, b->l[i].program);
				continue;
			}
			bad("%s %s %s %s: in %s, but the object has no such program (--update removes "
			    "the line)",
			    o->kernel_tag, b->l[i].compiler, b->l[i].object, b->l[i].program,
			    b->path);
		}
		b->l[k++] = b->l[i];
	}
	b->n = k;
}

#define O struct verify_opts
static const struct fg_opt verify_opts[] = {
	FG_OPT_STR("kernel-tag", 'k', O, kernel_tag, "TAG",
		   "the budget file's kernel (default: uname -r as major.minor)"),
	FG_OPT_STR("compiler", 'c', O, compiler, "TAG",
		   "the objects' compiler, e.g. clang-19 (default: from NAME.bpf.cc)"),
	FG_OPT_STR("budget-dir", 'b', O, budget_dir, "DIR", "budget files (default bpf/budget)"),
	FG_OPT_U32("tolerance", 't', O, tolerance, "PCT", 0, 1000, "a percentage",
		   "a rise above this fails (default 10)"),
	FG_OPT_U32("log-mb", 0, O, log_mb, "MB", 1, 1023, "a size in MiB",
		   "log buffer for a refused load or --log (default 64)"),
	FG_OPT_STR("log", 'l', O, log_prefix, "PREFIX",
		   "also write each program's level-2 log to PREFIX<object>.<program>.log"),
	FG_OPT_BOOL("update", 'u', O, update, "write the counts into the budget file"),
	FG_OPT_BOOL("verbose", 'v', O, verbose, "libbpf's messages to stderr"),
	FG_OPT_HELP_END("this help"),
};
#undef O

FG_DEFINE_PROG(verify_prog, "fgverify", "[-k TAG] [-c TAG] [-b DIR] [-t PCT] [--update] [OBJ...]",
	       verify_opts, .max_pos = FG_MAX_POS,
	       .help = "Load each program of the BPF objects (default: .output's) and check the "
		       "verifier's counts against bpf/budget/<kernel>.txt.");

int main(int argc, char **argv)
{
	struct verify_opts o = { .budget_dir = "bpf/budget",
				 .tolerance = 10,
				 .log_mb = FAIL_LOG_MB };
	static struct budget b;
	char ktag[TAG_LEN], ktag2[TAG_LEN], path[600];
	const char *outdir = getenv("OUTPUT");
	struct fg_parsed p;
	int rc, i, err;

	rc = fg_prog_args(&verify_prog, argc, argv, &o, &p);
	if (rc >= 0)
		return rc;
	verbose = o.verbose;
	libbpf_set_print(libbpf_print);
	if (!o.kernel_tag) {
		if (kernel_tag(ktag, sizeof(ktag))) {
			fprintf(stderr,
				"fgverify: cannot read the kernel release: give --kernel-tag\n");
			return FG_EXIT_USAGE;
		}
		o.kernel_tag = ktag;
	}
	if (kernel_tag(ktag2, sizeof(ktag2)) == 0 && strcmp(ktag2, o.kernel_tag))
		printf("# note: the budget of kernel %s, on a %s kernel\n", o.kernel_tag, ktag2);
	if (strchr(o.kernel_tag, '/')) {
		fprintf(stderr, "fgverify: --kernel-tag %s: no '/' in a tag\n", o.kernel_tag);
		return FG_EXIT_USAGE;
	}
	snprintf(b.path, sizeof(b.path), "%s/%s.txt", o.budget_dir, o.kernel_tag);
	err = budget_read(&b);
	if (err == -ENOENT && !o.update) {
		printf("skip - kernel %s: no budget file %s (on that kernel, --update writes it)\n",
		       o.kernel_tag, b.path);
		nskip++;
		goto done;
	}
	if (err && err != -ENOENT) {
		if (err != -EINVAL)
			fprintf(stderr, "fgverify: %s: %s\n", b.path, strerror(-err));
		return 1;
	}
	if (p.npos) {
		for (i = 0; i < p.npos; i++)
			verify_object(&o, &b, p.pos[i]);
	} else {
		for (i = 0; i < (int)(sizeof(default_objs) / sizeof(default_objs[0])); i++) {
			snprintf(path, sizeof(path), "%s/%s.bpf.o", outdir ? outdir : ".output",
				 default_objs[i]);
			verify_object(&o, &b, path);
		}
	}
	stale_lines(&o, &b);
	if (o.update && !nfail) {
		err = budget_write(&b, o.kernel_tag);
		if (err) {
			bad("write %s: %s", b.path, strerror(-err));
		} else {
			printf("# wrote %s\n", b.path);
		}
	} else if (o.update) {
		printf("# %s not written: a load failed\n", b.path);
	}
done:
	printf("%d passed, %d failed, %d skipped\n", npass, nfail, nskip);
	return nfail ? 1 : 0;
}
