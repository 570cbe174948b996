// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fgprof: where a BPF program's time goes, by source file and line, from
 * perf's samples. perf here cannot annotate a JIT image (no libopcodes for
 * BPF), but the kernel keeps, for every program loaded with BTF, the
 * address of each source line's first instruction in the image (the
 * jited line info). A sample's address then names its line: the last
 * line info at or below it, in the same function.
 *
 *   fgprof map --prog-id ID > MAP
 *       while the program is loaded: its functions (JIT address, length,
 *       name) and its jited lines (address, file:line, the source text)
 *   fgprof report --map MAP [--top N] < SAMPLES
 *       SAMPLES: one sample address a line, in hex (`perf script -F ip`);
 *       prints the share of the program's samples by function, by file
 *       and by line (the N busiest lines, default 40)
 *
 * The map is taken first because the program may be gone by the time
 * perf's samples are read (tools/bench.sh, part profile). Exit status: 0,
 * 1 on an error, 2 on a usage error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>

#include "lib/opts.h"

struct prof_opts {
	__u64 prog_id;
	const char *map;
	__u64 top;
};

/* The program's info with the arrays map needs, in buffers of its own. */
struct jit_info {
	struct bpf_prog_info info;
	__u64 *ksyms;
	__u32 *lens;
	struct bpf_func_info *funcs;
	struct bpf_line_info *lines;
	__u64 *jlines;
};

static void jit_info_free(struct jit_info *j)
{
	free(j->ksyms);
	free(j->lens);
	free(j->funcs);
	free(j->lines);
	free(j->jlines);
}

static int jit_info_get(int fd, struct jit_info *j)
{
	struct bpf_prog_info n = {};
	__u32 len = sizeof(n);

	memset(j, 0, sizeof(*j));
	if (bpf_obj_get_info_by_fd(fd, &n, &len))
		return -errno;
	if (!n.nr_jited_ksyms || !n.nr_jited_line_info || !n.btf_id)
		return -ENODATA; /* not JITed, or loaded without BTF line info */
	j->ksyms = calloc(n.nr_jited_ksyms, sizeof(*j->ksyms));
	j->lens = calloc(n.nr_jited_func_lens, sizeof(*j->lens));
	j->funcs = calloc(n.nr_func_info, sizeof(*j->funcs));
	j->lines = calloc(n.nr_line_info, sizeof(*j->lines));
	j->jlines = calloc(n.nr_jited_line_info, sizeof(*j->jlines));
	if (!j->ksyms || !j->lens || !j->funcs || !j->lines || !j->jlines)
		return -ENOMEM;
	j->info = (struct bpf_prog_info){
		.btf_id = n.btf_id,
		.nr_jited_ksyms = n.nr_jited_ksyms,
		.jited_ksyms = (__u64)(unsigned long)j->ksyms,
		.nr_jited_func_lens = n.nr_jited_func_lens,
		.jited_func_lens = (__u64)(unsigned long)j->lens,
		.nr_func_info = n.nr_func_info,
		.func_info_rec_size = sizeof(*j->funcs),
		.func_info = (__u64)(unsigned long)j->funcs,
		.nr_line_info = n.nr_line_info,
		.line_info_rec_size = sizeof(*j->lines),
		.line_info = (__u64)(unsigned long)j->lines,
		.nr_jited_line_info = n.nr_jited_line_info,
		.jited_line_info_rec_size = sizeof(*j->jlines),
		.jited_line_info = (__u64)(unsigned long)j->jlines,
	};
	len = sizeof(j->info);
	if (bpf_obj_get_info_by_fd(fd, &j->info, &len))
		return -errno;
	/* the kernel gives the line info of every function, in order, and the
	 * jited line info beside it: one address per line info record */
	if (j->info.nr_jited_line_info != j->info.nr_line_info ||
	    j->info.nr_jited_ksyms != j->info.nr_jited_func_lens)
		return -EPROTO;
	return 0;
}

/* A map line's text must stay one line and one field: tabs and newlines
 * of the source become spaces. */
static void put_clean(FILE *f, const char *s)
{
	for (; s && *s; s++)
		fputc(*s == '\n' || *s == '\t' || *s == '\r' ? ' ' : *s, f);
}

