// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* tests/polcase.h: policies read from case files, for the tests. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fgtest.h"
#include "polcase.h"

#define PC_MAX_SIZE (1 << 20)

/* The whole of path, NUL-terminated, in *text to free; 0 or -errno. */
static int pc_read(const char *path, char **text)
{
	FILE *fp = fopen(path, "r");
	char *buf;
	size_t n;
	int err = 0;

	if (!fp)
		return -errno;
	buf = malloc(PC_MAX_SIZE + 1);
	if (!buf) {
		fclose(fp);
		return -ENOMEM;
	}
	n = fread(buf, 1, PC_MAX_SIZE + 1, fp);
	if (ferror(fp))
		err = -EIO;
	else if (n > PC_MAX_SIZE)
		err = -EFBIG;
	fclose(fp);
	if (err) {
		free(buf);
		return err;
	}
	buf[n] = 0;
	*text = buf;
	return 0;
}

static int pc_grow(void **arr, size_t n, size_t size)
{
	void *p;

	if (n & (n - 1)) /* room is kept in powers of two */
		return 0;
	p = realloc(*arr, (n ? 2 * n : 1) * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	return 0;
}

/* A decimal number at *s up to stop; 0, or -EINVAL for anything else. */
static int pc_number(char **s, char stop, int *v)
{
	char *end;
	long n;

	if (!isdigit((unsigned char)**s))
		return -EINVAL;
	n = strtol(*s, &end, 10);
	if (*end != stop || n > 1000000)
		return -EINVAL;
	*v = (int)n;
	*s = end + 1;
	return 0;
}

/* "LINE:COL: MESSAGE" into a new refused policy whose YAML is yaml. */
static int pc_add_bad(struct pc_file *f, char *h, const char *yaml)
{
	struct pf_bad *b;
	size_t len;
	int err;

	err = pc_grow((void **)&f->bad, f->nbad, sizeof(*f->bad));
	if (err)
		return err;
	b = &f->bad[f->nbad];
	if (pc_number(&h, ':', &b->line) || pc_number(&h, ':', &b->col) || *h++ != ' ' || !*h)
		return -EINVAL;
	len = strlen(h);
	if (len >= 2 && h[0] == '"' && h[len - 1] == '"') {
		h[len - 1] = 0;
		h++;
	}
	b->msg = h;
	b->yaml = yaml;
	f->nbad++;
	return 0;
}

/* "NAME" into a new named policy whose YAML is yaml. */
static int pc_add_named(struct pc_file *f, const char *h, const char *yaml)
{
	int err;

	if (!*h || h[strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")])
		return -EINVAL;
	err = pc_grow((void **)&f->named, f->nnamed, sizeof(*f->named));
	if (err)
		return err;
	f->named[f->nnamed++] = (struct pc_named){ .name = h, .yaml = yaml };
	return 0;
}

/* The header at line (its "@@" already checked), whose policy starts at
 * yaml. Sets *open: whether lines of a policy may follow. */
static int pc_header(struct pc_file *f, char *line, const char *yaml, int *open)
{
	char *h = line + 2;

	*open = 0;
	if (*h++ != ' ')
		return -EINVAL;
	if (*h == '#')
		return 0;
	*open = 1;
	if (isdigit((unsigned char)*h))
		return pc_add_bad(f, h, yaml);
	return pc_add_named(f, h, yaml);
}

int pc_load(const char *path, struct pc_file *f)
{
	char *line, *next;
	int err, open = 0, seen = 0;

	memset(f, 0, sizeof(*f));
	err = pc_read(path, &f->text);
	if (err)
		return err;
	for (line = f->text; *line; line = next) {
		char *nl = strchr(line, '\n');

		next = nl ? nl + 1 : line + strlen(line);
		if (strncmp(line, "@@", 2)) {
			/* a line of the policy above, or a comment before the first */
			if (!open && (seen || line[0] != '#')) {
				err = -EINVAL;
				break;
			}
			continue;
		}
		seen = 1;
		if (nl)
			*nl = 0;
		/* the policy above ends here; the header is read from line + 2 */
		line[0] = 0;
		err = pc_header(f, line, next, &open);
		if (err)
			break;
	}
	if (err)
		pc_free(f);
	return err;
}

void pc_free(struct pc_file *f)
{
	free(f->text);
	free(f->named);
	free(f->bad);
	memset(f, 0, sizeof(*f));
}

const char *pc_yaml(const struct pc_file *f, const char *name)
{
	for (size_t i = 0; i < f->nnamed; i++)
		if (!strcmp(f->named[i].name, name))
			return f->named[i].yaml;
	return NULL;
}

void pc_check_refused(const char *path, const char *table)
{
	struct pc_file f;
	int err = pc_load(path, &f);

	if (err) {
		fg_test_fail(__FILE__, __LINE__, "%s: %s (run from the repo root)", path,
			     strerror(-err));
		return;
	}
	if (!f.nbad)
		fg_test_fail(__FILE__, __LINE__, "%s: no refused policies in it", path);
	pf_check_refused(f.bad, f.nbad, table);
	pc_free(&f);
}
