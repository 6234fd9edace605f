# helpers/gsheets.bash: the local stand-in for Google Sheets' CSV export
# (tests/servers/gsheets.py), for the bats files that read a sheet.

# gsheets_start DIR LOG: serve the sheets of DIR (DIR/ID/GID.csv), each
# request's path appended to LOG; SHEETS_PORT and SHEETS_PID set, and
# DATASPOC_GSHEETS_BASE_URL exported, pointing the tap at it.
gsheets_start() {
	local out=$1.out i=0
	mkdir -p "$1"
	: >"$out"
	/usr/bin/python3 "$BATS_TEST_DIRNAME/servers/gsheets.py" "$1" "$2" \
		>"$out" 2>&1 3>&- </dev/null &
	SHEETS_PID=$!
	SHEETS_PORT=
	while [ -z "$SHEETS_PORT" ]; do
		SHEETS_PORT=$(sed -n 's/^listening on \([0-9]*\)$/\1/p' "$out")
		i=$((i + 1))
		[ "$i" -lt 200 ] || { cat "$out" >&2; return 1; }
		[ -n "$SHEETS_PORT" ] || sleep 0.05
	done
	export SHEETS_PORT DATASPOC_GSHEETS_BASE_URL=http://127.0.0.1:$SHEETS_PORT
}

# gsheets_stop: end the server gsheets_start started.
gsheets_stop() {
	[ -z "${SHEETS_PID:-}" ] || kill "$SHEETS_PID" 2>/dev/null || true
}
