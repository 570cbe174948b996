// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* bash and zsh completion scripts from the command and option tables (complete.h). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include "lib/complete.h"

/* The first positional word's literal alternatives of usage, space-separated
 * into buf ("on off"); *file: one of them is FILE. An alternative starts
 * the usage and follows each '|'; its first word that is not an option is
 * the one (brackets only group). */
static void first_words(const char *usage, char *buf, size_t len, bool *file)
{
	const char *p = usage;
	bool want = true; /* the current alternative's first word is still to come */
	size_t o = 0;

	buf[0] = 0;
	*file = false;
	while (*p) {
		size_t n;

		p += strspn(p, " []");
		if (*p == '|') {
			want = true;
			p++;
			continue;
		}
		n = strcspn(p, " []|");
		if (!n)
			continue;
		if (p[0] != '-' && want) {
			if (islower((unsigned char)p[0]) && o + n + 2 < len)
				o += (size_t)snprintf(buf + o, len - o, "%s%.*s", o ? " " : "",
						      (int)n, p);
			*file |= n == 4 && !strncmp(p, "FILE", 4);
			want = false;
		}
		p += n;
	}
}

static void opt_words(FILE *f, const struct fg_opt *o)
{
	for (; o && o->kind; o++) {
		if (o->name)
			fprintf(f, " --%s", o->name);
		if (o->sname)
			fprintf(f, " -%c", o->sname);
	}
}

/* The options that take a value, as case patterns on "$cmd:$word" (cmd
 * "*" for the program's own, which every command takes too). */
static void value_opts(FILE *f, const char *cmd, const struct fg_opt *o, const char **sep)
{
	for (; o && o->kind; o++) {
		if (!o->arg || (o->flags & FG_OPT_OPTIONAL))
			continue;
		if (o->name) {
			fprintf(f, "%s%s:--%s", *sep, cmd, o->name);
			*sep = "|";
		}
		if (o->sname) {
			fprintf(f, "%s%s:-%c", *sep, cmd, o->sname);
			*sep = "|";
		}
	}
}

static void all_value_opts(FILE *f, const struct fg_prog *prog)
{
	const char *sep = "";

	value_opts(f, "*", prog->opts, &sep);
	for (const struct fg_cmd *c = prog->cmds; c && c->name; c++)
		value_opts(f, c->name, c->opts, &sep);
}

static const char bash_head[] =
	"\tfor ((i = 1; i < COMP_CWORD; i++)); do\n"
	"\t\tw=${COMP_WORDS[i]}\n"
	"\t\tcase $cmd:$w in\n"
	"\t\t%s) ((i++)) ;;\n" /* the options that take a value: skip it */
	"\t\t*:-*) ;;\n"
	"\t\t*) if [[ -z $cmd ]]; then cmd=$w; else ((npos++)); fi ;;\n"
	"\t\tesac\n"
	"\tdone\n"
	"\tcase $cmd:$prev in\n"
	"\t*:--pin-dir|*:-p) COMPREPLY=($(compgen -d -- \"$cur\")); return ;;\n"
	"\t*:--interface|*:-i)\n"
	"\t\tCOMPREPLY=($(compgen -W \"$(ls /sys/class/net 2>/dev/null)\" -- \"$cur\"))\n"
	"\t\treturn ;;\n"
	"\t%s) return ;;\n" /* a value: nothing to offer */
	"\tesac\n"
	"\tif [[ -z $cmd ]]; then\n"
	"\t\tif [[ $cur == -* ]]; then\n"
	"\t\t\tCOMPREPLY=($(compgen -W \"$globals\" -- \"$cur\"))\n"
	"\t\telse\n"
	"\t\t\tCOMPREPLY=($(compgen -W '%s' -- \"$cur\"))\n"
	"\t\tfi\n"
	"\t\treturn\n"
	"\tfi\n"
	"\tcase $cmd in\n";

static void bash(FILE *f, const struct fg_prog *prog)
{
	char *vals = NULL, *names = NULL, words[256];
	size_t vlen = 0, nlen = 0;
	FILE *v = open_memstream(&vals, &vlen), *n = open_memstream(&names, &nlen);
	bool file;

	if (!v || !n) {
		if (v)
			fclose(v);
		if (n)
			fclose(n);
		free(vals);
		free(names);
		return;
	}
	all_value_opts(v, prog);
	fclose(v);
	for (const struct fg_cmd *c = prog->cmds; c && c->name; c++)
		fprintf(n, "%s%s", c == prog->cmds ? "" : " ", c->name);
	fclose(n);
	fprintf(f,
		"# bash completion for %s, generated from its command table by\n"
		"# '%s completion bash'. Put it in\n"
		"# /usr/share/bash-completion/completions/%s, or source it.\n"
		"_%s() {\n"
		"\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
		"\tlocal cmd= npos=0 i w\n"
		"\tlocal globals='",
		prog->name, prog->name, prog->name, prog->name);
	opt_words(f, prog->opts);
	fprintf(f, "'\n");
	fprintf(f, bash_head, vals, vals, names);
	free(vals);
	free(names);
	for (const struct fg_cmd *c = prog->cmds; c && c->name; c++) {
		first_words(c->usage, words, sizeof(words), &file);
		fprintf(f, "\t%s)\n\t\tif [[ $cur == -* ]]; then\n\t\t\tCOMPREPLY=($(compgen -W \"",
			c->name);
		opt_words(f, c->opts);
		fprintf(f, " $globals\" -- \"$cur\"))\n\t\telif ((npos == 0)); then\n");
		if (file)
			fprintf(f, "\t\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n");
		else
			fprintf(f, "\t\t\tCOMPREPLY=($(compgen -W '%s' -- \"$cur\"))\n", words);
		fprintf(f, "\t\tfi ;;\n");
	}
	fprintf(f, "\tesac\n}\ncomplete -F _%s %s\n", prog->name, prog->name);
}

