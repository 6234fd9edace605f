#!/usr/bin/env bats
# destination.format: parquet — what lands is read back by two independent
# readers, DuckDB (@duckdb/node-api) and hyparquet, which must agree, and is
# compared value by value with the records the tap printed.

load helpers/common
load helpers/parquet

setup() {
	pipe_setup
}

teardown() {
	pipe_teardown
}

# The SCHEMA of stream t: one column of each type.
T_SCHEMA='{"type":"SCHEMA","stream":"t","schema":{"type":"object","properties":{"id":{"type":"integer"},"n":{"type":["null","number"]},"b":{"type":["boolean","null"]},"s":{"type":["null","string"]},"ts":{"type":["null","string"],"format":"date-time"},"d":{"type":["null","string"],"format":"date"},"o":{"type":["null","object"]},"a":{"type":["null","array"]},"any":{}}},"key_properties":["id"]}'

@test "every type, nulls and absent members, read back by DuckDB and hyparquet" {
	pq_pipeline types
	{
		echo "$T_SCHEMA"
		singer_records t <<-'EOF'
		{"id":1,"n":1.5,"b":true,"s":"plain","ts":"2024-01-01T08:00:00Z","d":"2024-03-01","o":{"k":"v"},"a":[1,2],"any":"text"}
		{"id":2,"n":null,"b":null,"s":null,"ts":null,"d":null,"o":null,"a":null,"any":null}
		{"id":3}
		{"id":4,"n":-0.0001,"b":false,"s":"","ts":"1969-12-31T23:59:59.999999Z","d":"1969-12-31","o":{},"a":[],"any":12345678901234567891}
		{"id":5,"n":1e300,"any":{"x":[true]},"d":"0001-01-01","ts":"0001-01-01T00:00:00Z"}
		{"id":6,"n":1.7976931348623157e308,"any":[null],"d":"9999-12-31","ts":"9999-12-31T23:59:59.999999Z"}
		EOF
	} >"$FAKE_DIR/tap-types/out"
	run -0 --separate-stderr dataspoc-pipe run types
	run -0 bucket_files
	assert_output --regexp '^raw/types/t/dt=[0-9-]{10}/t_[0-9]{8}T[0-9]{6}Z-[0-9]{3}[0-9a-f]{6}_0000\.parquet$'
	pq_table_rows raw/types/t >got
	expect_file got <<-'EOF'
	{"id":"1","n":1.5,"b":true,"s":"plain","ts":"1704096000000000","d":19783,"o":"{\"k\":\"v\"}","a":"[1,2]","any":"\"text\"","_extra":null}
	{"id":"2","n":null,"b":null,"s":null,"ts":null,"d":null,"o":null,"a":null,"any":null,"_extra":null}
	{"id":"3","n":null,"b":null,"s":null,"ts":null,"d":null,"o":null,"a":null,"any":null,"_extra":null}
	{"id":"4","n":-0.0001,"b":false,"s":"","ts":"-1","d":-1,"o":"{}","a":"[]","any":"12345678901234567891","_extra":null}
	{"id":"5","n":1e+300,"b":null,"s":null,"ts":"-62135596800000000","d":-719162,"o":null,"a":null,"any":"{\"x\":[true]}","_extra":null}
	{"id":"6","n":1.7976931348623157e+308,"b":null,"s":null,"ts":"253402300799999999","d":2932896,"o":null,"a":null,"any":"[null]","_extra":null}
	EOF
	pq_schema "$(pq_files raw/types/t)" >schema
	expect_file schema <<-'EOF'
	id BIGINT
	n DOUBLE
	b BOOLEAN
	s VARCHAR
	ts TIMESTAMP WITH TIME ZONE
	d DATE
	o JSON
	a JSON
	any JSON
	_extra JSON
	row_groups 1 rows 6
	id INT64 OPTIONAL
	n DOUBLE OPTIONAL
	b BOOLEAN OPTIONAL
	s BYTE_ARRAY UTF8 OPTIONAL
	ts INT64 TIMESTAMP_MICROS OPTIONAL
	d INT32 DATE OPTIONAL
	o BYTE_ARRAY JSON OPTIONAL
	a BYTE_ARRAY JSON OPTIONAL
	any BYTE_ARRAY JSON OPTIONAL
	_extra BYTE_ARRAY JSON OPTIONAL
	row_groups 1 rows 6
	EOF
}