static int cmd_map(void *cfg)
{
	const struct prof_opts *o = cfg;
	struct jit_info j;
	struct btf *btf = NULL;
	int fd, err;

	if (!o->prog_id) {
		fprintf(stderr, "fgprof map: --prog-id is required\n");
		return 2;
	}
	fd = bpf_prog_get_fd_by_id((__u32)o->prog_id);
	if (fd < 0) {
		fprintf(stderr, "fgprof map: program %llu: %s\n", (unsigned long long)o->prog_id,
			strerror(errno));
		return 1;
	}
	err = jit_info_get(fd, &j);
	if (!err) {
		btf = btf__load_from_kernel_by_id(j.info.btf_id);
		if (!btf)
			err = -errno;
	}
	if (err) {
		fprintf(stderr, "fgprof map: program %llu: %s\n", (unsigned long long)o->prog_id,
			err == -ENODATA ? "no JIT image or no BTF line info" : strerror(-err));
		goto out;
	}
	for (__u32 i = 0; i < j.info.nr_jited_ksyms; i++) {
		const struct btf_type *t =
			i < j.info.nr_func_info ? btf__type_by_id(btf, j.funcs[i].type_id) : NULL;

		printf("func\t%llx\t%u\t%s\n", (unsigned long long)j.ksyms[i], j.lens[i],
		       t ? btf__name_by_offset(btf, t->name_off) : "?");
	}
	for (__u32 i = 0; i < j.info.nr_line_info; i++) {
		const char *file = btf__name_by_offset(btf, j.lines[i].file_name_off);
		const char *base = file ? strrchr(file, '/') : NULL;

		printf("line\t%llx\t%s:%u\t", (unsigned long long)j.jlines[i],
		       base ? base + 1 :
		       file ? file :
			      "?",
		       BPF_LINE_INFO_LINE_NUM(j.lines[i].line_col));
		put_clean(stdout, btf__name_by_offset(btf, j.lines[i].line_off));
		putchar('\n');
	}
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "fgprof map: writing the map: %s\n", strerror(errno));
		err = -EIO;
	}
out:
	btf__free(btf);
	jit_info_free(&j);
	close(fd);
	return err ? 1 : 0;
}

struct func {
	__u64 lo, hi;
	char name[64];
	__u64 n;
};
struct line {
	__u64 addr;
	char *where, *file, *src; /* file:line, file, the source text */
	int func;
	__u64 n;
};
struct tally {
	const char *key, *src; /* src: the source text, for a line's row */
	__u64 n;
};

