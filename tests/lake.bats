#!/usr/bin/env bats
# The lake a DataSpoc user queries (issue #10), on a local bucket: Parquet
# by default, read back the way DataSpoc Lens reads it (tests/helpers/lake_scenarios.bash),
# and what only a local run shows: the transform and config checks.

load helpers/common
use_local_lake

@test "lake: no format: lands Parquet that Lens reads as one table over runs and a new column" {
	scenario_lake_default_parquet
}

@test "lake: a schema the values break: every value lands, the column widens in a new file, said once" {
	scenario_lake_widen
}

@test "lake: schema_mismatch: fail refuses the value and leaves the bucket as it was" {
	scenario_lake_strict
}

@test "lake: ACTIVATE_VERSION (tap-mysql FULL_TABLE): one copy of the table after every run" {
	scenario_lake_activate_version
}

@test "lake: ACTIVATE_VERSION of the same version (tap-postgres INCREMENTAL) keeps appending" {
	scenario_lake_activate_incremental
}

@test "lake: one stream under two paths is two tables" {
	scenario_lake_two_paths
}

@test "lake: two pipelines in one folder: a snapshot replaces only its own files, and is told whose folder it is" {
	scenario_lake_shared_folder
}

@test "lake: transforms/NAME.py is refused before the tap runs; beside a .jq it is only ignored" {
	use_tap tap-py
	lake_pipeline py tap-py true
	singer_records t <<<'{"id":1,"email":"a@example.com"}' >"$FAKE_DIR/tap-py/out"
	mkdir -p "$DATASPOC_PIPE_HOME/transforms"
	printf 'def transform(df):\n    return df.drop(columns=["email"])\n' >"$DATASPOC_PIPE_HOME/transforms/py.py"
	run -2 --separate-stderr dataspoc-pipe run py
	assert_output ""
	assert_stderr "dataspoc-pipe: run 'py' failed: $DATASPOC_PIPE_HOME/transforms/py.py: transforms here are jq programs, not Python: write $DATASPOC_PIPE_HOME/transforms/py.jq instead (drop columns: df.drop(columns=['email', 'ssn']) is del(.email, .ssn); rename: df.rename(columns={'nm': 'name'}) is .name = .nm | del(.nm); filter rows: df[df['status'] == 'active'] is select(.status == \"active\"); see docs/MIGRATING.md); nothing ran"
	[ ! -e "$FAKE_DIR/tap-py/runs" ]
	# nothing lands; the failure is logged in the bucket, with its cause
	run -0 bucket_files
	assert_output ""
	last_log py | jq -r '.status, .error' >log
	expect_file log <<-EOF
	failure
	$DATASPOC_PIPE_HOME/transforms/py.py: transforms here are jq programs, not Python: write $DATASPOC_PIPE_HOME/transforms/py.jq instead (drop columns: df.drop(columns=['email', 'ssn']) is del(.email, .ssn); rename: df.rename(columns={'nm': 'name'}) is .name = .nm | del(.nm); filter rows: df[df['status'] == 'active'] is select(.status == "active"); see docs/MIGRATING.md); nothing ran
	EOF
	run -1 --separate-stderr dataspoc-pipe validate py
	assert_line --partial "py: transform: FAIL: $DATASPOC_PIPE_HOME/transforms/py.py: transforms here are jq programs"
	echo 'del(.email)' >"$DATASPOC_PIPE_HOME/transforms/py.jq"
	run -0 --separate-stderr dataspoc-pipe run py
	[[ $stderr == *"dataspoc-pipe: warning: $DATASPOC_PIPE_HOME/transforms/py.py is ignored: the transform is $DATASPOC_PIPE_HOME/transforms/py.jq (a jq program)"* ]]
	lens py/t >rows
	expect_file rows <<<'{"id":"1","_extra":null}'
}

