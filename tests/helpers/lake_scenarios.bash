# helpers/lake_scenarios.bash: the lake a DataSpoc user queries (issue #10): Parquet
# by default, read the way DataSpoc Lens reads it (tests/clients/parquet/lens-rows.mjs:
# the manifest's location, read_parquet(..., hive_partitioning, union_by_name)
# in DuckDB), values that break their schema, ACTIVATE_VERSION, tables per
# folder and their owners.  One function per scenario, each the body of a
# test; they reach the bucket only through the bucket_* functions, and the
# bats file that loads them defines lens_root: a local directory holding the
# bucket's objects (the bucket itself, or a copy of an S3 bucket).

# Recorded output of real taps (tests/fixtures/*/README.md).
FIXTURES=$BATS_TEST_DIRNAME/fixtures

# lake_pipeline NAME TAP INCREMENTAL [DESTINATION-LINE...]: a pipeline with
# no format: key, as a user of the Python DataSpoc Pipe writes it.
lake_pipeline() {
	local name=$1 tap=$2 incremental=$3 line
	shift 3
	{
		printf 'source:\n  tap: %s\ndestination:\n' "$tap"
		bucket_yaml
		for line; do
			printf '  %s\n' "$line"
		done
		printf 'incremental:\n  enabled: %s\n' "$incremental"
	} >"$DATASPOC_PIPE_HOME/pipelines/$name.yaml"
}

# lens KEY: the rows of manifest table KEY, read as Lens reads them.
lens() {
	local root
	root=$(lens_root) || return 1
	node "$PQ/lens-rows.mjs" --map "$(bucket_url)=file://$root" "$root/.dataspoc/manifest.json" "$@"
}

# lens_tables: "KEY LOCATION" per manifest table.
lens_tables() {
	local root
	root=$(lens_root) || return 1
	node "$PQ/lens-rows.mjs" --tables "$root/.dataspoc/manifest.json"
}

# manifest_table KEY: the manifest's table KEY, compact JSON.
manifest_table() {
	bucket_cat .dataspoc/manifest.json | jq -c --arg k "$1" '.tables[$k]'
}

# last_log NAME: the pipeline's latest run log.
last_log() {
	bucket_cat "$(bucket_keys ".dataspoc/logs/$1/" | tail -n 1)"
}

# A run with no format: Parquet files Lens reads; a second run adds a column,
# and the table reads as one.
scenario_lake_default_parquet() {
	use_tap tap-lk
	lake_pipeline lk tap-lk true
	{
		echo '{"type":"SCHEMA","stream":"users","schema":{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":["null","string"]}}},"key_properties":["id"]}'
		singer_records users <<-'EOF'
		{"id":1,"name":"ana"}
		{"id":2,"name":"bo"}
		EOF
		echo '{"type":"STATE","value":{"at":2}}'
	} >"$FAKE_DIR/tap-lk/out"
	run -0 --separate-stderr dataspoc-pipe run lk
	assert_output --partial "Done! 2 records in 1 stream(s)"
	run -0 bucket_files
	assert_output --regexp '^raw/lk/users/dt=[0-9-]{10}/users_[0-9]{8}T[0-9]{6}Z-[0-9a-z]+_0000\.parquet$'
	{
		echo '{"type":"SCHEMA","stream":"users","schema":{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":["null","string"]},"email":{"type":["null","string"]}}},"key_properties":["id"]}'
		singer_records users <<-'EOF'
		{"id":3,"name":"cy","email":"cy@example.com"}
		EOF
		echo '{"type":"STATE","value":{"at":3}}'
	} >"$FAKE_DIR/tap-lk/out"
	run -0 --separate-stderr dataspoc-pipe run lk
	run -0 bucket_files
	[ "${#lines[@]}" -eq 2 ]
	lens_tables >tables
	expect_file tables <<<"lk/users raw/lk/users"
	lens lk/users >rows
	expect_file rows <<-'EOF'
	{"id":"1","name":"ana","_extra":null,"email":null}
	{"id":"2","name":"bo","_extra":null,"email":null}
	{"id":"3","name":"cy","_extra":null,"email":"cy@example.com"}
	EOF
	manifest_table lk/users | jq -c '{source, table, location, pipeline, format, compression,
		key_properties, last: (.last_extraction == .stats.last_extraction),
		rows: .stats.total_rows, n: .stats.extractions}' >m
	expect_file m <<<"{\"source\":\"lk\",\"table\":\"users\",\"location\":\"raw/lk/users\",\"pipeline\":\"lk\",\"format\":\"parquet\",\"compression\":\"zstd\",\"key_properties\":[\"id\"],\"last\":true,\"rows\":3,\"n\":2}"
}

