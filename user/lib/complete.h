/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Shell completion generated from a program's command and option tables
 * (opts.h): `floodgate completion bash|zsh`, which `make` runs to make the
 * files `make install` puts in bash-completion's and zsh's folders. A
 * command's first word is completed from its usage ("on ... | off",
 * "enforce|shadow|file", "add PREFIX ... | del ... | list"): its
 * lower-case alternatives are words, FILE is a file name.
 */
#ifndef FG_COMPLETE_H
#define FG_COMPLETE_H

#include <stdio.h>
#include "lib/opts.h"

/* shell: "bash" or "zsh"; 0, or -EINVAL for another shell. */
int fg_prog_completion(FILE *f, const struct fg_prog *prog, const char *shell);

#endif /* FG_COMPLETE_H */
