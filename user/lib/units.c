// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Number, duration, rate and burst parsers; see units.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/units.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static int is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

/* The decimal at the start of s; *end is what follows it. */
static int leading_u64(const char *s, unsigned long long *v, char **end)
{
	/* strtoull skips spaces and takes a sign; a number here does not */
	if (!s || !is_digit(s[0]))
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, end, 10);
	return errno == ERANGE ? -ERANGE : 0;
}

int fg_parse_u64(const char *s, __u64 *out)
{
	unsigned long long v;
	char *end;
	int err = leading_u64(s, &v, &end);

	if (err)
		return err;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

int fg_parse_duration(const char *s, __u64 *ns)
{
	static const struct {
		const char *unit;
		__u64 mult;
	} units[] = {
		{ "", 1000000000ull },
		{ "ns", 1 },
		{ "us", 1000 },
		{ "ms", 1000000 },
		{ "s", 1000000000ull },
		{ "m", 60 * 1000000000ull },
		{ "h", 3600 * 1000000000ull },
		{ "d", 86400 * 1000000000ull },
	};
	unsigned long long v;
	char *end;
	size_t i;
	int err = leading_u64(s, &v, &end);

	if (err)
		return err;
	for (i = 0; i < ARRAY_LEN(units); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		if (__builtin_mul_overflow(v, units[i].mult, &v))
			return -ERANGE;
		*ns = v;
		return 0;
	}
	return -EINVAL;
}

/*
 * "N" or "N.F": a non-negative decimal. Returns -ERANGE when the integer
 * part does not fit 64 bits.
 */
static int parse_decimal(const char **sp, long double *out)
{
	const char *s = *sp;
	__u64 ip = 0;
	long double v, scale = 1;
	int nd = 0;

	for (; is_digit(*s); s++, nd++) {
		if (__builtin_mul_overflow(ip, 10, &ip) ||
		    __builtin_add_overflow(ip, (__u64)(*s - '0'), &ip))
			return -ERANGE;
	}
	if (!nd)
		return -EINVAL;
	v = ip;
	if (*s == '.') {
		s++;
		if (!is_digit(*s))
			return -EINVAL;
		for (; is_digit(*s); s++) {
			scale /= 10;
			v += (*s - '0') * scale;
		}
	}
	*sp = s;
	*out = v;
	return 0;
}

static const struct unit {
	const char *s;
	long double mult;
} byte_units[] = {
	{ "GiB", 1073741824.0L }, { "MiB", 1048576.0L }, { "KiB", 1024.0L }, { "GB", 1e9L },
	{ "MB", 1e6L },		  { "KB", 1e3L },	 { "kB", 1e3L },     { "B", 1.0L },
};

/* Optional byte unit at *sp: returns the multiplier, 0 for packets. */
static long double parse_byte_unit(const char **sp)
{
	size_t i, l;

	for (i = 0; i < ARRAY_LEN(byte_units); i++) {
		l = strlen(byte_units[i].s);
		if (!strncmp(*sp, byte_units[i].s, l)) {
			*sp += l;
			return byte_units[i].mult;
		}
	}
	return 0;
}

static const char *skip_spaces(const char *s)
{
	while (*s == ' ')
		s++;
	return s;
}

/* A number and an optional byte unit ("20", "1.5 MB"): *v in cost units,
 * *bytes whether a byte unit was given; *sp moves past both. */
static int parse_amount(const char **sp, long double *v, int *bytes)
{
	long double mult;
	int err = parse_decimal(sp, v);

	if (err)
		return err;
	*sp = skip_spaces(*sp);
	mult = parse_byte_unit(sp);
	*bytes = mult != 0;
	if (mult)
		*v *= mult;
	return 0;
}

int fg_parse_rate(const char *s, long double *rate, int *bytes)
{
	static const struct {
		const char *s;
		long double secs;
	} periods[] = {
		/* nft's spellings too: rate 10/second, /minute, /hour, /day */
		{ "s", 1 },	  { "sec", 1 },	 { "second", 1 },  { "m", 60 },	     { "min", 60 },
		{ "minute", 60 }, { "h", 3600 }, { "hour", 3600 }, { "day", 86400 },
	};
	long double v;
	size_t i;
	int err;

	err = parse_amount(&s, &v, bytes);
	if (err)
		return err;
	s = skip_spaces(s);
	if (*s++ != '/')
		return -EINVAL;
	s = skip_spaces(s);
	for (i = 0; i < ARRAY_LEN(periods); i++) {
		if (!strcmp(s, periods[i].s)) {
			*rate = v / periods[i].secs;
			return 0;
		}
	}
	return -EINVAL;
}

int fg_parse_burst(const char *s, long double *burst, int *bytes)
{
	long double v;
	int err;

	err = parse_amount(&s, &v, bytes);
	if (err)
		return err;
	if (*s)
		return -EINVAL;
	*burst = v;
	return 0;
}

void fg_format_amount(char *buf, size_t len, double v, int bytes)
{
	if (!bytes)
		snprintf(buf, len, "%.10g", v);
	else if (v >= 1e9 && fmod(v, 1e7) == 0)
		snprintf(buf, len, "%.10gGB", v / 1e9);
	else if (v >= 1e6 && fmod(v, 1e4) == 0)
		snprintf(buf, len, "%.10gMB", v / 1e6);
	else if (v >= 1e3 && fmod(v, 10) == 0)
		snprintf(buf, len, "%.10gKB", v / 1e3);
	else
		snprintf(buf, len, "%.10gB", v);
}
