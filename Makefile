# dataspoc-pipe — see README.md.  Targets: all test check check-unit install
# uninstall clean bench demo fuzz fuzz-smoke fuzz-merge test-faults
# test-faults-long test-load.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
# (the driver finds its templates and help at ../share beside its bin/, and
# its command scripts at ../libexec: keep DATADIR at $(PREFIX)/share and
# LIBEXECDIR at $(PREFIX)/libexec)
DATADIR ?= $(PREFIX)/share
LIBEXECDIR ?= $(PREFIX)/libexec

CC ?= cc
PKG_CONFIG ?= pkg-config
WARN = -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -Wformat=2 -Wvla -Wcast-qual -Wwrite-strings
CFLAGS ?= -O2 -g
# libcurl and libcrypto are not linked: lib/store/curl_load.c and
# lib/store/crypto_load.c load them with dlopen(3) when a program first reaches
# an s3://, gs:// or az:// bucket, so that no start of a local run maps
# them and the libraries they bring; libsnappy (C++: libstdc++ with it) is
# loaded by the first snappy Parquet page (lib/parquet/snappy_load.c).  Each program gets only the libraries
# it calls (--as-needed: pipe-tap needs libyaml alone).
PKGS = yaml-0.1 libzstd zlib
DEP_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) libcurl libcrypto 2>/dev/null)
DEP_LIBS := -Wl,--as-needed $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null) \
	$(shell $(PKG_CONFIG) --libs libjq 2>/dev/null || echo -ljq) -lm -lpthread -ldl
ALL_CFLAGS = $(WARN) -D_GNU_SOURCE -Ilib $(DEP_CFLAGS) $(CFLAGS) $(SAN_FLAGS) $(EXTRA_CFLAGS)
# Each object depends on the headers it includes (the .d files beside it).
DEPFLAGS = -MMD -MP

# Sanitizer build for `make check`, in its own tree; FUZZ: the same with
# libFuzzer's coverage, for the fuzz targets (clang only).
ifdef FUZZ
O ?= build/fuzz
CC = $(FUZZ_CC)
SAN_FLAGS = -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
SAN_LDFLAGS = -fsanitize=fuzzer,address,undefined
else ifdef SAN
O ?= build/san
SAN_FLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
SAN_LDFLAGS = -fsanitize=address,undefined
else
O ?= build/rel
endif

