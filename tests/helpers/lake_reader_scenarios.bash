# helpers/lake_reader_scenarios.bash: scripts/lake reading a remote lake (issue #29
# item 8) through pipe-state's objects and fetch, into its cache: one function per
# scenario, each the body of a test, reaching the bucket only through the bucket_*
# functions (tests/lake-reader-s3.bats, tests/lake-reader-azure.bats).
#
# The door is spied on: a pipe-state first on PATH logs its arguments to
# $DOOR_LOG, one call a line, then runs the real one; so a test counts the
# objects fetched.

LAKE=$BATS_TEST_DIRNAME/../scripts/lake

# reader_setup: the spy, and a cache of the test's own.
reader_setup() {
	local real
	real=$(command -v pipe-state) || return 1
	mkdir -p "$BATS_TEST_TMPDIR/spy"
	DOOR_LOG=$BATS_TEST_TMPDIR/door.log
	: >"$DOOR_LOG"
	printf '#!/bin/sh\nprintf "%%s\\n" "$*" >>"%s"\nexec "%s" "$@"\n' "$DOOR_LOG" "$real" \
		>"$BATS_TEST_TMPDIR/spy/pipe-state"
	chmod +x "$BATS_TEST_TMPDIR/spy/pipe-state"
	export PATH=$BATS_TEST_TMPDIR/spy:$PATH
	export XDG_CACHE_HOME=$BATS_TEST_TMPDIR/cache
	CACHE=$XDG_CACHE_HOME/dataspoc-pipe/lake
}

# fetched: the keys of the Parquet objects the door fetched since the last call, sorted.
fetched() {
	sed -n 's/^fetch -p \(.*\.parquet\) -b .*/\1/p' "$DOOR_LOG" | LC_ALL=C sort
	: >"$DOOR_LOG"
}

# cached: the Parquet files in the cache, under its folders ("raw/...parquet.v-HASH").
cached() {
	(cd "$CACHE" && find . -type f -name '*.parquet.v-*' -printf '%P\n' | cut -d/ -f2- | LC_ALL=C sort)
}

# users_run ID NAME...: a run of pipeline lk (tap-lk) landing stream users.
users_run() {
	{
		echo '{"type":"SCHEMA","stream":"users","schema":{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":["null","string"]}}},"key_properties":["id"]}'
		printf '%s\n' "$@" | singer_records users
	} >"$FAKE_DIR/tap-lk/out"
	run -0 --separate-stderr dataspoc-pipe run lk
}