@test "unicode: escapes, surrogate pairs, raw UTF-8 and control characters in strings and names" {
	pq_pipeline uni
	{
		echo '{"type":"SCHEMA","stream":"u","schema":{"properties":{"s":{"type":"string"},"caf\u00e9":{"type":"string"},"日本":{"type":"integer"}}}}'
		singer_records u <<-'EOF'
		{"s":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \t\n","café":"é","日本":1}
		{"s":"日本語 é 😀 \u65e5","caf\u00e9":"\u00e9","\u65e5\u672c":2}
		{"s":"\u001fx"}
		EOF
	} >"$FAKE_DIR/tap-uni/out"
	run -0 --separate-stderr dataspoc-pipe run uni
	pq_table_rows raw/uni/u >got
	expect_file got <<-'EOF'
	{"s":"café 😀 \"q\" \\ / \t\n","café":"é","日本":"1","_extra":null}
	{"s":"日本語 é 😀 日","café":"é","日本":"2","_extra":null}
	{"s":"\u001fx","café":null,"日本":null,"_extra":null}
	EOF
}

@test "integers at the int64 limits stay INT64; beyond them the column becomes exact, in a new file" {
	pq_pipeline ints
	{
		echo '{"type":"SCHEMA","stream":"i","schema":{"properties":{"id":{"type":"integer"},"v":{"type":["null","integer"]}}}}'
		singer_records i <<-'EOF'
		{"id":1,"v":-9223372036854775808}
		{"id":2,"v":9223372036854775807}
		{"id":3,"v":-0}
		{"id":4,"v":9223372036854775808}
		{"id":5,"v":-99999999999999999999999999999999999999}
		{"id":6,"v":99999999999999999999999999999999999999}
		{"id":7,"v":1}
		{"id":8,"v":-100000000000000000000000000000000000000}
		{"id":9,"v":null}
		EOF
	} >"$FAKE_DIR/tap-ints/out"
	run -0 --separate-stderr dataspoc-pipe run ints
	run -0 bucket_files
	assert_line --index 0 --regexp '_0000\.parquet$'
	assert_line --index 1 --regexp '_0001\.parquet$'
	assert_line --index 2 --regexp '_0002\.parquet$'
	local files
	files=($(pq_files raw/ints/i))
	[ "${#files[@]}" -eq 3 ]
	pq_rows "${files[0]}" >got0
	expect_file got0 <<-'EOF'
	{"id":"1","v":"-9223372036854775808","_extra":null}
	{"id":"2","v":"9223372036854775807","_extra":null}
	{"id":"3","v":"0","_extra":null}
	EOF
	pq_rows "${files[1]}" >got1
	expect_file got1 <<-'EOF'
	{"id":"4","v":"9223372036854775808","_extra":null}
	{"id":"5","v":"-99999999999999999999999999999999999999","_extra":null}
	{"id":"6","v":"99999999999999999999999999999999999999","_extra":null}
	{"id":"7","v":"1","_extra":null}
	EOF
	pq_rows "${files[2]}" >got2
	expect_file got2 <<-'EOF'
	{"id":"8","v":"-100000000000000000000000000000000000000","_extra":null}
	{"id":"9","v":null,"_extra":null}
	EOF
	node "$PQ/hyparquet-rows.mjs" --schema "${files[1]}" >s1
	node "$PQ/hyparquet-rows.mjs" --schema "${files[2]}" >s2
	expect_file s1 <<-'EOF'
	id INT64 OPTIONAL
	v FIXED_LEN_BYTE_ARRAY(16) DECIMAL(38,0) OPTIONAL
	_extra BYTE_ARRAY JSON OPTIONAL
	row_groups 1 rows 4
	EOF
	expect_file s2 <<-'EOF'
	id INT64 OPTIONAL
	v BYTE_ARRAY UTF8 OPTIONAL
	_extra BYTE_ARRAY JSON OPTIONAL
	row_groups 1 rows 2
	EOF
	# The manifest has the type of the last file.
	bucket_cat .dataspoc/manifest.json | jq -c '.tables["ints/i"] | [.format, [.columns[] | [.name, .parquet_type]]]' >m
	expect_file m <<-'EOF'
	["parquet",[["id","INT64"],["v","STRING"],["_extra","JSON"]]]
	EOF
}

@test "date-times with offsets are UTC microseconds" {
	pq_pipeline times
	{
		echo '{"type":"SCHEMA","stream":"t","schema":{"properties":{"at":{"type":"string","format":"date-time"}}}}'
		singer_records t <<-'EOF'
		{"at":"2024-01-01T10:00:00+02:00"}
		{"at":"2024-01-01T08:00:00Z"}
		{"at":"2023-12-31T23:30:00-08:30"}
		{"at":"2024-01-01t08:00:00.5z"}
		{"at":"2024-01-01 08:00:00.000001+00:00"}
		{"at":"2024-06-30T23:59:59.123456+05:45"}
		{"at":"2024-02-29T00:00:00.123456000-00:00"}
		EOF
	} >"$FAKE_DIR/tap-times/out"
	run -0 --separate-stderr dataspoc-pipe run times
	pq_table_rows raw/times/t >got
	expect_file got <<-'EOF'
	{"at":"1704096000000000","_extra":null}
	{"at":"1704096000000000","_extra":null}
	{"at":"1704096000000000","_extra":null}
	{"at":"1704096000500000","_extra":null}
	{"at":"1704096000000001","_extra":null}
	{"at":"1719771299123456","_extra":null}
	{"at":"1709164800123456","_extra":null}
	EOF
}

@test "a leap second (second 60) is kept exactly: the column becomes STRING, in a new file, with a warning" {
	pq_pipeline leap
	{
		echo '{"type":"SCHEMA","stream":"t","schema":{"properties":{"id":{"type":"integer"},"at":{"type":"string","format":"date-time"}}}}'
		singer_records t <<-'EOF'
		{"id":1,"at":"2016-12-31T23:59:59Z"}
		{"id":2,"at":"2016-12-31T23:59:60Z"}
		{"id":3,"at":"2017-01-01T00:00:00Z"}
		{"id":4,"at":"2017-01-01T08:59:60.5+09:00"}
		EOF
	} >"$FAKE_DIR/tap-leap/out"
	run -0 sh -c 'dataspoc-pipe run leap 2>err'
	printf '%s\n' "dataspoc-pipe: warning: <stdin>:3: record 2 of stream 't': field 'at' (TIMESTAMP(MICROS,UTC)): \"2016-12-31T23:59:60Z\" is a leap second (second 60), which a TIMESTAMP cannot hold: the column is STRING from this record on (in a new file; earlier files keep TIMESTAMP(MICROS,UTC))" \
		"  t: 4 records..." >want.err
	diff -u want.err err
	local files
	files=($(pq_files raw/leap/t))
	[ "${#files[@]}" -eq 2 ]
	pq_rows "${files[0]}" >got0
	expect_file got0 <<<'{"id":"1","at":"1483228799000000","_extra":null}'
	pq_rows "${files[1]}" >got1
	expect_file got1 <<-'EOF'
	{"id":"2","at":"2016-12-31T23:59:60Z","_extra":null}
	{"id":"3","at":"2017-01-01T00:00:00Z","_extra":null}
	{"id":"4","at":"2017-01-01T08:59:60.5+09:00","_extra":null}
	EOF
	bucket_cat .dataspoc/manifest.json | jq -c '[.tables["leap/t"].columns[] | [.name, .parquet_type]]' >m
	expect_file m <<<'[["id","INT64"],["at","STRING"],["_extra","JSON"]]'
	# schema_mismatch: fail refuses it, and says so; nothing lands
	rm -rf "$BUCKET_DIR"
	pq_pipeline leap "schema_mismatch: fail"
	run -1 --separate-stderr dataspoc-pipe run leap
	assert_stderr "dataspoc-pipe: run 'leap' failed: the tap's output, line 3: record 2 of stream 't' does not fit its Parquet columns: field 'at' (TIMESTAMP(MICROS,UTC)): \"2016-12-31T23:59:60Z\" is a leap second (second 60), which a TIMESTAMP cannot hold (schema_mismatch: fail; widen, the default, lands it)"
	run -0 bucket_files
	assert_output ""
}

@test "nested values and undeclared members keep their bytes" {
	pq_pipeline nest
	{
		echo '{"type":"SCHEMA","stream":"n","schema":{"properties":{"id":{"type":"integer"},"doc":{"type":"object"},"list":{"type":"array"}}}}'
		singer_records n <<-'EOF'
		{"id":1,"doc":{ "a" : [ 1, 2.50, {"b":null} ], "big":12345678901234567891 },"list":[{"x":"\u00e9"}]}
		{"list":[],"id":2,"new":{"k":1},"id":99,"more":"\u00e9"}
		EOF
	} >"$FAKE_DIR/tap-nest/out"
	run -0 --separate-stderr dataspoc-pipe run nest
	pq_table_rows raw/nest/n >got
	expect_file got <<-'EOF'
	{"id":"1","doc":"{ \"a\" : [ 1, 2.50, {\"b\":null} ], \"big\":12345678901234567891 }","list":"[{\"x\":\"\\u00e9\"}]","_extra":null}
	{"id":"2","doc":null,"list":"[]","_extra":"{\"new\":{\"k\":1},\"id\":99,\"more\":\"\\u00e9\"}"}
	EOF
}

@test "a stream with a SCHEMA and no records lands no file and is not in the manifest until its first file" {
	pq_pipeline empty
	{
		echo '{"type":"SCHEMA","stream":"none","schema":{"properties":{"id":{"type":"integer"}}}}'
		echo '{"type":"SCHEMA","stream":"one","schema":{"properties":{"id":{"type":"integer"}}}}'
		echo '{"type":"RECORD","stream":"one","record":{"id":1}}'
	} >"$FAKE_DIR/tap-empty/out"
	run -0 --separate-stderr dataspoc-pipe run empty
	run -0 bucket_files
	assert_output --regexp '^raw/empty/one/dt=[0-9-]{10}/one_[^/]*_0000\.parquet$'
	bucket_cat .dataspoc/manifest.json | jq -c '.tables | to_entries[] | [.key, .value.format, .value.stats.total_rows, [.value.columns[].parquet_type]]' >m
	expect_file m <<-'EOF'
	["empty/one","parquet",1,["INT64","JSON"]]
	EOF
	# And a tap that prints nothing at all.
	: >"$FAKE_DIR/tap-empty/out"
	run -0 --separate-stderr dataspoc-pipe run empty
	# its first record: the table, its file and its columns
	{
		echo '{"type":"SCHEMA","stream":"none","schema":{"properties":{"id":{"type":"integer"}}}}'
		echo '{"type":"RECORD","stream":"none","record":{"id":7}}'
	} >"$FAKE_DIR/tap-empty/out"
	run -0 --separate-stderr dataspoc-pipe run empty
	bucket_cat .dataspoc/manifest.json | jq -c '.tables | to_entries[] | [.key, .value.format, .value.stats.total_rows, [.value.columns[].parquet_type]]' | LC_ALL=C sort >m
	expect_file m <<-'EOF'
	["empty/none","parquet",1,["INT64","JSON"]]
	["empty/one","parquet",1,["INT64","JSON"]]
	EOF
	# a table the manifest has keeps its entry through a run of no record
	echo '{"type":"SCHEMA","stream":"none","schema":{"properties":{"id":{"type":"integer"}}}}' >"$FAKE_DIR/tap-empty/out"
	run -0 --separate-stderr dataspoc-pipe run empty
	bucket_cat .dataspoc/manifest.json | jq -c '.tables | keys' >m
	expect_file m <<-'EOF'
	["empty/none","empty/one"]
	EOF
}

@test "a new SCHEMA mid-run closes the file and starts one with the new columns" {
	pq_pipeline change
	{
		echo '{"type":"SCHEMA","stream":"c","schema":{"properties":{"id":{"type":"integer"},"name":{"type":"string"}}}}'
		echo '{"type":"RECORD","stream":"c","record":{"id":1,"name":"a"}}'
		echo '{"type":"SCHEMA","stream":"c","schema":{"properties":{"id":{"type":"integer"},"name":{"type":"string"}}}}'
		echo '{"type":"RECORD","stream":"c","record":{"id":2,"name":"b"}}'
		echo '{"type":"SCHEMA","stream":"c","schema":{"properties":{"id":{"type":"string"},"score":{"type":"number"}}}}'
		echo '{"type":"RECORD","stream":"c","record":{"id":"x3","score":0.5,"name":"c"}}'
	} >"$FAKE_DIR/tap-change/out"
	run -0 --separate-stderr dataspoc-pipe run change
	local files
	files=($(pq_files raw/change/c))
	[ "${#files[@]}" -eq 2 ]	# the same SCHEMA again changes nothing
	pq_rows "${files[0]}" >got0
	pq_rows "${files[1]}" >got1
	expect_file got0 <<-'EOF'
	{"id":"1","name":"a","_extra":null}
	{"id":"2","name":"b","_extra":null}
	EOF
	expect_file got1 <<-'EOF'
	{"id":"x3","score":0.5,"_extra":"{\"name\":\"c\"}"}
	EOF
}

@test "several row groups, bounded by rows and by bytes; 20,000 random records compared one by one" {
	node "$PQ/gen.mjs" 20000 7 expected.jsonl >stream.jsonl
	grep -v DATASPOC_TAP_END stream.jsonl >"$BATS_TEST_TMPDIR/out"
	pq_pipeline rows "row_group_rows: 3000"
	cp out "$FAKE_DIR/tap-rows/out"
	run -0 --separate-stderr dataspoc-pipe run rows
	pq_table_rows raw/rows/r >got
	diff -u expected.jsonl got
	run -0 node "$PQ/duckdb-rows.mjs" --schema "$(pq_files raw/rows/r)"
	assert_line "row_groups 7 rows 3000,3000,3000,3000,3000,3000,2000"

	pq_pipeline bytes "row_group_size: 64KiB"
	cp out "$FAKE_DIR/tap-bytes/out"
	run -0 --separate-stderr dataspoc-pipe run bytes
	pq_table_rows raw/bytes/r >got
	diff -u expected.jsonl got
	run -0 node "$PQ/hyparquet-rows.mjs" --schema "$(pq_files raw/bytes/r)"
	assert_line --regexp '^row_groups [1-9][0-9] rows '
}

@test "string columns are dictionary-encoded, and fall back to PLAIN past 1 MiB of distinct values" {
	node -e '
	const out = [], exp = [];
	out.push(JSON.stringify({type: "SCHEMA", stream: "d", schema: {properties: {u: {type: "string"}, c: {type: ["null", "string"]}}}}));
	for (let i = 0; i < 40000; i++) {
		const u = "unique-" + i + "-" + "x".repeat(i % 37), c = i % 5 === 0 ? null : ["red", "green", "blue"][i % 3];
		out.push(JSON.stringify({type: "RECORD", stream: "d", record: {u, c}}));
		exp.push(JSON.stringify({u, c, _extra: null}));
	}
	require("fs").writeFileSync("out", out.join("\n") + "\n");
	require("fs").writeFileSync("expected.jsonl", exp.join("\n") + "\n");'
	pq_pipeline dict "row_group_rows: 30000"
	cp out "$FAKE_DIR/tap-dict/out"
	run -0 --separate-stderr dataspoc-pipe run dict
	pq_table_rows raw/dict/d >got
	diff -u expected.jsonl got
	node "$PQ/duckdb-rows.mjs" --encodings "$(pq_files raw/dict/d)" >enc
	expect_file enc <<-'EOF'
	0 u PLAIN, RLE, RLE_DICTIONARY
	0 c PLAIN, RLE, RLE_DICTIONARY
	0 _extra PLAIN, RLE
	1 u PLAIN, RLE, RLE_DICTIONARY
	1 c PLAIN, RLE, RLE_DICTIONARY
	1 _extra PLAIN, RLE
	EOF
}

@test "gzip and uncompressed pages" {
	node "$PQ/gen.mjs" 500 11 expected.jsonl | grep -v DATASPOC_TAP_END >out
	for c in gzip none; do
		pq_pipeline "c$c" "compression: $c"
		cp out "$FAKE_DIR/tap-c$c/out"
		run -0 --separate-stderr dataspoc-pipe run "c$c"
		pq_table_rows "raw/c$c/r" >got
		diff -u expected.jsonl got
	done
	run -0 bucket_files
	assert_output --partial '.parquet'
	refute_output --partial '.gz'
	refute_output --partial '.zst'
}

@test "files roll over at max_file_size: every record once, in order" {
	node "$PQ/gen.mjs" 20000 3 expected.jsonl | grep -v DATASPOC_TAP_END >"$BATS_TEST_TMPDIR/out"
	pq_pipeline roll "max_file_size: 64KiB" "row_group_rows: 500"
	cp out "$FAKE_DIR/tap-roll/out"
	run -0 --separate-stderr dataspoc-pipe run roll
	run -0 bucket_files
	[ "${#lines[@]}" -gt 3 ]
	pq_table_rows raw/roll/r >got
	diff -u expected.jsonl got
}

@test "the plan and the manifest say parquet and give each column's Parquet type" {
	pq_pipeline plan
	{
		echo "$T_SCHEMA"
		echo '{"type":"RECORD","stream":"t","record":{"id":1}}'
		echo '{"type":"DATASPOC_TAP_END","status":"success"}'
	} >dump.jsonl
	run -0 --separate-stderr pipe-sink -q -r 20260102T030405Z-abc123 plan <dump.jsonl
	printf '%s\n' "$output" >plan.jsonl
	jq -c 'select(.type == "run") | .format' plan.jsonl >f
	jq -c 'select(.type == "file") | .final' plan.jsonl >>f
	jq -c 'select(.type == "stream") | .parquet_types' plan.jsonl >>f
	expect_file f <<-'EOF'
	"parquet"
	"raw/plan/t/dt=2026-01-02/t_20260102T030405Z-abc123_0000.parquet"
	{"id":"INT64","n":"DOUBLE","b":"BOOLEAN","s":"STRING","ts":"TIMESTAMP(MICROS,UTC)","d":"DATE","o":"JSON","a":"JSON","any":"JSON","_extra":"JSON"}
	EOF
	run -0 --separate-stderr pipe-commit plan <plan.jsonl
	bucket_cat .dataspoc/manifest.json | jq -c '.tables["plan/t"] | .format, .columns[]' >m
	expect_file m <<-'EOF'
	"parquet"
	{"name":"id","type":"integer","nullable":false,"parquet_type":"INT64"}
	{"name":"n","type":"number","nullable":true,"parquet_type":"DOUBLE"}
	{"name":"b","type":"boolean","nullable":true,"parquet_type":"BOOLEAN"}
	{"name":"s","type":"string","nullable":true,"parquet_type":"STRING"}
	{"name":"ts","type":"string","nullable":true,"format":"date-time","parquet_type":"TIMESTAMP(MICROS,UTC)"}
	{"name":"d","type":"string","nullable":true,"format":"date","parquet_type":"DATE"}
	{"name":"o","type":"object","nullable":true,"parquet_type":"JSON"}
	{"name":"a","type":"array","nullable":true,"parquet_type":"JSON"}
	{"name":"any","type":"any","nullable":false,"parquet_type":"JSON"}
	{"name":"_extra","type":"object","nullable":true,"parquet_type":"JSON"}
	EOF
}

@test "schema_mismatch: fail: a value that does not fit its column fails the run: stream, record, field, value; nothing lands" {
	pq_pipeline bad "schema_mismatch: fail"
	{
		echo "$T_SCHEMA"
		echo '{"type":"RECORD","stream":"t","record":{"id":1}}'
		echo '{"type":"STATE","value":{"at":1}}'
	} >"$FAKE_DIR/tap-bad/out"
	run -0 --separate-stderr dataspoc-pipe run bad
	bucket_snapshot | grep -v ' \.dataspoc/logs/' >before
	local line
	for line in \
		'{"id":2,"n":"1.5"}|record 2 of stream '\''t'\'' does not fit its Parquet columns: field '\''n'\'' (DOUBLE): "1.5" is not a number' \
		'{"id":1.0}|field '\''id'\'' (INT64): 1.0 is not an integer' \
		'{"id":3,"b":{"x":1}}|field '\''b'\'' (BOOLEAN): {"x":1} is not a boolean' \
		'{"id":3,"ts":"2024-01-01T00:00:00"}|field '\''ts'\'' (TIMESTAMP(MICROS,UTC)): "2024-01-01T00:00:00" is not an RFC 3339 date-time with a time zone offset, to the microsecond at most' \
		'{"id":3,"ts":"2024-01-01T00:00:00.0000001Z"}|"2024-01-01T00:00:00.0000001Z" is not an RFC 3339' \
		'{"id":3,"d":"2024-02-30"}|field '\''d'\'' (DATE): "2024-02-30" is not a date (YYYY-MM-DD)' \
		'{"id":3,"o":[1]}|field '\''o'\'' (JSON): [1] is not an object' \
		'{"id":3,"s":5}|field '\''s'\'' (STRING): 5 is not a string' \
		'{"id":3,"n":1e999}|field '\''n'\'' (DOUBLE): 1e999 is beyond the range of a DOUBLE'; do
		{
			echo "$T_SCHEMA"
			echo '{"type":"RECORD","stream":"t","record":{"id":1}}'
			echo "{\"type\":\"RECORD\",\"stream\":\"t\",\"record\":${line%%|*}}"
			echo '{"type":"STATE","value":{"at":2}}'
		} >"$FAKE_DIR/tap-bad/out"
		run -1 --separate-stderr dataspoc-pipe run bad
		assert_line --index 0 "Running: bad"
		refute_output --partial Done
		[[ $stderr == *"dataspoc-pipe: run 'bad' failed: the tap's output, line 3: "*"${line#*|}"* ]] || {
			echo "stderr: $stderr" >&2
			echo "wanted: ${line#*|}" >&2
			return 1
		}
		bucket_snapshot | grep -v ' \.dataspoc/logs/' >after
		diff -u before after
	done
	# Each failure left its log, and the log says why.
	run -0 bucket_keys .dataspoc/logs/bad/
	[ "${#lines[@]}" -eq 10 ]
	bucket_cat "${lines[9]}" | jq -r .status,.error >log
	expect_file log <<-'EOF'
	failure
	<stdin>:3: record 2 of stream 't' does not fit its Parquet columns: field 'n' (DOUBLE): 1e999 is beyond the range of a DOUBLE (schema_mismatch: fail; widen, the default, lands it)
	EOF
}

@test "string_columns: chosen columns are STRING, each value its text, so such values do not fail" {
	pq_pipeline text "string_columns:" "  'o*': [amount, 'legacy_*']" "  other: [id]"
	{
		echo '{"type":"SCHEMA","stream":"orders","schema":{"properties":{"id":{"type":"integer"},"amount":{"type":"number"},"legacy_id":{"type":"integer"},"at":{"type":"string","format":"date-time"}}}}'
		singer_records orders <<-'EOF'
		{"id":1,"amount":12.50,"legacy_id":12345678901234567891234567890123456789012,"at":"2024-01-01T00:00:00Z"}
		{"id":2,"amount":"n/a","legacy_id":"L-7","at":null}
		{"id":3,"amount":{"v":1},"legacy_id":true}
		{"id":4,"amount":"caf\u00e9"}
		EOF
	} >"$FAKE_DIR/tap-text/out"
	run -0 --separate-stderr dataspoc-pipe run text
	pq_table_rows raw/text/orders >got
	expect_file got <<-'EOF'
	{"id":"1","amount":"12.50","legacy_id":"12345678901234567891234567890123456789012","at":"1704067200000000","_extra":null}
	{"id":"2","amount":"n/a","legacy_id":"L-7","at":null,"_extra":null}
	{"id":"3","amount":"{\"v\":1}","legacy_id":"true","at":null,"_extra":null}
	{"id":"4","amount":"café","legacy_id":null,"at":null,"_extra":null}
	EOF
	bucket_cat .dataspoc/manifest.json | jq -c '[.tables["text/orders"].columns[].parquet_type]' >m
	expect_file m <<<'["INT64","STRING","STRING","TIMESTAMP(MICROS,UTC)","JSON"]'
}

@test "a stream with no SCHEMA: its columns come from its first record; later members go to _extra" {
	pq_pipeline noschema
	singer_records x >"$FAKE_DIR/tap-noschema/out" <<-'EOF'
	{"id":1,"name":"a","price":1.5,"ok":true,"tags":["t"],"doc":{"k":1},"none":null}
	{"id":2,"name":"b","price":2,"ok":false,"tags":[],"doc":{},"none":"now text","new":7}
	EOF
	run -0 --separate-stderr dataspoc-pipe run noschema
	[[ $stderr == *"dataspoc-pipe: warning: <stdin>:1: stream 'x' sent a RECORD before any SCHEMA: its Parquet columns are inferred from that record"* ]]
	pq_table_rows raw/noschema/x >got
	expect_file got <<-'EOF'
	{"id":"1","name":"a","price":1.5,"ok":true,"tags":"[\"t\"]","doc":"{\"k\":1}","none":null,"_extra":null}
	{"id":"2","name":"b","price":2,"ok":false,"tags":"[]","doc":"{}","none":"\"now text\"","_extra":"{\"new\":7}"}
	EOF
	bucket_cat .dataspoc/manifest.json | jq -c '[.tables["noschema/x"].columns[] | [.name, .type, .parquet_type]]' >m
	expect_file m <<<'[["id","integer","INT64"],["name","string","STRING"],["price","number","DOUBLE"],["ok","boolean","BOOLEAN"],["tags","array","JSON"],["doc","object","JSON"],["none","any","JSON"],["_extra","object","JSON"]]'
	bucket_cat "$(bucket_keys .dataspoc/logs/noschema/ | tail -n 1)" | jq -c .streams.x >log
	expect_file log <<<'{"records":2,"schema":"inferred"}'
}

@test "a transform's output lands as Parquet rows" {
	pq_pipeline tr
	mkdir -p "$DATASPOC_PIPE_HOME/transforms"
	echo '.id += 100 | .extra = "x"' >"$DATASPOC_PIPE_HOME/transforms/tr.jq"
	{
		echo '{"type":"SCHEMA","stream":"t","schema":{"properties":{"id":{"type":"integer"}}}}'
		echo '{"type":"RECORD","stream":"t","record":{"id":1}}'
		echo '{"type":"RECORD","stream":"t","record":{"id":2}}'
	} >"$FAKE_DIR/tap-tr/out"
	run -0 --separate-stderr dataspoc-pipe run tr
	pq_table_rows raw/tr/t >got
	expect_file got <<-'EOF'
	{"id":"101","_extra":"{\"extra\":\"x\"}"}
	{"id":"102","_extra":"{\"extra\":\"x\"}"}
	EOF
}

@test "config: format parquet's keys are checked" {
	pq_pipeline conf "row_group_rows: none"
	run -2 --separate-stderr dataspoc-pipe run conf
	[[ $stderr == *"destination.row_group_rows must be an integer from 1 to 2147483647, not 'none'"* ]]
	write_pipeline conf2 tap-conf true "row_group_size: 1MiB"
	run -2 --separate-stderr dataspoc-pipe run conf2
	[[ $stderr == *"destination.row_group_size applies only to format: parquet"* ]]
	bucket_untouched
}

@test "a stream waiting for an open file: its SCHEMA change still starts a new file; errors name the right line" {
	pq_pipeline cold
	{
		echo '{"type":"SCHEMA","stream":"a","schema":{"properties":{"id":{"type":"integer"}}}}'
		echo '{"type":"SCHEMA","stream":"b","schema":{"properties":{"id":{"type":"integer"}}}}'
		echo '{"type":"RECORD","stream":"a","record":{"id":1}}'
		echo '{"type":"RECORD","stream":"b","record":{"id":1}}'
		echo '{"type":"RECORD","stream":"b","record":{"id":2}}'
		echo '{"type":"SCHEMA","stream":"b","schema":{"properties":{"id":{"type":"integer"},"x":{"type":"string"}}}}'
		echo '{"type":"RECORD","stream":"b","record":{"id":3,"x":"y"}}'
		echo '{"type":"RECORD","stream":"a","record":{"id":2}}'
	} >"$FAKE_DIR/tap-cold/out"
	# one open file: b waits while a holds it
	DATASPOC_PIPE_MAX_OPEN=1 run -0 --separate-stderr dataspoc-pipe run cold
	local files
	files=($(pq_files raw/cold/b))
	[ "${#files[@]}" -eq 2 ]
	pq_rows "${files[0]}" >got0
	expect_file got0 <<-'EOF'
	{"id":"1","_extra":null}
	{"id":"2","_extra":null}
	EOF
	pq_rows "${files[1]}" >got1
	expect_file got1 <<-'EOF'
	{"id":"3","x":"y","_extra":null}
	EOF
	pq_table_rows raw/cold/a >gota
	expect_file gota <<-'EOF'
	{"id":"1","_extra":null}
	{"id":"2","_extra":null}
	EOF
	# a value that does not fit, in a record that waited: its own line and number
	pq_pipeline cold "schema_mismatch: fail"
	bucket_snapshot >before.snap
	{
		echo '{"type":"SCHEMA","stream":"a","schema":{"properties":{"id":{"type":"integer"}}}}'
		echo '{"type":"SCHEMA","stream":"b","schema":{"properties":{"id":{"type":"integer"}}}}'
		echo '{"type":"RECORD","stream":"a","record":{"id":1}}'
		echo '{"type":"RECORD","stream":"b","record":{"id":1}}'
		echo '{"type":"RECORD","stream":"b","record":{"id":"two"}}'
		echo '{"type":"RECORD","stream":"a","record":{"id":2}}'
	} >"$FAKE_DIR/tap-cold/out"
	DATASPOC_PIPE_MAX_OPEN=1 run -1 --separate-stderr dataspoc-pipe run cold
	[[ $stderr == *"dataspoc-pipe: run 'cold' failed: the tap's output, line 5: record 2 of stream 'b' does not fit its Parquet columns: field 'id' (INT64): \"two\" is not an integer"* ]]
	bucket_snapshot >after.snap
	diff <(grep -v ' .dataspoc/logs/' before.snap) <(grep -v ' .dataspoc/logs/' after.snap)
}

@test "many streams open at once: their row groups share a budget, the stream holding the most ends its own; -j 0 and -j 2 write the same bytes" {
	local rid=20260102T030405Z-abc123 j
	pq_pipeline many
	# 30 streams of 500 records of about 2 kB, round robin: 30 MB, more
	# than the 24 MiB of records the open row groups may hold together
	awk 'BEGIN {
		for (i = 1; i <= 30; i++)
			printf "{\"type\":\"SCHEMA\",\"stream\":\"s%02d\",\"schema\":{\"properties\":{\"r\":{\"type\":\"integer\"},\"pad\":{\"type\":\"string\"}}}}\n", i
		for (j = 1; j <= 500; j++)
			for (i = 1; i <= 30; i++)
				printf "{\"type\":\"RECORD\",\"stream\":\"s%02d\",\"record\":{\"r\":%d,\"pad\":\"%02000d\"}}\n", i, j, i * j * 7919
		print "{\"type\":\"DATASPOC_TAP_END\",\"status\":\"success\",\"exit_status\":0}"
	}' >many.jsonl
	for j in 0 2; do
		pipe-sink -q -j "$j" -r "$rid" many <many.jsonl >plan.jsonl
		mv "$BUCKET_DIR/.dataspoc/staging/many/$rid" "out.$j"
	done
	diff -r out.0 out.2
	local f=out.2/s01_${rid}_0000.parquet
	run -0 node "$PQ/duckdb-rows.mjs" --schema "$f"
	assert_line --regexp '^row_groups [2-9] rows '
	node "$PQ/duckdb-rows.mjs" "$f" | jq -r .r >got
	seq 1 500 >want
	diff -u want got
	run -0 sh -c "find out.2 -name '*.parquet' | wc -l"
	assert_output 30
}