LIB_SRC := $(sort $(wildcard lib/*.c lib/*/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(O)/%.o)
PROGS := $(notdir $(sort $(wildcard cmd/*)))
BINS := $(PROGS:%=$(O)/bin/%) $(O)/bin/dataspoc-pipe
# The tap config templates of `dataspoc-pipe add`, found beside bin/.
TEMPLATES := $(notdir $(wildcard templates/*.json))
SHARE := $(TEMPLATES:%=$(O)/share/dataspoc-pipe/templates/%) $(O)/share/dataspoc-pipe/help/run
# The driver's commands of their own (git's libexec/git-core) and the
# setup they source with it.
LIBEXEC_SCRIPTS := dataspoc-pipe-add dataspoc-pipe-export dataspoc-pipe-init dataspoc-pipe-schedule dataspoc-pipe-sh-setup
LIBEXEC := $(LIBEXEC_SCRIPTS:%=$(O)/libexec/dataspoc-pipe/%)
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNITS := $(UNIT_SRC:tests/unit/%.c=$(O)/tests/%)

# bin/ is where people and the test suite find the programs of the default
# build (build/rel): other trees (O=..., SAN=1) leave it alone.
all: $(BINS) $(SHARE) $(LIBEXEC) $(if $(filter build/rel,$(O)),bin,)

bin: $(BINS)
	@mkdir -p bin
	@for p in $(notdir $(BINS)); do ln -sf ../$(O)/bin/$$p bin/$$p; done
.PHONY: bin

$(O)/lib/%.o: lib/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -c -o $@ $<

$(O)/cmd/%.o: cmd/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $($(firstword $(subst /, ,$*))_CFLAGS) $(DEPFLAGS) -c -o $@ $<

$(O)/libpipe.a: $(LIB_OBJ)
	rm -f $@
	$(AR) rcs $@ $^

# A program is the objects of its folder cmd/NAME/ and the library, linked
# with what its cmd/NAME/build.mk adds, if it has one (NAME_CFLAGS for its
# objects, NAME_LIBS for the link, NAME_DEP_LIBS in place of DEP_LIBS).
-include $(wildcard cmd/*/build.mk)
.SECONDEXPANSION:
$(O)/bin/%: $$(foreach f,$$(wildcard cmd/$$*/*.c),$(O)/$$(basename $$f).o) $(O)/libpipe.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(filter %.o,$^) $(O)/libpipe.a $(LDFLAGS) $(SAN_LDFLAGS) $($*_LIBS) $(or $($*_DEP_LIBS),$(DEP_LIBS))

$(O)/bin/dataspoc-pipe: scripts/dataspoc-pipe.sh
	@mkdir -p $(dir $@)
	cp $< $@
	chmod +x $@

$(O)/libexec/dataspoc-pipe/%: scripts/%
	@mkdir -p $(dir $@)
	cp $< $@
	chmod $(if $(filter %-sh-setup,$@),644,755) $@

# The help of each command: what man/dataspoc-pipe.1 says of it (one file a
# command, all made together; help/run stands for them).
$(O)/share/dataspoc-pipe/help/run: man/dataspoc-pipe.1 scripts/man2help.awk
	@rm -rf $(dir $@) && mkdir -p $(dir $@)
	awk -v dir=$(dir $@) -f scripts/man2help.awk man/dataspoc-pipe.1
	@test -s $@

$(O)/share/dataspoc-pipe/templates/%.json: templates/%.json
	@mkdir -p $(dir $@)
	cp -L $< $@

# (test_s3 checks the signing against libcrypto's own SHA256)
UNIT_LIBS := $(shell $(PKG_CONFIG) --libs libcrypto 2>/dev/null || echo -lcrypto)
$(O)/tests/%: tests/unit/%.c $(O)/libpipe.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -MF $@.d -Itests/unit -o $@ $< $(O)/libpipe.a $(LDFLAGS) $(SAN_LDFLAGS) $(DEP_LIBS) $(UNIT_LIBS)

unit: $(UNITS)
	@fail=0; for t in $(UNITS); do echo "# $$t"; $$t || fail=1; done; exit $$fail

BATS ?= bats
BATS_FLAGS ?=
test: all unit
	PIPE_BIN=$(CURDIR)/$(O)/bin PIPE_SANITIZED=$(if $(SAN),1,) $(BATS) $(BATS_FLAGS) tests/

check:
	$(MAKE) SAN=1 test

# The unit tests under ASan and UBSan, then the scanner's again with its SSE2
# paths compiled out (the byte loops of machines without them): a minute or
# two, run by CI.
check-unit:
	$(MAKE) SAN=1 unit
	$(MAKE) SAN=1 O=build/san-scalar EXTRA_CFLAGS="$(EXTRA_CFLAGS) -U__SSE2__" build/san-scalar/tests/test_json
	build/san-scalar/tests/test_json

bench: all
	bench/run

demo: all
	sh examples/demo.sh

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	for p in $(notdir $(BINS)); do install -m 755 $(O)/bin/$$p $(DESTDIR)$(BINDIR)/$$p; done
	install -m 644 man/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -d $(DESTDIR)$(DATADIR)/dataspoc-pipe/templates
	for t in $(TEMPLATES); do install -m 644 templates/$$t $(DESTDIR)$(DATADIR)/dataspoc-pipe/templates/$$t; done
	install -d $(DESTDIR)$(DATADIR)/dataspoc-pipe/help $(DESTDIR)$(LIBEXECDIR)/dataspoc-pipe
	install -m 644 $(O)/share/dataspoc-pipe/help/* $(DESTDIR)$(DATADIR)/dataspoc-pipe/help/
	for s in $(LIBEXEC_SCRIPTS); do install -m $$(test $$s = dataspoc-pipe-sh-setup && echo 644 || echo 755) \
		$(O)/libexec/dataspoc-pipe/$$s $(DESTDIR)$(LIBEXECDIR)/dataspoc-pipe/$$s; done
	install -m 755 scripts/lake $(DESTDIR)$(BINDIR)/dataspoc-lake

uninstall:
	for p in $(notdir $(BINS)) dataspoc-lake; do rm -f $(DESTDIR)$(BINDIR)/$$p; done
	for m in man/*.1; do rm -f $(DESTDIR)$(MANDIR)/man1/$${m#man/}; done
	rm -rf $(DESTDIR)$(DATADIR)/dataspoc-pipe $(DESTDIR)$(LIBEXECDIR)/dataspoc-pipe

clean:
	rm -rf build bin

# Crash consistency (tests/faults/): FAULT_KILLS signals at random moments
# on the local bucket (SIGKILL to a random stage, SIGTERM and SIGINT to the
# driver), FAULT_CHECKPOINT_KILLS more on a pipeline that checkpoints at
# every STATE (issue #15), then the full-disk and read-only bucket tests
# (root only) and kill -9 of LOG_BASED upsert runs of dataspoc-tap-postgres
# (a PostgreSQL 15 with wal_level=logical; FAULT_PG_TRIALS a mode).  test-faults-long: 50 SIGKILLs and 20 of each other signal,
# locally and on the S3 server of the tests, and 50 checkpointed trials
# locally, 20 on S3.  FAULT_SEED=N replays (see tests/faults/run).
FAULT_KILLS ?= 20
FAULT_CHECKPOINT_KILLS ?= 4
FAULT_RUN = PIPE_BIN=$(CURDIR)/$(O)/bin tests/faults/run
test-faults: all
	$(FAULT_RUN) -k $(FAULT_KILLS) -m mixed
	$(FAULT_RUN) -k $(FAULT_CHECKPOINT_KILLS) -m mixed -c 1B
	PIPE_BIN=$(CURDIR)/$(O)/bin $(BATS) $(BATS_FLAGS) tests/faults/

test-faults-long: all
	$(FAULT_RUN) -k 50 -m kill
	$(FAULT_RUN) -k 20 -m term
	$(FAULT_RUN) -k 20 -m int
	$(FAULT_RUN) -k 50 -m kill -b s3
	$(FAULT_RUN) -k 20 -m mixed -b s3
	$(FAULT_RUN) -k 50 -m mixed -c 1B
	$(FAULT_RUN) -k 20 -m mixed -b s3 -c 1B
	PIPE_BIN=$(CURDIR)/$(O)/bin $(BATS) $(BATS_FLAGS) tests/faults/

# Load (tests/load/, issue #6): 20 pipelines by run --all -j 8 into one
# bucket, one stream of 10 million records, one run of 1,000 streams; the
# LOAD_* variables of tests/helpers/load.bash scale it down.
test-load: all
	PIPE_BIN=$(CURDIR)/$(O)/bin $(BATS) $(BATS_FLAGS) tests/load/

# libFuzzer targets (tests/fuzz/fuzz_*.c), each run FUZZ_SECONDS on its
# kept corpus tests/fuzz/corpus/NAME/; what they find that is new goes to
# tests/fuzz/out/NAME/ (fuzz-merge minimises it into the corpus), a crash
# to tests/fuzz/out/crash-NAME-*.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 600
FUZZ_FLAGS ?=
FUZZ_TARGETS := $(basename $(notdir $(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_RUN = $(MAKE) FUZZ=1 fuzz-bins && for t in $(FUZZ_TARGETS); do \
	mkdir -p tests/fuzz/out/$$t tests/fuzz/corpus/$$t && \
	echo "$$t: $(1) s" && \
	build/fuzz/fuzz/$$t -max_total_time=$(1) -close_fd_mask=3 -timeout=20 -rss_limit_mb=2048 \
		-artifact_prefix=tests/fuzz/out/crash-$$t- \
		$$(test -f tests/fuzz/$$t.dict && echo -dict=tests/fuzz/$$t.dict) $(FUZZ_FLAGS) \
		tests/fuzz/out/$$t tests/fuzz/corpus/$$t || exit 1; done

fuzz-bins: $(FUZZ_TARGETS:%=$(O)/fuzz/%)

$(O)/fuzz/%: tests/fuzz/%.c $(O)/libpipe.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -MF $@.d -o $@ $< $(O)/libpipe.a $(LDFLAGS) $(SAN_LDFLAGS) $(DEP_LIBS)

fuzz:
	$(call FUZZ_RUN,$(FUZZ_SECONDS))

fuzz-smoke:
	$(call FUZZ_RUN,30)

# Fold what fuzzing found into the kept corpus, minimised: the smallest set
# of inputs of the kept corpus and tests/fuzz/out/ that covers what they all do.
fuzz-merge:
	$(MAKE) FUZZ=1 fuzz-bins
	for t in $(FUZZ_TARGETS); do \
		rm -rf tests/fuzz/corpus/$$t.new && mkdir -p tests/fuzz/out/$$t tests/fuzz/corpus/$$t.new && \
		build/fuzz/fuzz/$$t -merge=1 -close_fd_mask=3 tests/fuzz/corpus/$$t.new \
			tests/fuzz/corpus/$$t tests/fuzz/out/$$t && \
		rm -rf tests/fuzz/corpus/$$t && mv tests/fuzz/corpus/$$t.new tests/fuzz/corpus/$$t || exit 1; done

.PHONY: all unit test check check-unit bench demo install uninstall clean fuzz fuzz-bins fuzz-smoke \
	fuzz-merge test-faults test-faults-long test-load
.SECONDARY:

-include $(wildcard $(O)/lib/*.d $(O)/lib/*/*.d $(O)/cmd/*/*.d $(O)/tests/*.d $(O)/fuzz/*.d)
