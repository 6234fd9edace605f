# dataspoc-tap-postgres links libpq (Debian's libpq-dev).
dataspoc-tap-postgres_CFLAGS = -I$(shell pg_config --includedir 2>/dev/null || echo /usr/include/postgresql)
dataspoc-tap-postgres_LIBS = -lpq
