# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# floodgate build. `make help` lists the targets.

# sanitizer builds go to their own tree: make tracks files, not flags
ifneq ($(ASAN)$(UBSAN),)
OUTPUT      ?= .output/san
else
OUTPUT      ?= .output
endif
CLANG       ?= clang
LLVM_STRIP  ?= llvm-strip
BPFTOOL     ?= bpftool
CC          ?= cc
PKG_CONFIG  ?= pkg-config
PREFIX      ?= /usr/local
SYSCONFDIR  ?= /etc
DESTDIR     ?=
ARCH        := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')

ifeq ($(V),1)
Q :=
msg =
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

# --- flags -------------------------------------------------------------------
COMMON_FLAGS := -ffile-prefix-map=$(CURDIR)=. -MMD -MP
BPF_CFLAGS   := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -D__BPF__ \
		-Iinclude -Ibpf -I. -Wall -Werror $(COMMON_FLAGS) $(EXTRA_BPF_CFLAGS)
CFLAGS       ?= -O2 -g
USER_CFLAGS  := $(CFLAGS) -std=gnu11 -Wall -Wextra -Werror -Wno-missing-field-initializers -Ibpf \
		-Iinclude -Iuser -I$(OUTPUT) -D_GNU_SOURCE $(COMMON_FLAGS)
# code the tools and the tests share (frames built byte by byte); never shipped
TOOL_CFLAGS  := $(USER_CFLAGS) -Itools/lib
USER_LDLIBS  := -lbpf -lxdp -lelf -lz -lyaml -lmicrohttpd -lsystemd -ljson-c -lhiredis -lpthread -lm

ifeq ($(ASAN),1)
USER_CFLAGS += -fsanitize=address -fno-omit-frame-pointer
USER_LDFLAGS += -fsanitize=address
endif
ifeq ($(UBSAN),1)
USER_CFLAGS += -fsanitize=undefined -fno-sanitize-recover=undefined
USER_LDFLAGS += -fsanitize=undefined
endif