# A lying schema: every value lands, the column widens in a new file, one
# warning per column, the manifest and the run log say what widened.
scenario_lake_widen() {
	local big
	big=1$(printf '0%.0s' $(seq 400))
	use_tap tap-lie
	lake_pipeline lie tap-lie true
	{
		echo '{"type":"SCHEMA","stream":"t","schema":{"type":"object","properties":{"id":{"type":"integer"},"n":{"type":["null","integer"]},"amount":{"type":["null","number"]},"at":{"type":["null","string"],"format":"date-time"},"ok":{"type":["null","boolean"]}}}}'
		singer_records t <<-EOF
		{"id":1,"n":1,"amount":1.5,"at":"2024-01-01T00:00:00Z","ok":true}
		{"id":2,"n":2.5,"amount":2,"at":"1900-01-01T00:19:32+00:19:32","ok":false}
		{"id":3,"n":"abc","amount":$big,"at":"not a time","ok":"yes"}
		{"id":4,"n":4,"amount":12345678901234567891,"at":null,"ok":null}
		{"id":5,"n":"abc","amount":1e400,"at":"later","ok":"no"}
		EOF
		echo '{"type":"STATE","value":{"at":5}}'
	} >"$FAKE_DIR/tap-lie/out"
	run -0 --separate-stderr dataspoc-pipe run lie
	assert_output --partial "Done! 5 records in 1 stream(s)"
	# once per column and run: n twice (to DOUBLE is silent only when exact and
	# not a lie; 2.5 in an integer column is a lie), amount, at, ok once each
	grep -c "warning: .*field 'n' " <<<"$stderr" >c
	expect_file c <<<1
	for col in amount at ok; do
		grep -c "warning: .*field '$col' " <<<"$stderr"
	done >c
	expect_file c <<-'EOF'
	1
	1
	1
	EOF
	[[ $stderr == *"record 2 of stream 't': field 'n' (INT64): 2.5 is not an integer: the column is DOUBLE from this record on (in a new file; earlier files keep INT64)"* ]]
	lens lie/t >rows
	expect_file rows <<-EOF
	{"id":"1","n":"1","amount":"1.5","at":"2024-01-01 00:00:00+00","ok":"true","_extra":null}
	{"id":"2","n":"2.5","amount":"2.0","at":"1900-01-01 00:00:00+00","ok":"false","_extra":null}
	{"id":"3","n":"abc","amount":"$big","at":"not a time","ok":"yes","_extra":null}
	{"id":"4","n":"4","amount":"12345678901234567891","at":null,"ok":null,"_extra":null}
	{"id":"5","n":"abc","amount":"1e400","at":"later","ok":"no","_extra":null}
	EOF
	manifest_table lie/t | jq -c '.columns[] | [.name, .parquet_type, .widened.from, .widened.record]' >m
	expect_file m <<-'EOF'
	["id","INT64",null,null]
	["n","STRING","INT64",2]
	["amount","STRING","DOUBLE",3]
	["at","STRING","TIMESTAMP(MICROS,UTC)",3]
	["ok","STRING","BOOLEAN",3]
	["_extra","JSON",null,null]
	EOF
	last_log lie | jq -c '.status, [.streams.t.widened[] | [.column, .from, .to, .record]]' >log
	expect_file log <<-'EOF'
	"success"
	[["n","INT64","DOUBLE",2],["n","DOUBLE","STRING",3],["amount","DOUBLE","STRING",3],["at","TIMESTAMP(MICROS,UTC)","STRING",3],["ok","BOOLEAN","STRING",3]]
	EOF
	# the next run's values fit: its file has the schema's types, and the
	# table still reads as one
	{
		echo '{"type":"SCHEMA","stream":"t","schema":{"type":"object","properties":{"id":{"type":"integer"},"n":{"type":["null","integer"]},"amount":{"type":["null","number"]},"at":{"type":["null","string"],"format":"date-time"},"ok":{"type":["null","boolean"]}}}}'
		singer_records t <<<'{"id":6,"n":6,"amount":6.5,"at":"2024-06-01T00:00:00Z","ok":true}'
	} >"$FAKE_DIR/tap-lie/out"
	run -0 --separate-stderr dataspoc-pipe run lie
	assert_stderr "  t: 1 record..."
	lens lie/t | tail -n 1 >rows
	expect_file rows <<<'{"id":"6","n":"6","amount":"6.5","at":"2024-06-01 00:00:00+00","ok":"true","_extra":null}'
}

