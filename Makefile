# dataspoc-pipe — see README.md.  Targets: all test check install uninstall
# clean bench demo.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
LIBEXECDIR ?= $(PREFIX)/libexec/dataspoc-pipe

CC ?= cc
PKG_CONFIG ?= pkg-config
WARN = -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -Wformat=2 -Wvla -Wcast-qual -Wwrite-strings
CFLAGS ?= -O2 -g
PKGS = yaml-0.1 libcurl libcrypto libzstd zlib
DEP_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
DEP_LIBS := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null) \
	$(shell $(PKG_CONFIG) --libs libjq 2>/dev/null || echo -ljq) -lm -lpthread
ALL_CFLAGS = $(WARN) -D_GNU_SOURCE -Ilib $(DEP_CFLAGS) $(CFLAGS) $(SAN_FLAGS) $(EXTRA_CFLAGS)

# Sanitizer build for `make check`, in its own tree.
ifdef SAN
O ?= build/san
SAN_FLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
SAN_LDFLAGS = -fsanitize=address,undefined
else
O ?= build/rel
endif

LIB_SRC := $(sort $(wildcard lib/*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(O)/%.o)
PROGS := $(notdir $(sort $(wildcard cmd/*)))
BINS := $(PROGS:%=$(O)/bin/%) $(O)/bin/dataspoc-pipe
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
UNITS := $(UNIT_SRC:tests/unit/%.c=$(O)/tests/%)
HDRS := $(wildcard lib/*.h tests/unit/*.h)

all: $(BINS) $(if $(SAN),,bin)

# bin/ is where people and the test suite find the programs of the default build.
bin: $(BINS)
	@mkdir -p bin
	@for p in $(notdir $(BINS)); do ln -sf ../$(O)/bin/$$p bin/$$p; done
.PHONY: bin

$(O)/lib/%.o: lib/%.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(O)/libpipe.a: $(LIB_OBJ)
	rm -f $@
	$(AR) rcs $@ $^

$(O)/bin/%: cmd/%/*.c $(O)/libpipe.a $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(filter %.c,$^) $(O)/libpipe.a $(LDFLAGS) $(SAN_LDFLAGS) $(DEP_LIBS)

$(O)/bin/dataspoc-pipe: dataspoc-pipe.sh
	@mkdir -p $(dir $@)
	cp $< $@
	chmod +x $@

$(O)/tests/%: tests/unit/%.c $(O)/libpipe.a $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(O)/libpipe.a $(LDFLAGS) $(SAN_LDFLAGS) $(DEP_LIBS)

unit: $(UNITS)
	@fail=0; for t in $(UNITS); do echo "# $$t"; $$t || fail=1; done; exit $$fail

BATS ?= bats
BATS_FLAGS ?=
test: all unit
	PIPE_BIN=$(CURDIR)/$(O)/bin $(BATS) $(BATS_FLAGS) tests/

check:
	$(MAKE) SAN=1 test

bench: all
	bench/run

demo: all
	sh examples/demo.sh

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1
	for p in $(notdir $(BINS)); do install -m 755 $(O)/bin/$$p $(DESTDIR)$(BINDIR)/$$p; done
	install -m 644 man/*.1 $(DESTDIR)$(MANDIR)/man1/

uninstall:
	for p in $(notdir $(BINS)); do rm -f $(DESTDIR)$(BINDIR)/$$p; done
	for m in man/*.1; do rm -f $(DESTDIR)$(MANDIR)/man1/$${m#man/}; done

clean:
	rm -rf build bin

.PHONY: all unit test check bench demo install uninstall clean
.SECONDARY:
