#!/usr/bin/env bats
# Stream selection: source.streams, source.metadata, source.catalog,
# source.catalog_flag, the cached catalog, and records of streams that were
# not selected.

load helpers/common

setup() {
	pipe_setup
}

teardown() {
	pipe_teardown
}

# sel_pipeline TAP NAME STREAM [EXTRA-SOURCE-LINE...]: a pipeline of TAP
# selecting STREAM.
sel_pipeline() {
	local tap=$1 name=$2 stream=$3 line
	shift 3
	{
		printf 'source:\n  tap: %s\n  config: {host: localhost}\n' "$tap"
		printf '  streams: [%s]\n' "$stream"
		for line; do
			printf '  %s\n' "$line"
		done
		printf 'destination:\n'
		bucket_yaml
		printf '  format: jsonl\nincremental:\n  enabled: true\n'
	} >"$DATASPOC_PIPE_HOME/pipelines/$name.yaml"
}

# pg_pipeline NAME STREAM [EXTRA-SOURCE-LINE...]: a pipeline of seltap-pg.
pg_pipeline() {
	sel_pipeline seltap-pg "$@"
}

@test "tap-postgres gets --properties with the stream selected and the metadata applied" {
	pg_pipeline pg appdb-public-customers \
		'metadata:' '  "appdb-public-*": {replication-method: INCREMENTAL, replication-key: updated_at}'
	run -0 --separate-stderr dataspoc-pipe run pg
	assert_output "Running: pg
Done! 20 records in 1 stream(s)
  customers: 20"
	# What the real tap was given in the recorded session, plus the legacy schema flag.
	jq -S . "$PG_FIXTURES/properties.json" >want.json
	jq -S '.streams[0].schema |= del(.selected)' "$FAKE_DIR/seltap-pg/properties.json" >got.json
	diff -u want.json got.json
	run -0 jq -c '.streams[0].schema.selected' "$FAKE_DIR/seltap-pg/properties.json"
	assert_output true
	grep -q -- '--properties' "$FAKE_DIR/seltap-pg/calls"
	run -1 grep -q -- '--catalog' "$FAKE_DIR/seltap-pg/calls"
}

@test "a replication-key in source.metadata that is no column: the YAML line named, 'no such column', 'did you mean' the column near it, the columns there are; nothing run" {
	pg_pipeline pg appdb-public-customers \
		'metadata:' '  "appdb-public-*": {replication-method: INCREMENTAL, replication-key: updatd_at}'
	run -2 --separate-stderr dataspoc-pipe run pg
	assert_output ""
	local cols
	cols=$(jq -r '.streams[] | select(.tap_stream_id == "appdb-public-customers") | .schema.properties | keys_unsorted | join(", ")' \
		"$PG_FIXTURES/discover-catalog.json")
	assert_equal "$stderr" "dataspoc-pipe: run 'pg' failed: $DATASPOC_PIPE_HOME/pipelines/pg.yaml:6:74: source.metadata.appdb-public-*.replication-key 'updatd_at': stream 'appdb-public-customers' has no such column: did you mean 'updated_at'? (its columns: $cols)"
	[ -z "$(bucket_files)" ]
	# validate says so too
	run -1 --separate-stderr dataspoc-pipe validate pg
	assert_line --partial "pg: tap: FAIL: $DATASPOC_PIPE_HOME/pipelines/pg.yaml:6:74: source.metadata"
	# a name near no column: no guess
	pg_pipeline pg appdb-public-customers \
		'metadata:' '  "appdb-public-*": {replication-method: INCREMENTAL, replication-key: modified}'
	run -2 --separate-stderr dataspoc-pipe run pg
	assert_equal "$stderr" "dataspoc-pipe: run 'pg' failed: $DATASPOC_PIPE_HOME/pipelines/pg.yaml:6:74: source.metadata.appdb-public-*.replication-key 'modified': stream 'appdb-public-customers' has no such column (its columns: $cols)"
}