# schema_mismatch: fail: the first value that does not fit fails the run,
# naming it; the bucket and the state stay as they were.
scenario_lake_strict() {
	use_tap tap-strict
	lake_pipeline strict tap-strict true "schema_mismatch: fail"
	{
		echo '{"type":"SCHEMA","stream":"t","schema":{"properties":{"id":{"type":"integer"}}}}'
		singer_records t <<<'{"id":1}'
		echo '{"type":"STATE","value":{"at":1}}'
	} >"$FAKE_DIR/tap-strict/out"
	run -0 --separate-stderr dataspoc-pipe run strict
	bucket_snapshot | grep -v ' \.dataspoc/logs/' >before
	{
		echo '{"type":"SCHEMA","stream":"t","schema":{"properties":{"id":{"type":"integer"}}}}'
		singer_records t <<-'EOF'
		{"id":2}
		{"id":"three"}
		EOF
		echo '{"type":"STATE","value":{"at":3}}'
	} >"$FAKE_DIR/tap-strict/out"
	run -1 --separate-stderr dataspoc-pipe run strict
	[[ $stderr == *"dataspoc-pipe: run 'strict' failed: the tap's output, line 3: record 2 of stream 't' does not fit its Parquet columns: field 'id' (INT64): \"three\" is not an integer (schema_mismatch: fail; widen, the default, lands it)"* ]]
	bucket_snapshot | grep -v ' \.dataspoc/logs/' >after
	diff -u before after
}

# tap-mysql's FULL_TABLE runs (ACTIVATE_VERSION before and after its
# records, a new version each run) in an incremental pipeline: one copy of
# the table after every run; a stream without ACTIVATE_VERSION appends.
scenario_lake_activate_version() {
	use_tap tap-mysql
	lake_pipeline my tap-mysql true
	local run n
	for run in run-full1 run-full2 run-full1; do
		{
			cat "$FIXTURES/tap-mysql/$run.jsonl"
			echo "{\"type\":\"RECORD\",\"stream\":\"events\",\"record\":{\"run\":\"$run\"}}"
		} >"$FAKE_DIR/tap-mysql/out"
		run --separate-stderr dataspoc-pipe run my
		[ "$status" -eq 0 ] || { printf '%s\n' "$stderr" >&2; false; }
		n=$(grep -c '"type": "RECORD"' "$FIXTURES/tap-mysql/$run.jsonl")
		lens mysql/products | jq -r .id | sort -n | tr '\n' ' ' >ids
		grep -o '"record": {[^}]*}' "$FIXTURES/tap-mysql/$run.jsonl" | grep -o '"id": [0-9]*' |
			sed 's/"id": //' | sort -n | tr '\n' ' ' >want
		diff -u want ids
		[ "$(lens mysql/products | wc -l)" -eq "$n" ]
		manifest_table mysql/products | jq .stats.total_rows >rows
		expect_file rows <<<"$n"
	done
	lens mysql/events | jq -r .run >events
	expect_file events <<-'EOF'
	run-full1
	run-full1
	run-full2
	EOF
	# the last version activated is recorded; the version's files are the run's
	manifest_table mysql/products | jq .table_version >v
	expect_file v <<<1796111616640
	run -0 bucket_files
	local last
	last=$(bucket_keys .dataspoc/logs/my/ | tail -n 1 | sed 's|.*/||; s|\.json$||')
	printf '%s\n' "${lines[@]}" | grep /products/ | grep -vc "_${last}_" >others || true
	expect_file others <<<0
}

# singer-io's tap-postgres, INCREMENTAL: it activates the same version on
# every run, so the table keeps growing; nothing is replaced.
scenario_lake_activate_incremental() {
	lake_pipeline pg tap-postgres true
	run -0 --separate-stderr dataspoc-pipe run pg
	assert_output --partial "Done! 20 records in 1 stream(s)"
	run -0 --separate-stderr dataspoc-pipe run pg
	assert_output --partial "Done! 7 records in 1 stream(s)"
	[[ $stderr != *"kept "* ]]
	[ "$(lens postgres/customers | wc -l)" -eq 27 ]
	manifest_table postgres/customers | jq -c '[.stats.total_rows, .table_version]' >m
	expect_file m <<<'[27,1795998976608]'
}

# The same stream landed by two pipelines under two paths: two tables.
scenario_lake_two_paths() {
	use_tap tap-two
	lake_pipeline a tap-two true "path: raw"
	lake_pipeline b tap-two true "path: inc"
	singer_records t <<<'{"id":1}' >"$FAKE_DIR/tap-two/out"
	run -0 --separate-stderr dataspoc-pipe run a
	singer_records t <<<'{"id":2}' >"$FAKE_DIR/tap-two/out"
	run -0 --separate-stderr dataspoc-pipe run b
	lens_tables >tables
	expect_file tables <<-EOF
	inc/two/t inc/two/t
	two/t raw/two/t
	EOF
	lens two/t | jq -r .id >a
	expect_file a <<<1
	lens inc/two/t | jq -r .id >b
	expect_file b <<<2
	bucket_cat .dataspoc/manifest.json | jq -r '.tables[] | .pipeline + " " + .path' | sort >owners
	expect_file owners <<-'EOF'
	a raw/two/t
	b inc/two/t
	EOF
}