@test "lake: compression snappy lands Parquet Lens reads; with format: jsonl it is a config error" {
	use_tap tap-sn
	lake_pipeline sn tap-sn true "compression: snappy"
	singer_records t <<<'{"id":1,"s":"snappy snappy snappy"}' >"$FAKE_DIR/tap-sn/out"
	run -0 --separate-stderr dataspoc-pipe run sn
	lens sn/t >rows
	expect_file rows <<<'{"id":"1","s":"snappy snappy snappy","_extra":null}'
	node "$PQ/duckdb-rows.mjs" --encodings "$BUCKET_DIR/$(bucket_files)" >/dev/null
	node -e '
		const { duckdb } = await import(process.argv[1]);
		const i = await duckdb().DuckDBInstance.create(":memory:");
		const c = await i.connect();
		const r = await c.runAndReadAll(`SELECT DISTINCT compression FROM parquet_metadata(${JSON.stringify(process.argv[2]).replace(/"/g, "\x27")})`);
		console.log(r.getRowObjectsJS().map(x => x.compression).join(","));
	' --input-type=module "$PQ/deps.mjs" "$BUCKET_DIR/$(bucket_files)" >codec
	expect_file codec <<<SNAPPY
	lake_pipeline snj tap-sn true "format: jsonl" "compression: snappy"
	run -2 --separate-stderr dataspoc-pipe run snj
	assert_stderr "dataspoc-pipe: $DATASPOC_PIPE_HOME/pipelines/snj.yaml:6:16: destination.compression snappy applies only to format: parquet (JSON lines take zstd, gzip or none)"
	lake_pipeline snl tap-sn true "compression: snappy" "compression_level: 3"
	run -2 --separate-stderr dataspoc-pipe run snl
	[[ $stderr == *"destination.compression_level does not apply to compression snappy"* ]]
}

@test "lake: pipelinewise-tap-postgres's awkward values all land: a 1900 timestamptz with a seconds offset, 401-digit numerics" {
	use_tap tap-pw
	lake_pipeline pw tap-pw false
	cp "$FIXTURES/pipelinewise-tap-postgres/run-full.jsonl" "$FAKE_DIR/tap-pw/out"
	run -0 --separate-stderr dataspoc-pipe run pw
	assert_output --partial "Done! 10 records in 1 stream(s)"
	lens pw/public-items | jq -c '{id, at, big, amount}' >rows
	expect_file rows <<-EOF
	{"id":"1","at":"-2208988800000000","big":"1$(printf '0%.0s' $(seq 400))","amount":"1234567890123456789012345678.0123456789"}
	{"id":"10","at":"1735689599000000","big":"0","amount":"0.0000000000"}
	{"id":"2","at":"1705320000000000","big":"0.1","amount":"0.1000000000"}
	{"id":"3","at":"1721044800250000","big":"0.$(printf '0%.0s' $(seq 399))1","amount":"-0.0000000001"}
	{"id":"4","at":"1711846799999999","big":null,"amount":null}
	{"id":"5","at":null,"big":null,"amount":null}
	{"id":"6","at":"253402297199999000","big":"123456789012345678901234567890","amount":"9999999999999999999999999999.9999999999"}
	{"id":"7","at":"1729992600000000","big":"-1.5","amount":"-1.5000000000"}
	{"id":"8","at":"1704067200000000","big":"42","amount":"42.0000000000"}
	{"id":"9","at":"1714885505000000","big":"3.14159","amount":"2.5000000000"}
	EOF
	# numeric(38,10) is DECIMAL(38,10) (issue #27): 0E-10 and -1E-10 read back at its scale;
	# the unbounded numeric is plain decimal text: the text the tap printed, 1E-400 written out
	sed -n 's/^{"type": "RECORD", "stream": "public-items", "record": {.*, "big": \([^,]*\), "d": .*/\1/p' \
		"$FIXTURES/pipelinewise-tap-postgres/run-full.jsonl" |
		sed "s/^1E-400\$/0.$(printf '0%.0s' $(seq 399))1/" | sort >want
	[ "$(wc -l <want)" -eq 10 ]
	jq -r '.big // "null"' rows | sort >got
	diff -u want got
}

@test "scripts/lake: a text table shows a newline as \\n and a backslash as \\\\, so the two never read alike" {
	use_tap tap-bs
	lake_pipeline bs tap-bs false
	{
		echo '{"type":"SCHEMA","stream":"t","schema":{"type":"object","properties":{"id":{"type":"integer"},"s":{"type":"string"}}}}'
		singer_records t <<<'{"id":1,"s":"a\nb"}
{"id":2,"s":"a\\nb"}
{"id":3,"s":"c:\\\\d"}'
	} >"$FAKE_DIR/tap-bs/out"
	run -0 --separate-stderr dataspoc-pipe run bs
	run -0 --separate-stderr "$BATS_TEST_DIRNAME/../scripts/lake" "$(bucket_url)" --sql 'SELECT id, s FROM "bs/t" ORDER BY id'
	printf '%s\n' "$output" >got
	cat >want <<-'WANT'
	id  s
	--  -------
	 1  a\nb
	 2  a\\nb
	 3  c:\\\\d
	WANT
	diff -u want got
}