# The table list (the manifest alone), a table's rows, --sql, a second read from the
# cache, a new run's file fetched alone, an object changed in place fetched again, one
# deleted dropped from the cache; the cache private, no secret in its paths.
scenario_reader_remote() {
	reader_setup
	use_tap tap-lk
	lake_pipeline lk tap-lk true
	users_run '{"id":1,"name":"ana"}' '{"id":2,"name":"bo"}'
	# the list: from the manifest, nothing fetched
	run -0 --separate-stderr "$LAKE" "$(bucket_url)"
	printf '%s\n' "$output" >got
	cat >want <<-EOF
	TABLE     ROWS  FILES  LOCATION
	--------  ----  -----  $(printf -- '-%.0s' $(seq ${#BUCKET_URL}))-------------
	lk/users     2      -  $(bucket_url)/raw/lk/users

	lk/users (view users) (from the manifest: rows its stats, columns its SCHEMA):
	  id      BIGINT
	  name    VARCHAR
	  _extra  JSON
	EOF
	diff -u want got
	assert_equal "$stderr" ""
	run -0 fetched
	assert_output ""
	[ ! -e "$CACHE" ] || [ -z "$(cached)" ]
	# a table's rows: its file fetched, once
	run -0 --separate-stderr "$LAKE" "$(bucket_url)" users --json
	assert_equal "$output" '{"id":"1","name":"ana","_extra":null,"dt":"'"$(date -u +%F)"'"}
{"id":"2","name":"bo","_extra":null,"dt":"'"$(date -u +%F)"'"}'
	local first
	first=$(bucket_files)
	run -0 fetched
	assert_output "$first"
	[ "$(stat -c %a "$CACHE")" = 700 ]
	# --sql, a second read: from the cache, nothing fetched
	touch -d '2001-01-01 00:00' "$CACHE"/*/raw/lk/users/*/*
	run -0 --separate-stderr "$LAKE" "$(bucket_url)" --sql 'SELECT count(*) AS n, max(name) AS m FROM users'
	printf '%s\n' "$output" >got
	printf 'n  m\n-  --\n2  bo\n' >want
	diff -u want got
	run -0 fetched
	assert_output ""
	[ -z "$(find "$CACHE" -type f -newermt '2001-01-02')" ]
	# a new run: its file alone fetched
	users_run '{"id":3,"name":"cy"}'
	run -0 --separate-stderr "$LAKE" "$(bucket_url)" --sql "SELECT string_agg(name, ',' ORDER BY id) AS names FROM \"lk/users\""
	assert_equal "${lines[2]}" "ana,bo,cy"
	run -0 fetched
	assert_output "$(bucket_files | grep -v -x -F "$first")"
	# an object changed in place (the same key, other bytes): fetched again, the only one
	local second
	second=$(bucket_files | grep -v -x -F "$first")
	bucket_cat "$second" | bucket_put "$first"
	run -0 --separate-stderr "$LAKE" "$(bucket_url)" --sql "SELECT string_agg(name, ',' ORDER BY name) AS names FROM users"
	assert_equal "${lines[2]}" "cy,cy"
	run -0 fetched
	assert_output "$first"
	run -0 cached
	[ "${#lines[@]}" -eq 2 ]
	[[ ${lines[0]} == "$first.v-"* || ${lines[1]} == "$first.v-"* ]]
	# an object gone from the bucket: gone from the cache
	bucket_rm "$second"
	run -0 --separate-stderr "$LAKE" "$(bucket_url)" users -n 5 --json
	assert_equal "${#lines[@]}" 1
	run -0 fetched
	assert_output ""
	run -0 cached
	assert_output --regexp "^${first//./\\.}\\.v-[0-9a-f]{16}\$"
	# private, and no secret in a path or in the door's arguments
	[ -z "$(find "$CACHE" -perm /077 ! -type l)" ] || { find "$CACHE" -perm /077 -ls; false; }
	! find "$XDG_CACHE_HOME" | grep -q -F -e "$SECRET"
	! grep -q -F -e "$SECRET" "$DOOR_LOG"
}

# A missing bucket, a refused credential, the bucket forms: one line each.
# (WRONG_CREDENTIALS: the environment assignments of a refused credential;
# WRONG_WHY: a pattern its message matches.)
scenario_reader_errors() {
	reader_setup
	use_tap tap-lk
	lake_pipeline lk tap-lk true
	users_run '{"id":1,"name":"ana"}'
	local scheme=${BUCKET_URL%%://*}
	run -1 --separate-stderr "$LAKE" "$scheme://nosuch$BATS_TEST_NUMBER-bucket" users
	assert_output ""
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ $stderr == "lake: "*"nosuch$BATS_TEST_NUMBER-bucket"* ]]
	run -1 --separate-stderr env "${WRONG_CREDENTIALS[@]}" "$LAKE" "$(bucket_url)" users
	assert_output ""
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ $stderr == "lake: "* ]]
	[[ $stderr =~ $WRONG_WHY ]] || { echo "$stderr"; false; }
	! grep -q -F -e "$SECRET" <<<"$stderr"
	# an empty bucket: no manifest
	run -1 --separate-stderr "$LAKE" "$(bucket_url)/empty"
	assert_stderr "lake: $(bucket_url)/empty: no .dataspoc/manifest.json (nothing has landed yet)"
	# the pipelines' one bucket rule, its words
	run -2 --separate-stderr "$LAKE" "$scheme:/lake"
	assert_stderr "lake: bucket '$scheme:/lake' is not a valid URL (expected a directory, file:///abs/dir, s3://bucket[/prefix], gs://bucket[/prefix] or az://container[/prefix])"
	local upper
	upper=$(tr a-z A-Z <<<"$scheme")
	run -2 --separate-stderr "$LAKE" "$upper://lake"
	assert_stderr "lake: bucket '$upper://lake': the scheme is written in lower case, as in $scheme://lake"
}

# A manifest whose location climbs out of the bucket ('..', with its scheme or
# relative): refused in one line (the store's rule for a prefix), nothing written
# or removed outside the cache (whose pruning walks the location's folder).
scenario_reader_dotdot() {
	reader_setup
	use_tap tap-lk
	lake_pipeline lk tap-lk true
	users_run '{"id":1,"name":"ana"}'
	mkdir -p "$BATS_TEST_TMPDIR/victim"
	echo precious >"$BATS_TEST_TMPDIR/victim/keep.parquet.v-0000000000000000"
	echo precious >"$BATS_TEST_TMPDIR/victim/other"
	# (the cache's table folder is 4 below BATS_TEST_TMPDIR: cache/dataspoc-pipe/lake/HASH)
	local m
	m=$(bucket_cat .dataspoc/manifest.json |
		jq -c --arg l "$(bucket_url)/raw/../../../../../victim" '.tables["lk/users"].location = $l')
	printf '%s\n' "$m" | bucket_put .dataspoc/manifest.json
	run -1 --separate-stderr "$LAKE" "$(bucket_url)" users --json
	assert_output ""
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ $stderr == "lake: "*"'..'"* ]] || { echo "$stderr"; false; }
	[ -f "$BATS_TEST_TMPDIR/victim/keep.parquet.v-0000000000000000" ]
	[ -f "$BATS_TEST_TMPDIR/victim/other" ]
	# a relative location ("../..."), the bucket's
	m=$(jq -c '.tables["lk/users"].location = "raw/../../../../../victim"' <<<"$m")
	printf '%s\n' "$m" | bucket_put .dataspoc/manifest.json
	run -1 --separate-stderr "$LAKE" "$(bucket_url)" --sql 'SELECT count(*) FROM users'
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ $stderr == "lake: "*"'..'"* ]] || { echo "$stderr"; false; }
	[ -f "$BATS_TEST_TMPDIR/victim/other" ]
	[ ! -e "$XDG_CACHE_HOME" ] || [ "$(ls -A "$XDG_CACHE_HOME")" = dataspoc-pipe ]
}
