// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * libyaml underneath the policy compiler: loading exactly one document,
 * walking its nodes, and errors that name the line and column at fault.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "policy/policy_int.h"
#include "lib/units.h"

/* ---- errors ----------------------------------------------------------- */

static int vmark_err(struct fg_err *err, yaml_mark_t m, const char *fmt, va_list ap)
{
	err->line = (int)m.line + 1;
	err->col = (int)m.column + 1;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	return -EINVAL;
}

static int __attribute__((format(printf, 3, 4)))
mark_err(struct fg_err *err, yaml_mark_t m, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vmark_err(err, m, fmt, ap);
	va_end(ap);
	return ret;
}

int pol_fail_at(struct pol_ctx *c, yaml_mark_t m, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vmark_err(c->err, m, fmt, ap);
	va_end(ap);
	return ret;
}

int pol_fail_nomem(struct pol_ctx *c)
{
	c->err->line = 0;
	c->err->col = 0;
	snprintf(c->err->msg, sizeof(c->err->msg), "out of memory");
	return -ENOMEM;
}

void fg_err_format(const struct fg_err *err, char *buf, size_t len)
{
	if (!len)
		return;
	if (err->line > 0)
		snprintf(buf, len, "%s:%d:%d: %s", err->file, err->line, err->col, err->msg);
	else
		snprintf(buf, len, "%s: %s", err->file, err->msg);
}

/* ---- YAML helpers ---------------------------------------------------------- */

yaml_node_t *pol_node(struct pol_ctx *c, int idx)
{
	return yaml_document_get_node(c->doc, idx);
}

static const char *kind(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_SCALAR_NODE:
		return "a scalar";
	case YAML_SEQUENCE_NODE:
		return "a list";
	case YAML_MAPPING_NODE:
		return "a mapping";
	default:
		return "nothing";
	}
}

int pol_is_null(const yaml_node_t *n)
{
	const char *v;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	v = (const char *)n->data.scalar.value;
	return !strcmp(v, "") || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
	       !strcmp(v, "NULL");
}

int pol_scalar(struct pol_ctx *c, yaml_node_t *n, const char *what, const char **out)
{
	if (n->type != YAML_SCALAR_NODE)
		return FAIL(c, n, "%s: expected a scalar, got %s", what, kind(n));
	if (strlen((const char *)n->data.scalar.value) != n->data.scalar.length)
		return FAIL(c, n, "%s: NUL character in value", what);
	*out = (const char *)n->data.scalar.value;
	return 0;
}

static int expect_map(struct pol_ctx *c, yaml_node_t *n, const char *what, const char *example)
{
	if (n->type == YAML_MAPPING_NODE)
		return 0;
	return FAIL(c, n, "%s: expected a mapping like %s, got %s", what, example, kind(n));
}

int pol_expect_seq(struct pol_ctx *c, yaml_node_t *n, const char *what)
{
	if (n->type == YAML_SEQUENCE_NODE)
		return 0;
	return FAIL(c, n, "%s: expected a list, got %s", what, kind(n));
}

int pol_each_item(struct pol_ctx *c, yaml_node_t *n, const char *what, int max, const char *more,
		  pol_item_fn *fn, void *arg, int *count)
{
	yaml_node_item_t *it;
	int idx = 0, err;

	*count = 0;
	if (pol_is_null(n))
		return 0;
	err = pol_expect_seq(c, n, what);
	if (err)
		return err;
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *e = pol_node(c, *it);

		if (!e)
			return FAIL(c, n, "%s: malformed list", what);
		if (max && idx == max)
			return FAIL(c, e, "too many %s (at most %d%s)", what, max, more);
		err = fn(c, e, idx, arg);
		if (err)
			return err;
		idx++;
	}
	*count = idx;
	return 0;
}

/* Edit distance (insert, delete, substitute, swap two neighbours) between a
 * and b, cut off at 9 (keys are short). */
static int distance(const char *a, const char *b)
{
	int la = (int)strlen(a), lb = (int)strlen(b);
	int d[33][33];

	if (la > 32 || lb > 32)
		return 9;
	for (int i = 0; i <= la; i++)
		d[i][0] = i;
	for (int j = 0; j <= lb; j++)
		d[0][j] = j;
	for (int i = 1; i <= la; i++) {
		for (int j = 1; j <= lb; j++) {
			int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);

			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	}
	return d[la][lb] < 9 ? d[la][lb] : 9;
}

/* The known name closest to s, if it is close enough to be a typo (at most
 * 2 edits, and at most a third of its length); NULL otherwise. */
const char *pol_nearest(const char *s, const char *const *names, int n)
{
	const char *best = NULL;
	int bd = 9;

	for (int i = 0; i < n; i++) {
		int d = distance(s, names[i]);

		if (d < bd) {
			bd = d;
			best = names[i];
		}
	}
	return best && bd <= 2 && bd * 3 <= (int)strlen(best) ? best : NULL;
}
#define nearest pol_nearest