static int by_addr(const void *a, const void *b)
{
	const struct line *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int by_count(const void *a, const void *b)
{
	const struct tally *x = a, *y = b;

	return x->n < y->n ? 1 : x->n > y->n ? -1 : strcmp(x->key, y->key);
}

/* Adds n to key's tally in t (nt entries, room for one more). */
static void tally_add(struct tally *t, size_t *nt, const char *key, const char *src, __u64 n)
{
	for (size_t i = 0; i < *nt; i++)
		if (!strcmp(t[i].key, key)) {
			t[i].n += n;
			return;
		}
	t[(*nt)++] = (struct tally){ key, src ? src : "", n };
}

static void print_tally(const char *what, struct tally *t, size_t nt, __u64 total, size_t top)
{
	printf("\nby %s:\n", what);
	qsort(t, nt, sizeof(*t), by_count);
	for (size_t i = 0; i < nt && i < top; i++)
		printf("%6.1f%%  %-28s %.90s\n", 100.0 * (double)t[i].n / (double)total, t[i].key,
		       t[i].src);
}

static int cmd_report(void *cfg)
{
	const struct prof_opts *o = cfg;
	struct func *fn = NULL;
	struct line *ln = NULL;
	size_t nf = 0, nl = 0, cap_f = 0, cap_l = 0, top = o->top ? o->top : 40;
	__u64 all = 0, in = 0;
	char buf[4096];
	int rc = 1;
	FILE *m;

	if (!o->map) {
		fprintf(stderr, "fgprof report: --map is required\n");
		return 2;
	}
	m = fopen(o->map, "r");
	if (!m) {
		fprintf(stderr, "fgprof report: %s: %s\n", o->map, strerror(errno));
		return 1;
	}
	for (unsigned long no = 1; fgets(buf, sizeof(buf), m); no++) {
		char *f[4] = {}, *save = NULL, *s = buf;
		unsigned long long a;
		int k;

		buf[strcspn(buf, "\n")] = 0;
		for (k = 0; k < 4; k++, s = NULL) {
			f[k] = strtok_r(s, "\t", &save);
			if (!f[k])
				break;
		}
		if (k < 3 || sscanf(f[1], "%llx", &a) != 1) {
			fprintf(stderr, "fgprof report: %s:%lu: not a map line\n", o->map, no);
			goto out;
		}
		if (!strcmp(f[0], "func")) {
			if (nf == cap_f) {
				cap_f = cap_f ? 2 * cap_f : 64;
				fn = realloc(fn, cap_f * sizeof(*fn));
			}
			if (!fn)
				goto oom;
			fn[nf] = (struct func){ .lo = a, .hi = a + strtoull(f[2], NULL, 10) };
			snprintf(fn[nf].name, sizeof(fn[nf].name), "%s", f[3] ? f[3] : "?");
			nf++;
		} else if (!strcmp(f[0], "line")) {
			if (nl == cap_l) {
				cap_l = cap_l ? 2 * cap_l : 1024;
				ln = realloc(ln, cap_l * sizeof(*ln));
			}
			if (!ln)
				goto oom;
			ln[nl] = (struct line){ .addr = a,
						.where = strdup(f[2]),
						.file = strndup(f[2], strcspn(f[2], ":")),
						.src = strdup(f[3] ? f[3] : ""),
						.func = -1 };
			if (!ln[nl].where || !ln[nl].file || !ln[nl].src)
				goto oom;
			nl++;
		} else {
			fprintf(stderr, "fgprof report: %s:%lu: not a map line\n", o->map, no);
			goto out;
		}
	}
	if (!nf || !nl) {
		fprintf(stderr, "fgprof report: %s: no functions or no lines\n", o->map);
		goto out;
	}
	qsort(ln, nl, sizeof(*ln), by_addr);
	for (size_t i = 0; i < nl; i++)
		for (size_t k = 0; k < nf; k++)
			if (ln[i].addr >= fn[k].lo && ln[i].addr < fn[k].hi)
				ln[i].func = (int)k;

	while (fgets(buf, sizeof(buf), stdin)) {
		unsigned long long ip;
		size_t lo = 0, hi = nl;

		if (sscanf(buf, " %llx", &ip) != 1)
			continue; /* perf's blank or header lines */
		all++;
		for (size_t k = 0; k < nf; k++)
			if (ip >= fn[k].lo && ip < fn[k].hi) {
				fn[k].n++;
				in++;
				/* the last line at or below ip, in ip's function */
				while (lo < hi) {
					size_t mid = (lo + hi) / 2;

					if (ln[mid].addr <= ip)
						lo = mid + 1;
					else
						hi = mid;
				}
				if (lo && ln[lo - 1].func == (int)k)
					ln[lo - 1].n++;
				break;
			}
	}
	printf("%llu samples, %llu in the program (%.1f%%)\n", (unsigned long long)all,
	       (unsigned long long)in, all ? 100.0 * (double)in / (double)all : 0.0);
	if (!in) {
		rc = 0;
		goto out;
	}
	{
		struct tally *t = calloc(nl + nf + 1, sizeof(*t));
		size_t nt = 0;

		if (!t)
			goto oom;
		for (size_t k = 0; k < nf; k++)
			if (fn[k].n)
				tally_add(t, &nt, fn[k].name, NULL, fn[k].n);
		print_tally("function", t, nt, in, top);
		nt = 0;
		for (size_t i = 0; i < nl; i++)
			if (ln[i].n)
				tally_add(t, &nt, ln[i].file, NULL, ln[i].n);
		print_tally("file", t, nt, in, top);
		nt = 0;
		for (size_t i = 0; i < nl; i++)
			if (ln[i].n)
				tally_add(t, &nt, ln[i].where, ln[i].src, ln[i].n);
		print_tally("line", t, nt, in, top);
		free(t);
	}
	rc = 0;
	goto out;
oom:
	fprintf(stderr, "fgprof report: out of memory\n");
out:
	fclose(m);
	for (size_t i = 0; ln && i < nl; i++) {
		free(ln[i].where);
		free(ln[i].file);
		free(ln[i].src);
	}
	free(ln);
	free(fn);
	return rc;
}

#define O struct prof_opts
static const struct fg_opt map_opts[] = {
	FG_OPT_U64("prog-id", 'i', O, prog_id, "ID", 1, UINT32_MAX, "a program id",
		   "the loaded program (bpftool prog show)"),
	FG_OPT_END,
};
static const struct fg_opt report_opts[] = {
	FG_OPT_STR("map", 'm', O, map, "FILE", "the program's map (fgprof map)"),
	FG_OPT_U64("top", 't', O, top, "N", 1, 100000, "a number of lines",
		   "the busiest N lines (default 40)"),
	FG_OPT_END,
};
#undef O
static const struct fg_opt prof_opts_common[] = {
	FG_OPT_HELP("help for the command"),
	FG_OPT_END,
};
static const struct fg_cmd prof_cmds[] = {
	{ "map", "--prog-id ID", "a loaded program's functions and jited source lines, for report",
	  0, 0, map_opts, cmd_map },
	{ "report", "--map FILE [--top N] < SAMPLES",
	  "perf's sample addresses by function, file and line of the mapped program", 0, 0,
	  report_opts, cmd_report },
	{ NULL },
};

FG_DEFINE_PROG(prof_prog, "fgprof", "COMMAND [OPTIONS]", prof_opts_common, .cmds = prof_cmds,
	       .help = "A BPF program's perf samples by source file and line, through the "
		       "kernel's jited line info.");

int main(int argc, char **argv)
{
	struct prof_opts o = {};
	struct fg_parsed p;
	int rc;

	rc = fg_prog_args(&prof_prog, argc, argv, &o, &p);
	if (rc >= 0)
		return rc;
	return p.cmd->fn(&o);
}
