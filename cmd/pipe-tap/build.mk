# pipe-tap is linked statically when the C library's and libyaml's archives
# are there (Debian's libc6-dev and libyaml-dev), but not in a sanitizer
# build, as pipe-stages is: a small run starts it twice (the checks, then
# the extraction), and a static start costs about two thirds of the CPU of a
# dynamic one (issue #14, bench/TAP-OVERHEAD.md).  It never calls
# getpwuid(3), which a static glibc could not promise to answer (main() has
# config_home() ask getent(1) instead; the linker's warning is for
# config.o's call, never reached here), and makes no dlopen(3).
ifeq ($(SAN)$(FUZZ),)
ifneq ($(and $(filter /%,$(shell $(CC) -print-file-name=libc.a)),$(filter /%,$(shell $(CC) -print-file-name=libyaml.a))),)
pipe-tap_DEP_LIBS = -static -lyaml -lpthread
endif
endif
