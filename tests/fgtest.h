/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Tiny test harness shared by tests/test_*.c. Each check names itself and
 * says what it got and what it expected. A test binary runs its tests, then
 * prints "N passed, N failed, N skipped" as its last line; tests/run.sh adds
 * them up.
 *
 *   static void test_x(void) { ASSERT_EQ(f(1), 2, "f(1)"); }
 *   int main(int argc, char **argv) {
 *           FG_RUN(test_x);
 *           return fg_test_summary();
 *   }
 */
#ifndef FG_TEST_H
#define FG_TEST_H

#include <stdio.h>
#include <string.h>
#include <stdarg.h>

/* ---- unit test helpers (dupb2) ---- */
/* FG_RUN_EACH(test_a, test_b, ...): FG_RUN(test_a); FG_RUN(test_b); ... in
 * that order, for a main that runs a list of tests. The names are the list
 * stringified and split at its commas. */
typedef void (*fg_test_fn)(void);
int fg_test_selected(const char *name);
void fg_test_begin(const char *name);
void fg_test_end(void);

static inline void fg_test_run_each(const char *names, const fg_test_fn *fn, size_t n)
{
	static char name[128]; /* fg_test_begin keeps the pointer */

	for (size_t i = 0; i < n; i++) {
		size_t len;

		names += strspn(names, ", \t\n");
		len = strcspn(names, ", \t\n");
		snprintf(name, sizeof(name), "%.*s", (int)len, names);
		names += len;
		if (!fg_test_selected(name))
			continue;
		fg_test_begin(name);
		fn[i]();
		fg_test_end();
	}
}

#define FG_RUN_EACH(...)                                                    \
	fg_test_run_each(#__VA_ARGS__, (const fg_test_fn[]){ __VA_ARGS__ }, \
			 sizeof((const fg_test_fn[]){ __VA_ARGS__ }) / sizeof(fg_test_fn))
/* ---- end of unit test helpers (dupb2) ---- */

extern int fg_t_pass, fg_t_fail, fg_t_skip;
extern int fg_t_cur_failed, fg_t_cur_skipped;
extern const char *fg_t_cur;
extern char fg_t_filter[4096];

/* tests/fgtest.c */
void fg_test_skip(const char *why, ...) __attribute__((format(printf, 1, 2)));
void fg_test_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void fg_test_begin(const char *name);
void fg_test_end(void);
int fg_test_summary(void);
void fg_test_init(int argc, char **argv); /* argv[1]: a substring of names, or "=a,b": those */
int fg_test_selected(const char *name);
/* The whole binary skips, saying why under `name`; prints the summary line and returns 0, main's exit status. */
int fg_test_skip_all(const char *name, const char *why, ...) __attribute__((format(printf, 2, 3)));
/* fg_test_init; then, without root, fg_test_skip_all(name, "%s", why) and 1, so that main returns 0. */
int fg_test_init_root(int argc, char **argv, const char *name, const char *why);
/* fg_test_init_root, then libbpf's own messages silenced (the BPF tests). */
int fg_test_init_bpf(int argc, char **argv, const char *name, const char *why);

