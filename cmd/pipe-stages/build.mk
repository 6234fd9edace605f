# pipe-stages is linked statically when the C library's and libyaml's
# archives are there (Debian's libc6-dev and libyaml-dev), but not in a
# sanitizer build: it starts in each run, and a static start costs about
# half the CPU of a dynamic one, no loader and no libraries to map (issue
# #14, bench/TAP-OVERHEAD.md).  It loads no config, so it never calls
# getpwuid(3), which a static glibc could not promise to answer (the
# linker's warning about it is for config.o, linked in through cli.o and
# never called here); it makes no dlopen(3) either.
ifeq ($(SAN)$(FUZZ),)
ifneq ($(and $(filter /%,$(shell $(CC) -print-file-name=libc.a)),$(filter /%,$(shell $(CC) -print-file-name=libyaml.a))),)
pipe-stages_DEP_LIBS = -static -lyaml -lpthread
endif
endif
