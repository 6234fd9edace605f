#!/usr/bin/env bats
# Exact decimals (issue #27, item 7): a number whose schema says multipleOf
# 10^-s, with the bounds taps print for numeric(p,s)/decimal(p,s), lands as
# Parquet DECIMAL(p,s): sums and equality exact in DuckDB, the same text in
# every file.  A value that does not fit widens the column to text.

load helpers/common
use_local_lake

FX=$BATS_TEST_DIRNAME/fixtures

# duck SQL: the rows of SQL over the bucket's Parquet files, JSON lines, values as text.
duck() {
	node -e '
		const { duckdb } = await import(process.argv[1]);
		const i = await duckdb().DuckDBInstance.create(":memory:", { threads: "1" });
		const c = await i.connect();
		const r = await c.runAndReadAll(process.argv[2]);
		for (const o of r.getRowObjectsJS())
			console.log(JSON.stringify(o, (k, v) => v === null ? null : typeof v === "object" && !Array.isArray(v) && k !== "" ? String(v) : typeof v === "bigint" ? String(v) : v));
	' --input-type=module "$PQ/deps.mjs" "${1//@/$BUCKET_DIR}"
}

@test "decimal: tap-postgres's numeric(12,2) lands as DECIMAL(12,2): the sum is exact, the same text in every file of every run" {
	use_tap tap-postgres-dec
	lake_pipeline dec tap-postgres-dec true
	cp "$FX/tap-postgres-log-based/run-log1.jsonl" "$FAKE_DIR/tap-postgres-dec/out"
	run -0 --separate-stderr dataspoc-pipe run dec
	cp "$FX/tap-postgres-log-based/run-log2.jsonl" "$FAKE_DIR/tap-postgres-dec/out"
	run -0 --separate-stderr dataspoc-pipe run dec
	duck "SELECT DISTINCT typeof(amount) AS t FROM read_parquet('@/**/*.parquet')" >types
	expect_file types <<<'{"t":"DECIMAL(12,2)"}'
	duck "SELECT sum(amount)::VARCHAR AS s FROM read_parquet('@/**/*.parquet')" >sum
	# 1.25 .. 12.50 (run 1), 7.77 3.76 5.01 (run 2)
	expect_file sum <<<'{"s":"85.29"}'
	duck "SELECT amount::VARCHAR AS a FROM read_parquet('@/**/*.parquet') WHERE id = 2" >two
	expect_file two <<<'{"a":"2.50"}'
	manifest_table postgres-dec/customers | jq -c '.columns[] | select(.name == "amount") | .parquet_type' >m
	expect_file m <<<'"DECIMAL(12,2)"'
}

@test "decimal: pipelinewise's numeric(38,10) is exact as DECIMAL(38,10); unbounded numeric is STRING; values that do not fit widen as before" {
	use_tap tap-pwd
	lake_pipeline pwd tap-pwd false
	cp "$FX/pipelinewise-tap-postgres/run-full.jsonl" "$FAKE_DIR/tap-pwd/out"
	run -0 --separate-stderr dataspoc-pipe run pwd
	duck "SELECT id, amount::VARCHAR AS a, typeof(amount) AS t, typeof(big) AS b FROM read_parquet('@/**/*.parquet') WHERE id IN (1, 3, 6, 10) ORDER BY id" >rows
	expect_file rows <<-'EOF'
	{"id":"1","a":"1234567890123456789012345678.0123456789","t":"DECIMAL(38,10)","b":"VARCHAR"}
	{"id":"3","a":"-0.0000000001","t":"DECIMAL(38,10)","b":"VARCHAR"}
	{"id":"6","a":"9999999999999999999999999999.9999999999","t":"DECIMAL(38,10)","b":"VARCHAR"}
	{"id":"10","a":"0.0000000000","t":"DECIMAL(38,10)","b":"VARCHAR"}
	EOF
	# LOG_BASED numbers come through a double: 0.1000000000000000055511151231257827021181583404541015625
	# has more places than the column: it widens to text, exactly, with a warning
	use_tap tap-pwl
	lake_pipeline pwl tap-pwl true
	cp "$FX/pipelinewise-tap-postgres/run-log2.jsonl" "$FAKE_DIR/tap-pwl/out"
	run -0 --separate-stderr dataspoc-pipe run pwl
	[[ $stderr == *"field 'amount' (DECIMAL): 0.1000000000000000055511151231257827021181583404541015625 does not fit the column's DECIMAL: the column is STRING"* ]]
	duck "SELECT amount FROM read_parquet('@/raw/pwl/**/*.parquet') WHERE id = 11" >a
	expect_file a <<<'{"amount":"0.1000000000000000055511151231257827021181583404541015625"}'
}