#define FG_RUN(fn)                          \
	do {                                \
		if (!fg_test_selected(#fn)) \
			break;              \
		fg_test_begin(#fn);         \
		fn();                       \
		fg_test_end();              \
	} while (0)

/* Setup that did not work: one failed check under `name`, then the summary; main's exit status, 1. */
#define FG_FAIL_ALL(name, ...)                                 \
	({                                                     \
		fg_test_begin(name);                           \
		fg_test_fail(__FILE__, __LINE__, __VA_ARGS__); \
		fg_test_end();                                 \
		fg_test_summary();                             \
	})

/* Each ASSERT evaluates to 1 when it held, so a test can stop early. */
#define ASSERT_TRUE(cond, name)                                                                  \
	({                                                                                       \
		int ___ok = !!(cond);                                                            \
		if (!___ok)                                                                      \
			fg_test_fail(__FILE__, __LINE__, "%s: expected true (%s)", name, #cond); \
		___ok;                                                                           \
	})

/* got OP exp, as long longs; on failure "NAME: got G, expected REL E" (REL: "", ">= ", "<= "). */
#define ASSERT_CMP_(got, op, rel, exp, name)                                                   \
	({                                                                                     \
		long long ___g = (long long)(got), ___e = (long long)(exp);                    \
		int ___ok = ___g op ___e;                                                      \
		if (!___ok)                                                                    \
			fg_test_fail(__FILE__, __LINE__, "%s: got %lld, expected " rel "%lld", \
				     name, ___g, ___e);                                        \
		___ok;                                                                         \
	})

#define ASSERT_EQ(got, exp, name) ASSERT_CMP_(got, ==, "", exp, name)
#define ASSERT_GE(got, exp, name) ASSERT_CMP_(got, >=, ">= ", exp, name)
#define ASSERT_LE(got, exp, name) ASSERT_CMP_(got, <=, "<= ", exp, name)

#define ASSERT_NEQ(got, exp, name)                                                               \
	({                                                                                       \
		long long ___g = (long long)(got), ___e = (long long)(exp);                      \
		int ___ok = ___g != ___e;                                                        \
		if (!___ok)                                                                      \
			fg_test_fail(__FILE__, __LINE__, "%s: got %lld, expected anything else", \
				     name, ___g);                                                \
		___ok;                                                                           \
	})

#define ASSERT_OK(err, name)                                                                      \
	({                                                                                        \
		long long ___g = (long long)(err);                                                \
		int ___ok = ___g == 0;                                                            \
		if (!___ok)                                                                       \
			fg_test_fail(__FILE__, __LINE__, "%s: failed with %lld (%s)", name, ___g, \
				     strerror(___g < 0 ? (int)-___g : (int)___g));                \
		___ok;                                                                            \
	})

#define ASSERT_STR_CONTAINS(hay, needle, name)                                                 \
	({                                                                                     \
		const char *___h = (hay), *___n = (needle);                                    \
		int ___ok = ___h && strstr(___h, ___n);                                        \
		if (!___ok)                                                                    \
			fg_test_fail(__FILE__, __LINE__, "%s: \"%s\" does not contain \"%s\"", \
				     name, ___h ? ___h : "(null)", ___n);                      \
		___ok;                                                                         \
	})

/* One substring a text must contain, and the name of that check. */
struct fg_want {
	const char *needle, *name;
};

/* ASSERT_STR_CONTAINS(hay, w.needle, w.name) for each w of the array want;
 * 1 when all held. */
#define ASSERT_CONTAINS_ALL(hay, want) \
	fg_test_contains_all(__FILE__, __LINE__, (hay), (want), sizeof(want) / sizeof((want)[0]))
int fg_test_contains_all(const char *file, int line, const char *hay, const struct fg_want *want,
			 size_t n);

/* |got - exp| <= tol, in doubles (the caller includes math.h). */
#define ASSERT_NEAR(got, exp, tol, name)                                                           \
	({                                                                                         \
		double ___g = (got), ___e = (exp), ___t = (tol);                                   \
		int ___ok = fabs(___g - ___e) <= ___t;                                             \
		if (!___ok)                                                                        \
			fg_test_fail(__FILE__, __LINE__, "%s: got %.12g, expected %.12g (+-%.3g)", \
				     name, ___g, ___e, ___t);                                      \
		___ok;                                                                             \
	})

/* ---- data-path test helpers (dupa) ---- */

/*
 * A test binary's tests as a table, run in order by fg_test_main_bpf.
 * setup (optional) runs first and, when it fails, has said why with a failed
 * check: the test is not run. teardown (optional) runs after a test whose
 * setup held. FG_CASE(fn) names the case after its function, as FG_RUN does.
 */
struct fg_test_case {
	const char *name;
	void (*fn)(void);
	int (*setup)(void);
	void (*teardown)(void);
};

#define FG_CASE(fn)                 \
	{                           \
#fn, fn, NULL, NULL \
	}
#define FG_CASE_FIXTURE(fn, su, td) \
	{                           \
#fn, fn, su, td     \
	}

/* main() of a test binary that needs root and BPF: fg_test_init_bpf (without
 * root every test is skipped, saying why under name), then each case the
 * filter selects, then the summary line; main's exit status. */
static inline int fg_test_main_bpf(int argc, char **argv, const char *name, const char *why,
				   const struct fg_test_case *cases, size_t n)
{
	if (fg_test_init_bpf(argc, argv, name, why))
		return 0;
	for (size_t i = 0; i < n; i++) {
		const struct fg_test_case *c = &cases[i];

		if (!fg_test_selected(c->name))
			continue;
		fg_test_begin(c->name);
		if (!c->setup || !c->setup()) {
			c->fn();
			if (c->teardown)
				c->teardown();
		}
		fg_test_end();
	}
	return fg_test_summary();
}

/* int main() running the array cases through fg_test_main_bpf. */
#define FG_MAIN_BPF(name, why, cases)                                        \
	int main(int argc, char **argv)                                      \
	{                                                                    \
		return fg_test_main_bpf(argc, argv, name, why, cases,        \
					sizeof(cases) / sizeof((cases)[0])); \
	}

#endif /* FG_TEST_H */