/* Walk a mapping, recording each known key's value in ks->val. */
static int read_keys(struct pol_ctx *c, yaml_node_t *map, struct pol_keys *ks)
{
	yaml_node_pair_t *p;

	for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = pol_node(c, p->key), *v = pol_node(c, p->value);
		const char *s;
		char list[256];
		size_t off = 0;
		int i, err;

		if (!k || !v)
			return FAIL(c, map, "%s: malformed mapping", ks->where);
		if (k->type != YAML_SCALAR_NODE)
			return FAIL(c, k, "%s: a key must be a word, got %s", ks->where, kind(k));
		err = pol_scalar(c, k, ks->where, &s);
		if (err)
			return err;
		for (i = 0; i < ks->n; i++)
			if (!strcmp(s, ks->names[i]))
				break;
		if (i == ks->n) {
			const char *near = nearest(s, ks->names, ks->n);

			list[0] = 0;
			for (i = 0; i < ks->n && off < sizeof(list); i++)
				off += snprintf(list + off, sizeof(list) - off, "%s%s",
						i ? ", " : "", ks->names[i]);
			if (near)
				return FAIL(
					c, k,
					"unknown key \"%.64s\" in %s: did you mean %s? (expected %s)",
					s, ks->where, near, list);
			return FAIL(c, k, "unknown key \"%.64s\" in %s (expected %s)", s, ks->where,
				    list);
		}
		if (ks->seen & (1u << i))
			return FAIL(c, k, "duplicate key \"%s\" in %s (first at line %d)", s,
				    ks->where, ks->first_line[i]);
		ks->seen |= 1u << i;
		ks->first_line[i] = (int)k->start_mark.line + 1;
		ks->val[i] = v;
	}
	return 0;
}

int pol_read_map(struct pol_ctx *c, yaml_node_t *n, const char *what, const char *example,
		 struct pol_keys *ks)
{
	int err = expect_map(c, n, what, example);

	return err ? err : read_keys(c, n, ks);
}

int pol_parse_enum(struct pol_ctx *c, yaml_node_t *n, const char *what, const char *const *names,
		   int nnames, int *out)
{
	char list[128];
	size_t off = 0;
	const char *s;
	int i, err;

	err = pol_scalar(c, n, what, &s);
	if (err)
		return err;
	for (i = 0; i < nnames; i++) {
		if (!strcmp(s, names[i])) {
			*out = i;
			return 0;
		}
	}
	list[0] = 0;
	for (i = 0; i < nnames && off < sizeof(list); i++)
		off += snprintf(list + off, sizeof(list) - off, "%s%s", i ? " | " : "", names[i]);
	if (pol_nearest(s, names, nnames))
		return FAIL(c, n, "%s: bad value \"%.64s\": did you mean %s? (expected %s)", what,
			    s, pol_nearest(s, names, nnames), list);
	return FAIL(c, n, "%s: bad value \"%.64s\" (expected %s)", what, s, list);
}

int pol_parse_bool(struct pol_ctx *c, yaml_node_t *n, const char *what, int *out)
{
	static const char *const t[] = { "true", "True", "TRUE", "yes", "Yes",
					 "YES",	 "on",	 "On",	 "ON" };
	static const char *const f[] = { "false", "False", "FALSE", "no", "No",
					 "NO",	  "off",   "Off",   "OFF" };
	const char *s;
	size_t i;
	int err;

	err = pol_scalar(c, n, what, &s);
	if (err)
		return err;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (!strcmp(s, t[i])) {
			*out = 1;
			return 0;
		}
		if (!strcmp(s, f[i])) {
			*out = 0;
			return 0;
		}
	}
	return FAIL(c, n, "%s: expected true or false, got \"%.64s\"", what, s);
}

int pol_parse_duration(struct pol_ctx *c, yaml_node_t *n, const char *sec, const char *what,
		       const char *eg, unsigned int flags, const char **s, __u64 *ns)
{
	int err = pol_scalar(c, n, what, s);

	if (err)
		return err;
	if (fg_parse_duration(*s, ns) || ((flags & POL_DUR_WHOLE_MS) && *ns % 1000000) ||
	    ((flags & POL_DUR_NONZERO) && !*ns))
		return FAIL(c, n, "%s%s: bad duration \"%.64s\" (%s)", sec, what, *s, eg);
	return 0;
}

int pol_need_scalar(struct pol_ctx *c, yaml_node_t *map, yaml_node_t *v, const char *what,
		    const char *missing, const char **s)
{
	if (!v)
		return FAIL(c, map, "%s", missing);
	return pol_scalar(c, v, what, s);
}