@test "decimal: tap-mysql's decimal (multipleOf 0.0001, no bounds) lands as DECIMAL(38,4)" {
	use_tap tap-mysql-d
	lake_pipeline my tap-mysql-d true
	cp "$FX/tap-mysql/run1.jsonl" "$FAKE_DIR/tap-mysql-d/out"
	run -0 --separate-stderr dataspoc-pipe run my
	duck "SELECT DISTINCT typeof(price) AS t FROM read_parquet('@/**/*.parquet')" >t
	expect_file t <<<'{"t":"DECIMAL(38,4)"}'
	duck "SELECT price::VARCHAR AS p FROM read_parquet('@/**/*.parquet') WHERE price IN (5, 10.5, -0.0001) ORDER BY price" >p
	expect_file p <<-'EOF'
	{"p":"-0.0001"}
	{"p":"5.0000"}
	{"p":"10.5000"}
	EOF
}

@test "decimal: an upsert table keeps its DECIMAL through the merge" {
	use_tap tap-postgres-du
	lake_pipeline du tap-postgres-du true "load_method: upsert"
	for r in 1 2 3; do
		cp "$FX/tap-postgres-log-based/run-log$r.jsonl" "$FAKE_DIR/tap-postgres-du/out"
		run -0 --separate-stderr dataspoc-pipe run du
	done
	duck "SELECT DISTINCT typeof(amount) AS t FROM read_parquet('@/**/*.parquet')" >types
	expect_file types <<<'{"t":"DECIMAL(12,2)"}'
	# ids 1 2 7..10 from run 1 (1.25 x 37), 3 4 updated (3.76, 5.01), 11 new (7.77), 5 6 deleted
	duck "SELECT sum(amount)::VARCHAR AS s FROM read_parquet('@/**/*.parquet')" >sum
	expect_file sum <<<'{"s":"62.79"}'
}

@test "decimal: an unconstrained numeric reads back as the same text from every file, whatever else each file holds" {
	use_tap tap-pwu
	lake_pipeline pwu tap-pwu true
	# pipelinewise-tap-postgres's schema for numeric (tap-postgres's too): multipleOf 1e-38, maximum 1e62
	local schema='{"type": "SCHEMA", "stream": "public-n", "schema": {"type": "object", "properties": {"id": {"type": ["integer"]}, "big": {"type": ["null", "number"], "exclusiveMaximum": true, "maximum": 100000000000000000000000000000000000000000000000000000000000000, "multipleOf": 1e-38, "exclusiveMinimum": true, "minimum": -100000000000000000000000000000000000000000000000000000000000000}}}, "key_properties": ["id"], "bookmark_properties": []}'
	# run 1 as a full sync prints it (Decimal's text), first a value no double holds;
	# run 2 as LOG_BASED prints it (through a double), every value a double holds
	{
		echo "$schema"
		echo '{"type": "RECORD", "stream": "public-n", "record": {"id": 5, "big": 0.1000000000000000055511151231257827021181583404541015625}}'
		echo '{"type": "RECORD", "stream": "public-n", "record": {"id": 1, "big": 6000000042.00000000}}'
		echo '{"type": "RECORD", "stream": "public-n", "record": {"id": 2, "big": 0E-8}}'
		echo '{"type": "RECORD", "stream": "public-n", "record": {"id": 3, "big": -1.50}}'
		echo '{"type": "RECORD", "stream": "public-n", "record": {"id": 4, "big": 1E-20}}'
	} >"$FAKE_DIR/tap-pwu/out"
	run -0 --separate-stderr dataspoc-pipe run pwu
	{
		echo "$schema"
		echo '{"type": "RECORD", "stream": "public-n", "record": {"id": 1, "big": 6000000042.0}}'
		echo '{"type": "RECORD", "stream": "public-n", "record": {"id": 2, "big": 0.0}}'
		echo '{"type": "RECORD", "stream": "public-n", "record": {"id": 3, "big": -1.5}}'
		echo '{"type": "RECORD", "stream": "public-n", "record": {"id": 4, "big": 1e-20}}'
		echo '{"type": "RECORD", "stream": "public-n", "record": {"id": 5, "big": 0.1}}'
	} >"$FAKE_DIR/tap-pwu/out"
	run -0 --separate-stderr dataspoc-pipe run pwu
	[[ $stderr != *warning* ]]
	duck "SELECT id, big, typeof(big) AS t FROM read_parquet('@/raw/**/*.parquet', hive_partitioning=true, union_by_name=true) ORDER BY id, big" >rows
	expect_file rows <<-'EOF'
	{"id":"1","big":"6000000042","t":"VARCHAR"}
	{"id":"1","big":"6000000042","t":"VARCHAR"}
	{"id":"2","big":"0","t":"VARCHAR"}
	{"id":"2","big":"0","t":"VARCHAR"}
	{"id":"3","big":"-1.5","t":"VARCHAR"}
	{"id":"3","big":"-1.5","t":"VARCHAR"}
	{"id":"4","big":"0.00000000000000000001","t":"VARCHAR"}
	{"id":"4","big":"0.00000000000000000001","t":"VARCHAR"}
	{"id":"5","big":"0.1","t":"VARCHAR"}
	{"id":"5","big":"0.1000000000000000055511151231257827021181583404541015625","t":"VARCHAR"}
	EOF
	[ "$(bucket_keys raw/ | grep -c '\.parquet$')" = 2 ]
	manifest_table pwu/public-n | jq -c '.columns[] | select(.name == "big") | .parquet_type' >m
	expect_file m <<<'"STRING"'
}

