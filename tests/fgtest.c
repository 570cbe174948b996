// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The test runner behind tests/fgtest.h: counters, filters, the summary line. */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "fgtest.h"

int fg_t_pass, fg_t_fail, fg_t_skip;
int fg_t_cur_failed, fg_t_cur_skipped;
const char *fg_t_cur = "";
char fg_t_filter[4096];
static double fg_t_start; /* the current test's start, CLOCK_MONOTONIC seconds */

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void fg_test_init(int argc, char **argv)
{
	if (argc > 1 && strlen(argv[1]) >= sizeof(fg_t_filter)) {
		fprintf(stderr, "%s: filter longer than %zu characters\n", argv[0],
			sizeof(fg_t_filter) - 1);
		exit(2);
	}
	if (argc > 1)
		snprintf(fg_t_filter, sizeof(fg_t_filter), "%s", argv[1]);
	setvbuf(stdout, NULL, _IOLBF, 0);
}

/* The filter: a substring of the names to run, or "=a,b,c": exactly those. */
int fg_test_selected(const char *name)
{
	const char *f = fg_t_filter + 1;
	size_t n = strlen(name);

	if (fg_t_filter[0] != '=')
		return !fg_t_filter[0] || strstr(name, fg_t_filter);
	for (;;) {
		size_t len = strcspn(f, ",");

		if (len == n && !strncmp(f, name, n))
			return 1;
		if (!f[len])
			return 0;
		f += len + 1;
	}
}

void fg_test_begin(const char *name)
{
	fg_t_cur = name;
	fg_t_cur_failed = 0;
	fg_t_cur_skipped = 0;
	fg_t_start = mono_s();
}

void fg_test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	printf("  %s:%d: ", file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fg_t_cur_failed++;
}

static void vskip(const char *why, va_list ap)
{
	printf("skip - %s: ", fg_t_cur);
	vprintf(why, ap);
	printf("\n");
	fg_t_cur_skipped = 1;
}

void fg_test_skip(const char *why, ...)
{
	va_list ap;

	va_start(ap, why);
	vskip(why, ap);
	va_end(ap);
}

/* Each result line says how long the test took: where a binary's time goes
 * is read from its log, not guessed. */
void fg_test_end(void)
{
	double t = mono_s() - fg_t_start;

	if (fg_t_cur_failed) {
		printf("FAIL - %s (%d checks failed, %.2f s)\n", fg_t_cur, fg_t_cur_failed, t);
		fg_t_fail++;
	} else if (fg_t_cur_skipped) {
		fg_t_skip++;
	} else {
		printf("ok - %s (%.2f s)\n", fg_t_cur, t);
		fg_t_pass++;
	}
}

int fg_test_summary(void)
{
	printf("%d passed, %d failed, %d skipped\n", fg_t_pass, fg_t_fail, fg_t_skip);
	return fg_t_fail ? 1 : 0;
}

int fg_test_skip_all(const char *name, const char *why, ...)
{
	va_list ap;

	fg_test_begin(name);
	va_start(ap, why);
	vskip(why, ap);
	va_end(ap);
	fg_test_end();
	return fg_test_summary();
}

int fg_test_init_root(int argc, char **argv, const char *name, const char *why)
{
	fg_test_init(argc, argv);
	if (geteuid() == 0)
		return 0;
	fg_test_skip_all(name, "%s", why);
	return 1;
}

int fg_test_init_bpf(int argc, char **argv, const char *name, const char *why)
{
	if (fg_test_init_root(argc, argv, name, why))
		return 1;
	libbpf_set_print(NULL);
	return 0;
}

int fg_test_contains_all(const char *file, int line, const char *hay, const struct fg_want *want,
			 size_t n)
{
	int all = 1;

	for (size_t i = 0; i < n; i++) {
		if (hay && strstr(hay, want[i].needle))
			continue;
		fg_test_fail(file, line, "%s: \"%s\" does not contain \"%s\"", want[i].name,
			     hay ? hay : "(null)", want[i].needle);
		all = 0;
	}
	return all;
}