int pol_parse_uint(struct pol_ctx *c, yaml_node_t *n, const char *what, __u64 lo, __u64 hi,
		   __u64 *out)
{
	const char *s;
	int err;

	err = pol_scalar(c, n, what, &s);
	if (err)
		return err;
	err = fg_parse_u64(s, out);
	if (err == -ERANGE || (!err && (*out < lo || *out > hi)))
		return FAIL(c, n, "%s: %.64s is out of range %llu..%llu", what, s,
			    (unsigned long long)lo, (unsigned long long)hi);
	if (err)
		return FAIL(c, n, "%s: expected a number, got \"%.64s\"", what, s);
	return 0;
}

/* Byte offset -> 1-based line and column, for reader errors. */
static void offset_mark(const char *buf, size_t len, size_t off, struct fg_err *err)
{
	size_t i;

	err->line = 1;
	err->col = 1;
	for (i = 0; i < off && i < len; i++) {
		if (buf[i] == '\n') {
			err->line++;
			err->col = 1;
		} else {
			err->col++;
		}
	}
}

static int yaml_fail(yaml_parser_t *p, const char *buf, size_t len, struct fg_err *err)
{
	if (p->error == YAML_MEMORY_ERROR) {
		snprintf(err->msg, sizeof(err->msg), "out of memory");
		return -ENOMEM;
	}
	if (p->error == YAML_READER_ERROR) {
		offset_mark(buf, len, p->problem_offset, err);
		snprintf(err->msg, sizeof(err->msg), "%s", p->problem ? p->problem : "cannot read");
		return -EINVAL;
	}
	err->line = (int)p->problem_mark.line + 1;
	err->col = (int)p->problem_mark.column + 1;
	if (p->context)
		snprintf(err->msg, sizeof(err->msg), "YAML: %s (%s started at %d:%d)",
			 p->problem ? p->problem : "syntax error", p->context,
			 (int)p->context_mark.line + 1, (int)p->context_mark.column + 1);
	else
		snprintf(err->msg, sizeof(err->msg), "YAML: %s",
			 p->problem ? p->problem : "syntax error");
	return -EINVAL;
}

/*
 * libyaml's scanner is quadratic in the depth of flow collections ([ and
 * {): 100,000 nested brackets in 200 KB took 45 s of CPU, during which a
 * reloading daemon ignored SIGTERM. No policy nests deeper than a few
 * levels, so refuse depth > FG_MAX_FLOW_DEPTH before libyaml sees the text.
 * The scan skips quoted strings and comments; brackets inside plain
 * scalars count, which only matters past 64 unbalanced ones.
 */
#define FG_MAX_FLOW_DEPTH 64
static int flow_depth_check(const char *buf, size_t len, struct fg_err *err)
{
	int depth = 0, line = 1, col = 0;
	char quote = 0, prev = '\n';
	int comment = 0;

	for (size_t i = 0; i < len; i++) {
		char ch = buf[i];

		col++;
		if (ch == '\n') {
			line++;
			col = 0;
			comment = 0; /* quoted scalars may span lines */
		} else if (comment) {
			;
		} else if (quote) {
			if (quote == '"' && ch == '\\' && i + 1 < len)
				i++, col++;
			else if (ch == quote)
				quote = 0;
		} else if (ch == '#' && (prev == ' ' || prev == '\t' || prev == '\n')) {
			comment = 1;
		} else if (ch == '\'' || ch == '"') {
			quote = ch;
		} else if (ch == '[' || ch == '{') {
			if (++depth > FG_MAX_FLOW_DEPTH) {
				err->line = line;
				err->col = col;
				snprintf(err->msg, sizeof(err->msg),
					 "collections nested deeper than %d levels",
					 FG_MAX_FLOW_DEPTH);
				return -EINVAL;
			}
		} else if ((ch == ']' || ch == '}') && depth > 0) {
			depth--;
		}
		prev = ch;
	}
	return 0;
}

/* One document or an error; a second document would be silently ignored. */
int pol_load_document(const char *buf, size_t len, yaml_document_t *doc, struct fg_err *err)
{
	yaml_parser_t parser;
	yaml_document_t doc2;
	yaml_node_t *root2;
	int ret;

	ret = flow_depth_check(buf, len, err);
	if (ret)
		return ret;
	if (!yaml_parser_initialize(&parser)) {
		snprintf(err->msg, sizeof(err->msg), "out of memory");
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&parser, doc)) {
		ret = yaml_fail(&parser, buf, len, err);
		yaml_parser_delete(&parser);
		return ret;
	}
	if (!yaml_document_get_root_node(doc)) {
		err->line = 1;
		err->col = 1;
		snprintf(err->msg, sizeof(err->msg),
			 "empty policy (expected a mapping with rules:)");
		ret = -EINVAL;
	} else if (!yaml_parser_load(&parser, &doc2)) {
		ret = yaml_fail(&parser, buf, len, err);
	} else {
		root2 = yaml_document_get_root_node(&doc2);
		if (root2)
			ret = mark_err(err, root2->start_mark,
				       "a policy file holds one YAML document, found a second");
		yaml_document_delete(&doc2);
	}
	yaml_parser_delete(&parser);
	if (ret)
		yaml_document_delete(doc);
	return ret;
}