# Two pipelines in one table folder: a snapshot run replaces only its own
# pipeline's files, and is told whose folder it is.
scenario_lake_shared_folder() {
	use_tap tap-sh
	lake_pipeline inc tap-sh true
	lake_pipeline snap tap-sh false
	singer_records t <<<'{"id":"inc-1"}' >"$FAKE_DIR/tap-sh/out"
	run -0 --separate-stderr dataspoc-pipe run inc
	singer_records t <<<'{"id":"snap-1"}' >"$FAKE_DIR/tap-sh/out"
	run -0 --separate-stderr dataspoc-pipe run snap
	[[ $stderr == *"warning: table folder 'raw/sh/t' belongs to pipeline 'inc': pipeline 'snap' lands its files there too"* ]]
	[[ $stderr == *"warning: kept 1 file(s) in 'raw/sh/t' that pipeline 'snap' did not land"* ]]
	singer_records t <<<'{"id":"snap-2"}' >"$FAKE_DIR/tap-sh/out"
	run -0 --separate-stderr dataspoc-pipe run snap
	singer_records t <<<'{"id":"inc-2"}' >"$FAKE_DIR/tap-sh/out"
	run -0 --separate-stderr dataspoc-pipe run inc
	lens sh/t | jq -r .id >ids
	expect_file ids <<-'EOF'
	inc-1
	inc-2
	snap-2
	EOF
	manifest_table sh/t | jq -r .pipeline >owner
	expect_file owner <<<inc
}

# The Python DataSpoc Pipe's multi-stage lake: a bronze table landed from a
# tap, a silver table landed from the bronze table's Parquet files by
# `tap: parquet` (the built-in's Python name) through a jq transform that
# drops a PII column (its column stays, null: the transform changes records,
# not the schema); incremental by file, so a second round carries only the
# new bronze file into silver, exactly once.  A member beyond the schema
# (in bronze's _extra column) is a member of the record again in silver.
scenario_lake_bronze_silver() {
	local round
	use_tap tap-br
	lake_pipeline bronze tap-br true
	cat >"$DATASPOC_PIPE_HOME/pipelines/silver.yaml" <<-EOF
	source:
	  tap: parquet
	  config:
	    path: $(bucket_url)/raw/br/orders
	    stream_name: orders
	    key_properties: [id]
	destination:
	$(bucket_yaml)
	  path: silver
	incremental:
	  enabled: true
	EOF
	mkdir -p "$DATASPOC_PIPE_HOME/transforms"
	echo 'del(.email)' >"$DATASPOC_PIPE_HOME/transforms/silver.jq"
	for round in 1 2; do
		{
			echo '{"type":"SCHEMA","stream":"orders","schema":{"type":"object","properties":{"id":{"type":"integer"},"email":{"type":"string"},"total":{"type":"number"}}},"key_properties":["id"]}'
			singer_records orders <<-EOF
			{"id":${round}1,"email":"a$round@example.com","total":1$round.5}
			{"id":${round}2,"email":"b$round@example.com","total":0.$round,"note":{"n":$round}}
			EOF
			echo "{\"type\":\"STATE\",\"value\":{\"round\":$round}}"
		} >"$FAKE_DIR/tap-br/out"
		run -0 --separate-stderr dataspoc-pipe run bronze
		run -0 --separate-stderr dataspoc-pipe run silver
		assert_output --partial "Done! 2 records in 1 stream(s)"
	done
	# a third run finds no new bronze file: nothing more lands
	run -0 --separate-stderr dataspoc-pipe run silver
	assert_output --partial "Done! 0 records"
	lens_tables >tables
	expect_file tables <<-EOF
	br/orders raw/br/orders
	parquet/orders silver/parquet/orders
	EOF
	lens parquet/orders >rows
	expect_file rows <<-'EOF'
	{"id":"11","email":null,"total":11.5,"_extra":null}
	{"id":"12","email":null,"total":0.1,"_extra":"{\"note\":{\"n\":1}}"}
	{"id":"21","email":null,"total":12.5,"_extra":null}
	{"id":"22","email":null,"total":0.2,"_extra":"{\"note\":{\"n\":2}}"}
	EOF
	run -0 bucket_cat .dataspoc/state/silver/state.json
	[ "$(jq '.bookmarks.orders.files | length' <<<"$output")" -eq 2 ]
}