@test "a replication-key in source.metadata holding a newline, a tab, an escape or a NUL: one line, the name said whole, no column taken for it; nothing run" {
	local k want
	for k in 'updatd_at\nx' 'upd\tated' 'updatd_at\e[31m' 'updated_at\0x'; do
		pg_pipeline pg appdb-public-customers \
			'metadata:' "  \"appdb-public-*\": {replication-method: INCREMENTAL, replication-key: \"$k\"}"
		run -2 --separate-stderr dataspoc-pipe run pg
		assert_output ""
		[ "${#stderr_lines[@]}" -eq 1 ] || { printf '%s\n' "$stderr"; false; }
		want=${k//\\e/\\u001b}
		want=${want//\\0/\\u0000}
		[[ $stderr == "dataspoc-pipe: run 'pg' failed: "*".replication-key '$want': stream 'appdb-public-customers' has no such column"* ]] ||
			{ printf '%s\n' "$stderr"; false; }
	done
	[ -z "$(bucket_files)" ]
}

@test "a replication-key in source.metadata that is a column not selected: the YAML line named, 'not a selected column' and why, never the tap's temporary catalog; nothing run" {
	jq '(.streams[] | select(.tap_stream_id == "appdb-public-customers") | .metadata[] | select(.breadcrumb == ["properties", "updated_at"]) | .metadata.selected) = false' \
		"$PG_FIXTURES/discover-catalog.json" >mine.json
	pg_pipeline pg appdb-public-customers \
		'metadata:' '  "appdb-public-*": {replication-method: INCREMENTAL, replication-key: updated_at}' \
		"catalog: $BATS_TEST_TMPDIR/mine.json"
	run -2 --separate-stderr dataspoc-pipe run pg
	assert_output ""
	assert_equal "$stderr" "dataspoc-pipe: run 'pg' failed: $DATASPOC_PIPE_HOME/pipelines/pg.yaml:6:74: source.metadata.appdb-public-*.replication-key 'updated_at': column 'updated_at' of stream 'appdb-public-customers' is not a selected column (its catalog metadata says \"selected\": false)"
	[ -z "$(bucket_files)" ]
	# a type the tap cannot extract: not selected either
	jq '(.streams[] | select(.tap_stream_id == "appdb-public-customers") | .metadata[] | select(.breadcrumb == ["properties", "updated_at"]) | .metadata.inclusion) = "unsupported"' \
		"$PG_FIXTURES/discover-catalog.json" >mine.json
	run -2 --separate-stderr dataspoc-pipe run pg
	assert_equal "$stderr" "dataspoc-pipe: run 'pg' failed: $DATASPOC_PIPE_HOME/pipelines/pg.yaml:6:74: source.metadata.appdb-public-*.replication-key 'updated_at': column 'updated_at' of stream 'appdb-public-customers' is not a selected column (its catalog metadata says \"inclusion\": \"unsupported\": the tap cannot extract its type)"
	[ -z "$(bucket_files)" ]
}

@test "without a replication method tap-postgres extracts nothing, as the real one does" {
	pg_pipeline pg appdb-public-customers
	run -0 --separate-stderr dataspoc-pipe run pg
	assert_output "Running: pg
Done! 0 records in 0 stream(s)"
	[ -z "$(bucket_files)" ]
}

@test "the catalog is discovered once a run, cached beside the pipeline for the run's stages" {
	pg_pipeline pg customers \
		'metadata:' '  appdb-public-customers: {replication-method: INCREMENTAL}'
	run -0 --separate-stderr dataspoc-pipe run pg
	[ -f "$DATASPOC_PIPE_HOME/pipelines/pg.catalog.json" ]
	cmp "$PG_FIXTURES/discover-catalog.json" "$DATASPOC_PIPE_HOME/pipelines/pg.catalog.json"
	run -0 --separate-stderr dataspoc-pipe run pg
	assert_line --index 1 "  Incremental mode (using previous checkpoint)"
	run -0 wc -l <"$FAKE_DIR/seltap-pg/discoveries"
	assert_output 2
	run -0 --separate-stderr dataspoc-pipe run --refresh-catalog pg
	run -0 wc -l <"$FAKE_DIR/seltap-pg/discoveries"
	assert_output 3
}

@test "a stream the tap does not offer stops the run before anything is written" {
	pg_pipeline pg appdb-public-nope
	run -2 --separate-stderr dataspoc-pipe run pg
	assert_output ""
	# (said by pipe-tap, or by the driver in its words: the reason is the same)
	[[ $stderr == *": stream 'appdb-public-nope' in source.streams is not offered by the tap (it offers: appdb-public-customers)" ]]
	[ -z "$(bucket_files)" ]
	run -1 grep -v -e '--discover' "$FAKE_DIR/seltap-pg/calls"
}

@test "a tap that ignores the catalog: records of other streams are dropped and counted" {
	cat >"$DATASPOC_PIPE_HOME/pipelines/sdk.yaml" <<-YAML
	source:
	  tap: seltap-sdk
	  streams: [a]
	destination:
	$(bucket_yaml)
	  format: jsonl
	  compression: none
	YAML
	# (bats 1.8 strips stderr's leading blanks: compare it as a file)
	run -0 sh -c 'dataspoc-pipe run sdk 2>err'
	assert_output "Running: sdk
Done! 2 records in 1 stream(s)
  a: 2"
	printf '%s\n' "  a: 2 records..." \
		"dataspoc-pipe: warning: dropped 3 record(s) of stream 'b', which was not selected" >want.err
	diff -u want.err err
	# --about lists the catalog capability: --catalog it is.
	run -0 cat "$FAKE_DIR/seltap-sdk/flag"
	assert_output --catalog
	run -0 jq -c '[.streams[] | [.tap_stream_id, .schema.selected, (.metadata[] | select(.breadcrumb == []) | .metadata.selected)]]' \
		"$FAKE_DIR/seltap-sdk/catalog.json"
	assert_output '[["a",true,true],["b",false,false]]'
	# The schema's numbers reach the tap byte for byte.
	grep -q '"maximum":9223372036854775807' "$FAKE_DIR/seltap-sdk/catalog.json"
	run -0 bucket_files
	assert_output --regexp '^raw/selsdk/a/dt=[0-9-]+/a_[0-9TZ]+-[0-9a-f]+_0000\.jsonl$'
	run -0 table_data raw/selsdk/a
	assert_output '{"id":1}
{"id":2}'
}

@test "source.catalog_flag overrides what --about says" {
	cat >"$DATASPOC_PIPE_HOME/pipelines/sdk.yaml" <<-YAML
	source:
	  tap: seltap-sdk
	  streams: [b]
	  catalog_flag: properties
	destination:
	$(bucket_yaml)
	  format: jsonl
	YAML
	run -0 --separate-stderr dataspoc-pipe run sdk
	run -0 cat "$FAKE_DIR/seltap-sdk/flag"
	assert_output --properties
	run -1 grep -q -- '--about' "$FAKE_DIR/seltap-sdk/calls"
}

@test "source.catalog is passed as given" {
	printf '{"streams": [{"tap_stream_id": "a", "x": 12345678901234567891}]}\n' >mine.json
	cat >"$DATASPOC_PIPE_HOME/pipelines/sdk.yaml" <<-YAML
	source:
	  tap: seltap-sdk
	  catalog: $BATS_TEST_TMPDIR/mine.json
	destination:
	$(bucket_yaml)
	  format: jsonl
	YAML
	run -0 --separate-stderr dataspoc-pipe run sdk
	cmp mine.json "$FAKE_DIR/seltap-sdk/catalog.json"
	run -1 grep -q -- '--discover' "$FAKE_DIR/seltap-sdk/calls"
}

@test "source.catalog's own replication-key that is no column, with source.streams: that file's line named, 'no such column', did you mean; never the tap's temporary catalog" {
	jq '(.streams[] | select(.tap_stream_id == "appdb-public-customers") | .metadata[] | select(.breadcrumb == []) | .metadata) += {"selected": true, "replication-method": "INCREMENTAL", "replication-key": "updatd_at"}' \
		"$PG_FIXTURES/discover-catalog.json" >mine.json
	cat >"$DATASPOC_PIPE_HOME/pipelines/pg.yaml" <<-YAML
	source:
	  tap: seltap-pg
	  streams: [appdb-public-customers]
	  catalog: $BATS_TEST_TMPDIR/mine.json
	destination:
	$(bucket_yaml)
	  format: jsonl
	YAML
	local line col cols
	line=$(grep -n '"replication-key": "updatd_at"' mine.json | cut -d: -f1)
	col=$(sed -n "${line}p" mine.json | awk '{ print index($0, "\"updatd_at\"") }')
	cols=$(jq -r '.streams[] | select(.tap_stream_id == "appdb-public-customers") | .schema.properties | keys_unsorted | join(", ")' mine.json)
	run -2 --separate-stderr dataspoc-pipe run pg
	assert_output ""
	assert_equal "$stderr" "dataspoc-pipe: run 'pg' failed: $BATS_TEST_TMPDIR/mine.json:$line:$col: replication-key 'updatd_at': stream 'appdb-public-customers' has no such column: did you mean 'updated_at'? (its columns: $cols)"
	[ -z "$(bucket_files)" ]
	# (without streams or metadata the file itself is given to the tap, which names it)
	# source.metadata's replication-key is the one the tap gets: it is checked, not the catalog's
	sed -i 's|^  catalog: .*|&\n  metadata:\n    appdb-public-customers: {replication-key: updated_at}|' "$DATASPOC_PIPE_HOME/pipelines/pg.yaml"
	run -0 --separate-stderr dataspoc-pipe run pg
}

@test "what the tap says of its config and catalog names the pipeline's file (and source.config's line), never the temporary files pipe-tap gave it (#29 item 13)" {
	# (dataspoc-tap-postgres checks them before it connects: no server needed)
	cat >"$DATASPOC_PIPE_HOME/pipelines/pg.yaml" <<-YAML
	source:
	  tap: dataspoc-tap-postgres
	  config: {host: 127.0.0.1, port: 1, password: pw, dbname: appdb}
	  catalog: $PG_FIXTURES/discover-catalog.json
	  streams: [appdb-public-customers]
	  metadata:
	    appdb-public-customers: {replication-method: INCREMENTL}
	destination:
	$(bucket_yaml)
	  format: jsonl
	YAML
	local file=$DATASPOC_PIPE_HOME/pipelines/pg.yaml
	run -1 --separate-stderr dataspoc-pipe run pg
	assert_equal "${stderr_lines[1]}" "  | dataspoc-tap-postgres: config '$file:3:11 (source.config)': 'user' is required"
	sed -i 's/{host:/{user: u, host:/' "$file"
	run -1 --separate-stderr dataspoc-pipe run pg
	assert_equal "${stderr_lines[1]}" "  | dataspoc-tap-postgres: properties '$file (source.streams and source.metadata applied to source.catalog)': stream 'appdb-public-customers': unknown replication-method 'INCREMENTL' (FULL_TABLE, INCREMENTAL or LOG_BASED; or set default_replication_method in the config)"
	[[ $stderr != *"/dataspoc-pipe."* ]]
	[ -z "$(bucket_files)" ]
}

# py_pipeline NAME STREAM [EXTRA-SOURCE-LINE...]: a pipeline of seltap-py
# (or of $PY_TAP).
py_pipeline() {
	sel_pipeline "${PY_TAP:-seltap-py}" "$@"
}

# The tap's runs so far, one per line, its file arguments as F.
py_calls() {
	sed -E 's#/[^ ]+#F#g' "$FAKE_DIR/seltap-py/calls"
}

@test "a singer-python tap: probed once, quiet on the terminal, discovered and run once per cached run" {
	py_pipeline py a
	run -0 sh -c 'dataspoc-pipe run py 2>err'
	assert_output "Running: py
Done! 1 record in 1 stream(s)
  a: 1"
	# neither the probe's usage error nor the tap's INFO lines
	run -1 grep -e INFO -e usage -e 'error:' err
	run -0 py_calls
	assert_output "--config F --discover
--about
--config F --properties F"
	expect_file "$DATASPOC_PIPE_HOME/pipelines/py.tap.json" <<<'{"tap":["seltap-py"],"catalog_flag":"--properties"}'
	# cached: discovered again (a column may have come), not probed
	rm "$FAKE_DIR/seltap-py/calls"
	run -0 sh -c 'dataspoc-pipe run py 2>err'
	run -1 grep -e INFO -e usage -e 'error:' err
	run -0 py_calls
	assert_output "--config F --discover
--config F --properties F"
	# --refresh-catalog: discovered and probed again
	rm "$FAKE_DIR/seltap-py/calls"
	run -0 --separate-stderr dataspoc-pipe run --refresh-catalog py
	run -0 py_calls
	assert_output "--config F --discover
--about
--config F --properties F"
}

@test "NAME.tap.json cannot be written: --about is asked once a run, not once a stage" {
	seltap-py --config /dev/null --discover >mine.json 2>/dev/null
	rm "$FAKE_DIR/seltap-py/calls"
	py_pipeline py a "catalog: $BATS_TEST_TMPDIR/mine.json"
	# (root writes in any folder: a folder in the file's place)
	mkdir "$DATASPOC_PIPE_HOME/pipelines/py.tap.json"
	run -0 --separate-stderr dataspoc-pipe run py
	assert_output "Running: py
Done! 1 record in 1 stream(s)
  a: 1"
	run -0 py_calls
	assert_output "--about
--config F --properties F"
	# kept for the run only: the next one asks again
	rm "$FAKE_DIR/seltap-py/calls"
	run -0 --separate-stderr dataspoc-pipe run py
	run -0 py_calls
	assert_output "--about
--config F --properties F"
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

@test "the tap command changed: the catalog and the --about answer are not used" {
	py_pipeline py a
	run -0 --separate-stderr dataspoc-pipe run py
	rm "$FAKE_DIR/seltap-py/calls"
	PY_TAP='seltap-py -x' py_pipeline py a
	run -0 --separate-stderr dataspoc-pipe run py
	run -0 py_calls
	assert_output "-x --config F --discover
-x --about
-x --config F --properties F"
	expect_file "$DATASPOC_PIPE_HOME/pipelines/py.tap.json" <<<'{"tap":["seltap-py","-x"],"catalog_flag":"--properties"}'
	rm "$FAKE_DIR/seltap-py/calls"
	PY_TAP='seltap-py -x' py_pipeline py a
	run -0 --separate-stderr dataspoc-pipe run py
	run -0 py_calls
	assert_output "-x --config F --discover
-x --config F --properties F"
}

@test "a tap with --about: its answer is cached too" {
	cat >"$DATASPOC_PIPE_HOME/pipelines/sdk.yaml" <<-YAML
	source:
	  tap: seltap-sdk
	  streams: [a]
	destination:
	$(bucket_yaml)
	  format: jsonl
	YAML
	run -0 --separate-stderr dataspoc-pipe run sdk
	run -0 --separate-stderr dataspoc-pipe run sdk
	run -0 grep -c -- --about "$FAKE_DIR/seltap-sdk/calls"
	assert_output 1
	run -0 grep -c -- --catalog "$FAKE_DIR/seltap-sdk/calls"
	assert_output 2
	expect_file "$DATASPOC_PIPE_HOME/pipelines/sdk.tap.json" <<<'{"tap":["seltap-sdk"],"catalog_flag":"--catalog"}'
}

@test "-v shows the stderr of the discovery and of the probe as they run" {
	py_pipeline py a
	run -0 sh -c 'dataspoc-pipe run -v py 2>err'
	sed -E 's#/[^ ]+#F#g' err >err.f
	grep -qx 'INFO seltap-py --config F (source.config) --discover' err.f
	grep -qx 'seltap-py: error: unrecognized arguments: --about' err.f
}

@test "-v: the discovery's stderr is shown while the discovery still runs" {
	py_pipeline py a
	mkdir -p "$FAKE_DIR/seltap-py"
	: >"$FAKE_DIR/seltap-py/discover-block"
	dataspoc-pipe run -v py >out 2>err &
	BG_PIDS="$BG_PIDS $!"
	local driver=$!
	wait_for "$FAKE_DIR/seltap-py/discovering"
	# the tap's line is out before its discovery ends
	WAIT_LIMIT=10 wait_until grep -q 'INFO seltap-py .*--discover' err
	: >"$FAKE_DIR/seltap-py/release"
	wait "$driver"
	grep -c 'INFO seltap-py .*--discover' err >n
	expect_file n <<<1
	grep -qx 'Done! 1 record in 1 stream(s)' out
}

@test "run -v, a discovery that fails: the tap's words shown once, live, then the one failure line" {
	py_pipeline py a
	mkdir -p "$FAKE_DIR/seltap-py"
	echo 1 >"$FAKE_DIR/seltap-py/discover-exit"
	run -2 --separate-stderr dataspoc-pipe run -v py
	grep -c 'CRITICAL cannot connect to the database' <<<"$stderr" >n
	expect_file n <<<1
	assert_equal "${stderr_lines[${#stderr_lines[@]}-1]}" "$(grep "^dataspoc-pipe: run 'py' failed: " <<<"$stderr")"
}

@test "a discovery that fails: the tap's stderr is shown, then the error" {
	py_pipeline py a
	mkdir -p "$FAKE_DIR/seltap-py"
	echo 1 >"$FAKE_DIR/seltap-py/discover-exit"
	run -2 --separate-stderr pipe-tap -n py
	assert_output ""
	sed -E 's#/[^ ]+#F#g' <<<"$stderr" >err.f
	expect_file err.f <<-EOF
	INFO seltap-py --config F (source.config) --discover
	CRITICAL cannot connect to the database
	pipe-tap: seltap-py --discover failed with status 1
	EOF
	[ ! -e "$DATASPOC_PIPE_HOME/pipelines/py.catalog.json" ]
	run -2 --separate-stderr dataspoc-pipe run py
	assert_output ""
	grep -qx 'CRITICAL cannot connect to the database' <<<"$stderr"
	[ -z "$(bucket_files)" ]
	# with -l, it goes to the file
	run -2 --separate-stderr pipe-tap -n -l tap.log py
	assert_stderr "pipe-tap: seltap-py --discover failed with status 1"
	grep -qx 'CRITICAL cannot connect to the database' tap.log
}

@test "a stream missing from the cached catalog: discovered again once, then selected" {
	py_pipeline py a
	run -0 --separate-stderr dataspoc-pipe run py
	# the tap's config now reaches a table it did not before
	{
		echo '{"streams": [{"tap_stream_id": "a", "stream": "a", "schema": {}, "metadata": []},'
		echo ' {"tap_stream_id": "users", "stream": "users", "schema": {}, "metadata": []}]}'
	} >"$FAKE_DIR/seltap-py/catalog.json"
	py_pipeline py users
	rm "$FAKE_DIR/seltap-py/calls"
	run -0 --separate-stderr dataspoc-pipe run py
	assert_output "Running: py
Done! 1 record in 1 stream(s)
  users: 1"
	run -0 py_calls
	assert_output "--config F --discover
--config F --properties F"
	cmp "$FAKE_DIR/seltap-py/catalog.json" "$DATASPOC_PIPE_HOME/pipelines/py.catalog.json"
	# one the tap really does not offer: one discovery, then the error
	py_pipeline py nope
	rm "$FAKE_DIR/seltap-py/calls"
	run -2 --separate-stderr dataspoc-pipe run py
	assert_output ""
	[[ $stderr == *": stream 'nope' in source.streams is not offered by the tap (it offers: a, users)" ]]
	run -0 py_calls
	assert_output "--config F --discover"
	run -2 --separate-stderr pipe-tap -n py
	assert_stderr "pipe-tap: stream 'nope' in source.streams is not offered by the tap (it offers: a, users)"
}

@test "a run that selects no stream of a tap that discovers fails, naming source.streams and what discovery offers" {
	{
		printf 'source:\n  tap: seltap-pg\n  config: {host: localhost}\n'
		printf 'destination:\n'
		bucket_yaml
		printf '  format: jsonl\n'
	} >"$DATASPOC_PIPE_HOME/pipelines/pg.yaml"
	run -1 --separate-stderr dataspoc-pipe run pg
	assert_output "Running: pg"
	assert_stderr "dataspoc-pipe: run 'pg' failed: seltap-pg extracted nothing: no stream is selected; name the ones to extract in source.streams (its discovery offers: appdb-public-customers)"
	[ -z "$(bucket_files)" ]
	# the run log says so too
	run -0 dataspoc-pipe logs pg
	assert_output --partial "no stream is selected"
	# a tap that offers nothing is taken at its word: 0 records, exit 0
	use_tap tap-none
	: >"$FAKE_DIR/tap-none/out"
	write_pipeline none tap-none
	run -0 --separate-stderr dataspoc-pipe run none
	assert_output "Running: none
Done! 0 records in 0 stream(s)"
}

@test "a cached catalog is discovered again each run, and what changed in a selected stream is said" {
	mkdir -p "$FAKE_DIR/seltap-py"
	cat >"$FAKE_DIR/seltap-py/catalog.json" <<-'EOF'
	{"streams": [{"tap_stream_id": "a", "stream": "a", "schema": {"type": "object", "properties": {"id": {"type": "integer"}, "n": {"type": "integer"}, "old": {"type": "string"}}}, "metadata": []},
	 {"tap_stream_id": "b", "stream": "b", "schema": {"type": "object", "properties": {"x": {"type": "string"}}}, "metadata": []}]}
	EOF
	py_pipeline py a
	run -0 sh -c 'dataspoc-pipe run py 2>err'
	run -1 grep warning err
	# a column added, one gone, a type changed in a; b (not selected) changed too: not said
	cat >"$FAKE_DIR/seltap-py/catalog.json" <<-'EOF'
	{"streams": [{"tap_stream_id": "a", "stream": "a", "schema": {"type": "object", "properties": {"id": {"type": "integer"}, "n": {"type": ["null", "number"]}, "email": {"type": "string"}}}, "metadata": []},
	 {"tap_stream_id": "b", "stream": "b", "schema": {"type": "object", "properties": {"y": {"type": "string"}}}, "metadata": []}]}
	EOF
	run -0 sh -c 'dataspoc-pipe run py 2>err'
	run -0 grep warning err
	assert_output "dataspoc-pipe: warning: the catalog of seltap-py changed since the last discovery: stream 'a': column 'n' type \"integer\" -> [\"null\",\"number\"], column 'email' added, column 'old' gone"
	# the cache is the new catalog: said once
	cmp "$FAKE_DIR/seltap-py/catalog.json" "$DATASPOC_PIPE_HOME/pipelines/py.catalog.json"
	run -0 sh -c 'dataspoc-pipe run py 2>err'
	run -1 grep warning err
}
