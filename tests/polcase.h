/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Policies kept as YAML in case files (the .cases files of tests/policies/cases/), for
 * the tests that parse many: each is written as it reaches the compiler,
 * not as an escaped C string. The format, one line at a time:
 *
 *   # ...                  before the first "@@" line: a comment
 *   @@ NAME                a named policy (a word: letters, digits, _ and -)
 *   @@ LINE:COL: MESSAGE   a policy the compiler refuses at LINE:COL with a
 *                          message containing MESSAGE ("MESSAGE" in double
 *                          quotes keeps spaces at its end)
 *   @@ # ...               a note between policies
 *   anything else          a line of the policy above, "\n" included
 *
 * A policy ends at the next "@@" line or at the end of the file, so the
 * empty policy is a "@@" line followed by another.
 */
#ifndef FG_TEST_POLCASE_H
#define FG_TEST_POLCASE_H

#include <stddef.h>
#include "polfix.h"

struct pc_named {
	const char *name, *yaml;
};

struct pc_file {
	char *text;		/* the file, cut into the strings below */
	struct pc_named *named; /* the "@@ NAME" policies, in order */
	size_t nnamed;
	struct pf_bad *bad; /* the "@@ LINE:COL: MESSAGE" policies */
	size_t nbad;
};

/* path (relative to the repo root, where the tests run) into *f; 0 or
 * -errno (-EINVAL for a "@@" line that is neither form). */
int pc_load(const char *path, struct pc_file *f);
void pc_free(struct pc_file *f);
/* The policy called name; NULL if f has none. */
const char *pc_yaml(const struct pc_file *f, const char *name);
/* pf_check_refused on the refused policies of path, named table in the
 * checks; a failed check if path cannot be loaded or holds none. */
void pc_check_refused(const char *path, const char *table);

#endif /* FG_TEST_POLCASE_H */