# --- sources -----------------------------------------------------------------
# bpf/: the programs floodgate ships; tools/bpf/: the generator's and the
# benchmark's; tests/bpf/: small programs for the tests
BPF_DIRS   := bpf tools/bpf tests/bpf
BPF_SRCS   := $(foreach d,$(BPF_DIRS),$(wildcard $(d)/*.bpf.c))
BPF_NAMES  := $(basename $(basename $(notdir $(BPF_SRCS))))
BPF_OBJS   := $(patsubst %,$(OUTPUT)/%.bpf.o,$(BPF_NAMES))
SKELS      := $(patsubst %,$(OUTPUT)/%.skel.h,$(BPF_NAMES))
vpath %.bpf.c $(BPF_DIRS)
MAINS      := user/daemon/floodgated.c user/cli/floodgate.c
LIB_SRCS   := $(filter-out $(MAINS),$(wildcard user/*/*.c))
LIB_OBJS   := $(patsubst user/%.c,$(OUTPUT)/user/%.o,$(LIB_SRCS))
LIB        := $(OUTPUT)/libfg.a
BINS       := $(foreach m,$(MAINS),$(OUTPUT)/$(basename $(notdir $(m))))
TOOL_SRCS  := $(wildcard tools/*.c)
TOOLS      := $(patsubst tools/%.c,$(OUTPUT)/%,$(TOOL_SRCS))
TOOLLIB_SRCS := $(wildcard tools/lib/*.c)
TOOLLIB_OBJS := $(patsubst tools/lib/%.c,$(OUTPUT)/tools/lib/%.o,$(TOOLLIB_SRCS))
TOOLLIB    := $(OUTPUT)/libfgtools.a
TEST_SRCS  := $(wildcard tests/test_*.c)
TESTS      := $(patsubst tests/%.c,$(OUTPUT)/tests/%,$(TEST_SRCS))
TEST_HELPER_SRCS := $(filter-out $(TEST_SRCS) $(wildcard tests/fuzz_*.c),$(wildcard tests/*.c))
TEST_HELPER_OBJS := $(patsubst tests/%.c,$(OUTPUT)/tests/%.o,$(TEST_HELPER_SRCS))
FUZZ_SRCS  := $(wildcard tests/fuzz_*.c)
FUZZERS    := $(patsubst tests/%.c,$(OUTPUT)/fuzz/%,$(FUZZ_SRCS))
DEPS_STAMP := $(OUTPUT)/.deps-ok
# --version: git's description of the tree (a tag once there is one), and the
# libraries built with; the header is rewritten only when one of them changes
FG_VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
LIBBPF_VER  := $(shell $(PKG_CONFIG) --modversion libbpf 2>/dev/null || echo 0.0.0)
LIBXDP_VER  := $(shell $(PKG_CONFIG) --modversion libxdp 2>/dev/null || echo unknown)
VERSION_H   := $(OUTPUT)/fg_version.h

.DELETE_ON_ERROR:
.SECONDARY: $(patsubst %,$(OUTPUT)/%.tmp.o,$(BPF_NAMES))
.PHONY: FORCE all clean help hooks test test-unit guest-test gameday bench demo install deps fuzz san \
	verify-clang format format-check

all: $(BPF_OBJS) $(SKELS) $(LIB) $(BINS) $(TOOLS) $(TESTS)

help:
	@echo 'floodgate targets:'
	@echo '  all (default)  BPF objects, skeletons, floodgated, floodgate, tools, tests'
	@echo '  deps           install missing Debian packages (root)'
	@echo '  test           the whole test suite (root), in parallel: unit, BPF,'
	@echo '                 end-to-end, game day short, the guest drills'
	@echo '  test-unit      tests that need no root or network namespaces'
	@echo '  guest-test     the kernel-dependent drills in a QEMU guest booting'
	@echo '                 Debian'"'"'s stock kernel (root)'
	@echo '  demo           namespace pair, a flood, floodgate throttling it, live counters'
	@echo '  bench          benchmarks and cost curves against the floor, nftables and'
	@echo '                 iptables (BENCH_QUICK=1: a few minutes)'
	@echo '  gameday        the suite at length: full sanitizer build, valgrind on'
	@echo '                 the daemon, verify-clang, long fuzzing and drills'
	@echo '  fuzz           build the libFuzzer targets'
	@echo '  san            ASan+UBSan floodgated, floodgate and unit tests, on the'
	@echo '                 fuzzers'"'"' objects'
	@echo '  verify-clang   build and verifier-load the BPF object, clang 14 and 19'
	@echo '  install        binaries, man pages, systemd unit, shell completion'
	@echo '                 (PREFIX=$(PREFIX) SYSCONFDIR=$(SYSCONFDIR) DESTDIR=)'
	@echo '  format         apply .clang-format to every C file (format-check: only list)'
	@echo '  hooks          git core.hooksPath = tools/hooks (commit-msg: the subject rule)'
	@echo '  clean          remove $(OUTPUT)'
	@echo 'variables: V=1 (show commands) ASAN=1 UBSAN=1 CLANG= BPFTOOL= OUTPUT='
	@echo '           TEST_ARGS= (tests/run.sh: -j N, test names)'

deps $(DEPS_STAMP):
	$(Q)tools/deps.sh
	$(Q)mkdir -p $(OUTPUT) && touch $(DEPS_STAMP)

$(OUTPUT) $(OUTPUT)/tests $(OUTPUT)/fuzz/obj:
	$(Q)mkdir -p $@

$(VERSION_H): FORCE | $(OUTPUT)
	$(Q)printf '#define FG_VERSION "%s"\n#define FG_LIBBPF_VERSION "%s"\n#define FG_LIBBPF_MAJOR %s\n#define FG_LIBBPF_MINOR %s\n#define FG_LIBXDP_VERSION "%s"\n' \
		'$(FG_VERSION)' '$(LIBBPF_VER)' '$(word 1,$(subst ., ,$(LIBBPF_VER)))' \
		'$(word 2,$(subst ., ,$(LIBBPF_VER)))' '$(LIBXDP_VER)' > $@.tmp
	$(Q)cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@
$(OUTPUT)/user/lib/version.o $(OUTPUT)/fuzz/obj/lib/version.o: $(VERSION_H)

# --- BPF: clang -> strip DWARF (keep BTF) -> bpftool gen object -> skeleton --
$(OUTPUT)/%.tmp.o: %.bpf.c | $(OUTPUT) $(DEPS_STAMP)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MF $(OUTPUT)/$*.bpf.d -MT $@ -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@
	@# which compiler built it, for the verifier budget (tools/fgverify.c)
	$(Q)$(CLANG) --version | head -n 1 > $(OUTPUT)/$*.bpf.cc

$(OUTPUT)/%.bpf.o: $(OUTPUT)/%.tmp.o
	$(call msg,GEN-OBJ,$@)
	$(Q)$(BPFTOOL) gen object $@ $<

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@

# --- userspace -----------------------------------------------------------------
# The skeletons are order-only prerequisites: they must exist before the first
# compile, but which of them an object really includes is in its -MMD .d file,
# so editing one BPF program rebuilds only the objects that embed its skeleton.
$(OUTPUT)/user/%.o: user/%.c | $(SKELS) $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(USER_CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# static pattern rules (not `$(OUTPUT)/%:`): their objects are explicit
# prerequisites, so make never deletes them as chain intermediates
$(OUTPUT)/floodgated: $(OUTPUT)/user/daemon/floodgated.o $(LIB)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(USER_LDFLAGS) $^ $(USER_LDLIBS) -o $@

$(OUTPUT)/floodgate: $(OUTPUT)/user/cli/floodgate.o $(LIB)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(USER_LDFLAGS) $^ $(USER_LDLIBS) -o $@

$(OUTPUT)/tools/%.o: tools/%.c | $(SKELS) $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	$(call msg,CC,$@)
	$(Q)$(CC) $(TOOL_CFLAGS) -c $< -o $@

$(TOOLLIB): $(TOOLLIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(TOOLS): $(OUTPUT)/%: $(OUTPUT)/tools/%.o $(TOOLLIB) $(LIB)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(USER_LDFLAGS) $^ $(USER_LDLIBS) -o $@

$(OUTPUT)/tests/%.o: tests/%.c | $(SKELS) $(OUTPUT)/tests $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)$(CC) $(TOOL_CFLAGS) -Itests -c $< -o $@

$(TESTS): $(OUTPUT)/tests/%: $(OUTPUT)/tests/%.o $(TEST_HELPER_OBJS) $(TOOLLIB) $(LIB)
	$(call msg,BINARY,$@)
	$(Q)$(CC) $(USER_LDFLAGS) $^ $(USER_LDLIBS) -o $@

# --- fuzzers (clang libFuzzer + ASan) ------------------------------------------
# The library is compiled again with the fuzzer's instrumentation, one object
# per source so that each has its own .d file (one clang call over many
# sources writes the dependencies of the last one only).
FUZZ_SAN    := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS := -g -O1 $(FUZZ_SAN) -Iinclude -Iuser -Ibpf -Itests -Itools/lib -I$(OUTPUT) \
	       -D_GNU_SOURCE -DFG_FUZZ $(COMMON_FLAGS)
FUZZ_LIB_OBJS := $(patsubst user/%.c,$(OUTPUT)/fuzz/obj/%.o,$(LIB_SRCS))

$(OUTPUT)/fuzz/obj/%.o: user/%.c | $(SKELS) $(OUTPUT)/fuzz/obj $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	$(call msg,FUZZ-CC,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(OUTPUT)/fuzz/obj/%.o: tests/%.c | $(SKELS) $(OUTPUT)/fuzz/obj $(DEPS_STAMP)
	$(call msg,FUZZ-CC,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZERS): $(OUTPUT)/fuzz/%: $(OUTPUT)/fuzz/obj/%.o $(FUZZ_LIB_OBJS)
	$(call msg,FUZZ,$@)
	$(Q)$(CLANG) -fsanitize=fuzzer $(FUZZ_SAN) $^ $(USER_LDLIBS) -o $@
fuzz: $(FUZZERS)

# --- the sanitizer smoke (make test): ASan+UBSan without a second build ------
# The fuzzers' library objects above are the whole of user/ under ASan and
# UBSan (their coverage hooks are the sanitizer runtime's no-ops without
# libFuzzer): linked with the two mains and a few unit tests they give
# sanitized programs for the price of those few files. The full
# `make ASAN=1 UBSAN=1` build (gcc, every test) is game day's.
SAN_TESTS     := test_policy test_gcra test_fgmaps
SAN_TEST_OBJS := $(patsubst tests/%.c,$(OUTPUT)/fuzz/obj/%.o,$(TEST_HELPER_SRCS)) \
		 $(patsubst tools/lib/%.c,$(OUTPUT)/fuzz/obj/toollib/%.o,$(TOOLLIB_SRCS))
SAN_BINS      := $(OUTPUT)/fuzz/san/floodgated $(OUTPUT)/fuzz/san/floodgate \
		 $(addprefix $(OUTPUT)/fuzz/san/,$(SAN_TESTS))

$(OUTPUT)/fuzz/obj/toollib/%.o: tools/lib/%.c | $(SKELS) $(OUTPUT)/fuzz/obj $(DEPS_STAMP)
	$(Q)mkdir -p $(@D)
	$(call msg,FUZZ-CC,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(OUTPUT)/fuzz/san/floodgated: $(OUTPUT)/fuzz/obj/daemon/floodgated.o $(FUZZ_LIB_OBJS)
$(OUTPUT)/fuzz/san/floodgate: $(OUTPUT)/fuzz/obj/cli/floodgate.o $(FUZZ_LIB_OBJS)
$(addprefix $(OUTPUT)/fuzz/san/,$(SAN_TESTS)): $(OUTPUT)/fuzz/san/%: $(OUTPUT)/fuzz/obj/%.o \
	$(SAN_TEST_OBJS) $(FUZZ_LIB_OBJS)
$(SAN_BINS):
	$(Q)mkdir -p $(@D)
	$(call msg,SAN,$@)
	$(Q)$(CLANG) $(FUZZ_SAN) $^ $(USER_LDLIBS) -o $@
san: $(SAN_BINS)

# --- running -------------------------------------------------------------------
# test: everything, the long parts as smokes (within 10 minutes on 2 CPUs);
# gameday: the same tests at length (the full sanitizer build, valgrind on
# the daemon, fuzzing 600 s a target, the drills' long variants)
test: all fuzz san
	$(Q)tools/deps.sh gameday
	@# the guest stage's qemu and kernel; without them it skips, saying why
	$(Q)tools/deps.sh vm || echo "make test: no guest set-up (tools/deps.sh vm): the guest drills will skip"
	$(Q)OUTPUT=$(OUTPUT) tests/run.sh $(TEST_ARGS)

test-unit: all
	$(Q)OUTPUT=$(OUTPUT) tests/run.sh --unit

guest-test: all
	$(Q)OUTPUT=$(OUTPUT) tests/guest_drills.sh

gameday: all fuzz san
	$(Q)tools/deps.sh gameday
	$(Q)OUTPUT=$(OUTPUT) FG_GAMEDAY=1 tests/run.sh --gameday $(TEST_ARGS)

bench: all
	$(Q)tools/deps.sh bench
	$(Q)tools/bench.sh

# the build first (about 90 s on 2 cores from a fresh clone; then only what changed)
demo:
	$(Q)test -x $(OUTPUT)/floodgated || echo 'demo: building first: the Debian packages it needs, then about 90 s on 2 cores'
	$(Q)$(MAKE) --no-print-directory all
	$(Q)OUTPUT=$(OUTPUT) tools/demo.sh

verify-clang:
	$(Q)tools/deps.sh gameday
	$(Q)tools/verify-clang.sh

# shell completion, generated from the CLI's own command table
COMPLETIONS := $(OUTPUT)/completion/floodgate.bash $(OUTPUT)/completion/_floodgate \
	$(OUTPUT)/completion/floodgated.bash $(OUTPUT)/completion/_floodgated
$(OUTPUT)/completion/floodgate.bash: $(OUTPUT)/floodgate
	$(Q)mkdir -p $(@D)
	$(call msg,GEN,$@)
	$(Q)$< completion bash > $@
$(OUTPUT)/completion/_floodgate: $(OUTPUT)/floodgate
	$(Q)mkdir -p $(@D)
	$(call msg,GEN,$@)
	$(Q)$< completion zsh > $@
$(OUTPUT)/completion/floodgated.bash: $(OUTPUT)/floodgated
	$(Q)mkdir -p $(@D)
	$(call msg,GEN,$@)
	$(Q)$< --completion bash > $@
$(OUTPUT)/completion/_floodgated: $(OUTPUT)/floodgated
	$(Q)mkdir -p $(@D)
	$(call msg,GEN,$@)
	$(Q)$< --completion zsh > $@
all: $(COMPLETIONS)

UNITDIR ?= $(PREFIX)/lib/systemd/system
# The unit with this install's paths; the operator's own copies of the
# policy and of the environment file are never overwritten.
install: all
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/share/man/man8 \
		$(DESTDIR)$(PREFIX)/share/man/man5 $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(PREFIX)/share/doc/floodgate/examples \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions \
		$(DESTDIR)$(PREFIX)/share/zsh/site-functions \
		$(DESTDIR)$(SYSCONFDIR)/floodgate $(DESTDIR)$(SYSCONFDIR)/default
	install -m 0755 $(BINS) $(DESTDIR)$(PREFIX)/sbin/
	install -m 0644 docs/floodgate.8 docs/floodgated.8 $(DESTDIR)$(PREFIX)/share/man/man8/
	install -m 0644 docs/floodgate.yaml.5 $(DESTDIR)$(PREFIX)/share/man/man5/
	sed -e 's|@SBINDIR@|$(PREFIX)/sbin|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
		-e 's|@UNITDIR@|$(UNITDIR)|g' floodgated.service \
		> $(DESTDIR)$(UNITDIR)/floodgated.service
	install -m 0644 $(OUTPUT)/completion/floodgate.bash \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/floodgate
	install -m 0644 $(OUTPUT)/completion/floodgated.bash \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/floodgated
	install -m 0644 $(OUTPUT)/completion/_floodgate $(OUTPUT)/completion/_floodgated \
		$(DESTDIR)$(PREFIX)/share/zsh/site-functions/
	install -m 0644 examples/policy.yaml $(DESTDIR)$(PREFIX)/share/doc/floodgate/examples/
	install -m 0644 README.md docs/operators-guide.md $(DESTDIR)$(PREFIX)/share/doc/floodgate/
	test -e $(DESTDIR)$(SYSCONFDIR)/floodgate/policy.yaml || \
		install -m 0644 examples/policy.yaml $(DESTDIR)$(SYSCONFDIR)/floodgate/policy.yaml
	test -e $(DESTDIR)$(SYSCONFDIR)/default/floodgated || \
		install -m 0644 floodgated.default $(DESTDIR)$(SYSCONFDIR)/default/floodgated
	@echo 'installed. Next: set FLOODGATE_INTERFACES in $(SYSCONFDIR)/default/floodgated, then'
	@echo '  systemctl daemon-reload && systemctl enable --now floodgated && floodgate status'

# --- style (.clang-format) ------------------------------------------------------
FORMAT_SRCS = $(shell git ls-files '*.c' '*.h' | grep -v '^vmlinux.h$$')
format:
	$(Q)clang-format -i $(FORMAT_SRCS)

format-check:
	$(Q)clang-format --dry-run -Werror $(FORMAT_SRCS)

# --- git hooks: tools/hooks/commit-msg refuses a subject over 72 characters or
# not "area: summary" (README, Contributing) -------------------------------------
hooks:
	$(Q)git config core.hooksPath tools/hooks
	@echo 'git hooks: core.hooksPath = tools/hooks (commit-msg checks the subject)'

clean:
	$(call msg,CLEAN,$(OUTPUT))
	$(Q)rm -rf $(OUTPUT)

DEPS := $(wildcard $(OUTPUT)/*.d $(OUTPUT)/user/*/*.d $(OUTPUT)/tools/*.d $(OUTPUT)/tools/lib/*.d \
	$(OUTPUT)/tests/*.d $(OUTPUT)/fuzz/obj/*.d $(OUTPUT)/fuzz/obj/*/*.d)
-include $(DEPS)
