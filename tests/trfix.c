// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* tests/trfix.h: one named rule and stderr captured, for the tests that read the tracker's log. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "fgtest.h"
#include "lib/log.h"
#include "trfix.h"

static char logbuf[1 << 16];
static int saved_fd = -1;
static FILE *cap;

void tf_init(int argc, char **argv, const char *prog, struct fg_name *names, const char *rule)
{
	fg_test_init(argc, argv);
	fg_log_init(prog, FG_LOG_INFO, false);
	snprintf(names[1].name, sizeof(names[1].name), "%s", rule);
	names[1].in_use = 1;
	names[1].gen = 1;
}

void tf_begin(void)
{
	fflush(stderr);
	cap = tmpfile();
	saved_fd = dup(2);
	if (cap)
		dup2(fileno(cap), 2);
}

const char *tf_end(void)
{
	size_t n = 0;

	fflush(stderr);
	dup2(saved_fd, 2);
	close(saved_fd);
	logbuf[0] = 0;
	if (cap) {
		rewind(cap);
		n = fread(logbuf, 1, sizeof(logbuf) - 1, cap);
		fclose(cap);
		cap = NULL;
	}
	logbuf[n] = 0;
	return logbuf;
}

int tf_count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}
