// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* tests/logcap.h: stderr captured into a buffer, for the tests that read logs. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "logcap.h"

static char logbuf[1 << 16];
static int saved_fd = -1;
static FILE *cap;

void lc_begin(void)
{
	fflush(stderr);
	cap = tmpfile();
	saved_fd = dup(2);
	if (cap)
		dup2(fileno(cap), 2);
}

const char *lc_end(void)
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

int lc_count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}