/* help text inside a zsh spec: no brackets, colons or quotes */
static void zsh_text(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc(strchr("[]:'\\", *s) ? ' ' : *s, f);
}

static void zsh_opts(FILE *f, const struct fg_opt *o)
{
	for (; o && o->kind; o++) {
		fprintf(f, " \\\n\t\t'");
		if (o->name && o->sname)
			fprintf(f, "(-%c --%s)'{-%c,--%s}'", o->sname, o->name, o->sname, o->name);
		else if (o->name)
			fprintf(f, "--%s", o->name);
		else
			fprintf(f, "-%c", o->sname);
		fputc('[', f);
		zsh_text(f, o->help ? o->help : "");
		fputc(']', f);
		if (o->arg && !strcmp(o->arg, "DIR"))
			fprintf(f, ":dir:_files -/");
		else if (o->arg && !strcmp(o->arg, "FILE"))
			fprintf(f, ":file:_files");
		else if (o->arg && !strcmp(o->arg, "IF"))
			fprintf(f, ":interface:_net_interfaces");
		else if (o->arg)
			fprintf(f, ":%s:", o->arg);
		fputc('\'', f);
	}
}

static void zsh(FILE *f, const struct fg_prog *prog)
{
	char words[256];
	bool file;

	fprintf(f,
		"#compdef %s\n# zsh completion for %s, generated from its command table by\n"
		"# '%s completion zsh'. Put it in a folder of $fpath as _%s.\n"
		"_%s() {\n\tlocal curcontext=$curcontext state line\n\tlocal -a cmds\n\tcmds=(\n",
		prog->name, prog->name, prog->name, prog->name, prog->name);
	for (const struct fg_cmd *c = prog->cmds; c && c->name; c++) {
		fprintf(f, "\t\t'%s:", c->name);
		zsh_text(f, c->help);
		fprintf(f, "'\n");
	}
	fprintf(f, "\t)\n\t_arguments -C");
	zsh_opts(f, prog->opts);
	fprintf(f, " \\\n\t\t'1:command:->cmd' '*::arg:->args'\n\tcase $state in\n"
		   "\tcmd) _describe command cmds ;;\n\targs)\n\t\tcase $words[1] in\n");
	for (const struct fg_cmd *c = prog->cmds; c && c->name; c++) {
		first_words(c->usage, words, sizeof(words), &file);
		fprintf(f, "\t\t%s) _arguments", c->name);
		zsh_opts(f, c->opts);
		zsh_opts(f, prog->opts);
		if (file)
			fprintf(f, " \\\n\t\t\t'1:file:_files'");
		else if (words[0])
			fprintf(f, " \\\n\t\t\t'1:word:(%s)'", words);
		fprintf(f, " ;;\n");
	}
	fprintf(f, "\t\tesac ;;\n\tesac\n}\n_%s \"$@\"\n", prog->name);
}

/* A program without commands (floodgated): its options, and their values
 * where they name a file, a folder or an interface. */
static void bash_opts_only(FILE *f, const struct fg_prog *prog)
{
	const char *sep = "";

	fprintf(f,
		"# bash completion for %s, generated from its option table by\n"
		"# '%s --completion bash'.\n"
		"_%s() {\n"
		"\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
		"\tcase $prev in\n",
		prog->name, prog->name, prog->name);
	for (const struct fg_opt *o = prog->opts; o && o->kind; o++) {
		const char *how = NULL;

		if (!o->arg || (o->flags & FG_OPT_OPTIONAL))
			continue;
		if (!strcmp(o->arg, "FILE"))
			how = "COMPREPLY=($(compgen -f -- \"$cur\"))";
		else if (!strcmp(o->arg, "DIR"))
			how = "COMPREPLY=($(compgen -d -- \"$cur\"))";
		else if (!strcmp(o->arg, "IF"))
			how = "COMPREPLY=($(compgen -W \"$(ls /sys/class/net 2>/dev/null)\" -- "
			      "\"$cur\"))";
		fprintf(f, "\t");
		sep = "";
		if (o->name)
			fprintf(f, "--%s", o->name), sep = "|";
		if (o->sname)
			fprintf(f, "%s-%c", sep, o->sname);
		fprintf(f, ") %s%sreturn ;;\n", how ? how : "", how ? "; " : "");
	}
	fprintf(f, "\tesac\n\tCOMPREPLY=($(compgen -W '");
	opt_words(f, prog->opts);
	fprintf(f, "' -- \"$cur\"))\n}\ncomplete -F _%s %s\n", prog->name, prog->name);
}

static void zsh_opts_only(FILE *f, const struct fg_prog *prog)
{
	fprintf(f,
		"#compdef %s\n# zsh completion for %s, generated from its option table by\n"
		"# '%s --completion zsh'.\n_%s() {\n\t_arguments",
		prog->name, prog->name, prog->name, prog->name);
	zsh_opts(f, prog->opts);
	fprintf(f, "\n}\n_%s \"$@\"\n", prog->name);
}

int fg_prog_completion(FILE *f, const struct fg_prog *prog, const char *shell)
{
	if (!strcmp(shell, "bash"))
		prog->cmds ? bash(f, prog) : bash_opts_only(f, prog);
	else if (!strcmp(shell, "zsh"))
		prog->cmds ? zsh(f, prog) : zsh_opts_only(f, prog);
	else
		return -EINVAL;
	return 0;
}
