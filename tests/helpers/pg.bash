# helpers/pg.bash: a real PostgreSQL 15 for the tests of dataspoc-tap-postgres.
#
# pg_start (from setup_file) makes a cluster with initdb in
# $BATS_FILE_TMPDIR/pg, listening on 127.0.0.1 on a free port, its socket in
# that folder, password (SCRAM) authentication, the server's time zone UTC;
# pg_stop (from teardown_file) stops it.  initdb and postgres refuse to run as
# root: as root the server runs as the user 'postgres' (Debian's package
# makes it) or else 'nobody', through setpriv(1); as anyone else, as oneself.
#
#   PG_PORT, PG_DIR        where it runs
#   pg_sql [-d DB] SQL     run SQL as the superuser (psql -qAt, stops on error)
#   pg_config_json FILE [USER [PASSWORD [DB]]]   a tap config for this server
#
# PG_BINDIR (default /usr/lib/postgresql/15/bin) names the server's programs.

PG_BINDIR=${PG_BINDIR:-/usr/lib/postgresql/15/bin}
PG_SUPERPASS=super-secret-pw

pg_free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Run a command as the server's user (see above), from its folder.
pg_as_owner() {
	if [ "$(id -u)" = 0 ]; then
		(cd "$PG_DIR" && setpriv --reuid="$PG_OWNER" --regid="$PG_GROUP" --clear-groups -- "$@")
	else
		(cd "$PG_DIR" && "$@")
	fi
}

pg_start() {
	local d
	PG_DIR=$BATS_FILE_TMPDIR/pg
	mkdir -p "$PG_DIR/sock"
	if [ "$(id -u)" = 0 ]; then
		if id postgres >/dev/null 2>&1; then PG_OWNER=postgres; else PG_OWNER=nobody; fi
		PG_GROUP=$(id -g "$PG_OWNER")
		chown -R "$PG_OWNER:$PG_GROUP" "$PG_DIR"
		# the server's user must reach its folder through bats's private ones
		d=$PG_DIR
		while d=${d%/*} && [ -n "$d" ]; do
			[ "$(stat -c %u "$d")" = 0 ] && chmod o+x "$d"
			case $d in /tmp | "${TMPDIR:-/tmp}") break ;; esac
		done
	fi
	printf '%s\n' "$PG_SUPERPASS" >"$PG_DIR/pw"
	if [ "$(id -u)" = 0 ]; then chown "$PG_OWNER" "$PG_DIR/pw"; fi
	pg_as_owner "$PG_BINDIR/initdb" -D "$PG_DIR/data" -U postgres -A scram-sha-256 \
		--pwfile="$PG_DIR/pw" -E UTF8 --no-locale >"$PG_DIR/initdb.log" 2>&1 || {
		cat "$PG_DIR/initdb.log" >&2
		return 1
	}
	PG_PORT=$(pg_free_port)
	pg_as_owner "$PG_BINDIR/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
		-o "-h 127.0.0.1 -p $PG_PORT -k $PG_DIR/sock -c fsync=off -c timezone=UTC -c log_timezone=UTC" \
		start >/dev/null || {
		cat "$PG_DIR/server.log" >&2
		return 1
	}
	export PG_PORT PG_DIR PG_OWNER PG_GROUP
}

pg_stop() {
	[ -n "${PG_DIR:-}" ] && [ -d "$PG_DIR/data" ] || return 0
	PG_OWNER=${PG_OWNER:-$(stat -c %u "$PG_DIR/data")}
	PG_GROUP=${PG_GROUP:-$(stat -c %g "$PG_DIR/data")}
	pg_as_owner "$PG_BINDIR/pg_ctl" -D "$PG_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
}

pg_sql() {
	local db=postgres
	if [ "$1" = -d ]; then
		db=$2
		shift 2
	fi
	PGPASSWORD=$PG_SUPERPASS PGCONNECT_TIMEOUT=10 psql -X -h 127.0.0.1 -p "$PG_PORT" -U postgres \
		-d "$db" -v ON_ERROR_STOP=1 -qAt -c "$1"
}

pg_config_json() {
	printf '{"host": "127.0.0.1", "port": %s, "user": "%s", "password": "%s", "dbname": "%s"}\n' \
		"$PG_PORT" "${2:-postgres}" "${3:-$PG_SUPERPASS}" "${4:-appdb}" >"$1"
}