@test "decimal: an unconstrained numeric's text is plain decimal, whatever the tap's exponent; an upsert merge keeps it" {
	use_tap tap-pwx
	lake_pipeline pwx tap-pwx true "load_method: upsert"
	local i=0
	local schema='{"type": "SCHEMA", "stream": "x", "schema": {"type": "object", "properties": {"id": {"type": ["integer"]}, "n": {"type": ["null", "number"], "exclusiveMaximum": true, "maximum": 100000000000000000000000000000000000000000000000000000000000000, "multipleOf": 1e-38, "exclusiveMinimum": true, "minimum": -100000000000000000000000000000000000000000000000000000000000000}}}, "key_properties": ["id"]}'
	{
		echo "$schema"
		for v in 6.000000042e9 -0.0 12.3400e2 -1.5e-3 1E-400 1e131072 1e131073 -12.5e-131080 100 null 0.1; do
			echo "{\"type\": \"RECORD\", \"stream\": \"x\", \"record\": {\"id\": $((++i)), \"n\": $v}}"
		done
	} >"$FAKE_DIR/tap-pwx/out"
	run -0 --separate-stderr dataspoc-pipe run pwx
	[[ $stderr != *warning* ]]
	# run 2 updates id 11 only: the merge copies the other rows into its file
	{ echo "$schema"; echo '{"type": "RECORD", "stream": "x", "record": {"id": 11, "n": 0.10}}'; } >"$FAKE_DIR/tap-pwx/out"
	run -0 --separate-stderr dataspoc-pipe run pwx
	duck "SELECT id, CASE WHEN length(n) > 40 THEN left(n, 3) || '..' || length(n) || '..' || right(n, 3) ELSE n END AS n, typeof(n) AS t FROM read_parquet('@/raw/**/*.parquet', hive_partitioning=true, union_by_name=true) ORDER BY id" >rows
	expect_file rows <<-'EOF'
	{"id":"1","n":"6000000042","t":"VARCHAR"}
	{"id":"2","n":"0","t":"VARCHAR"}
	{"id":"3","n":"1234","t":"VARCHAR"}
	{"id":"4","n":"-0.0015","t":"VARCHAR"}
	{"id":"5","n":"0.0..402..001","t":"VARCHAR"}
	{"id":"6","n":"100..131073..000","t":"VARCHAR"}
	{"id":"7","n":"1e+131073","t":"VARCHAR"}
	{"id":"8","n":"-1.25e-131079","t":"VARCHAR"}
	{"id":"9","n":"100","t":"VARCHAR"}
	{"id":"10","n":null,"t":"VARCHAR"}
	{"id":"11","n":"0.1","t":"VARCHAR"}
	EOF
}
