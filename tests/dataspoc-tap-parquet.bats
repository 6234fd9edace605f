#!/usr/bin/env bats
# dataspoc-tap-parquet: the built-in Singer tap for Parquet files.  Files are
# written in the tests by DuckDB (tests/clients/parquet-read/duckdb.mjs) or landed by
# pipe-sink, and every value the tap prints is compared with what DuckDB
# reads from the same file.

bats_require_minimum_version 1.5.0
bats_load_library bats-support
bats_load_library bats-assert

load helpers/common

setup() {
	pipe_setup
	TAP=$PIPE_BIN/dataspoc-tap-parquet
	DUCK=$BATS_TEST_DIRNAME/clients/parquet-read/duckdb.mjs
	cd "$BATS_TEST_TMPDIR" || return 1
}

teardown() {
	pipe_teardown
}

# One column of each type DuckDB writes flat, with nulls, over N rows.
types_sql() {
	cat <<-EOF
	SELECT i::BIGINT AS id,
	  CASE WHEN i % 5 = 0 THEN NULL ELSE i * 1000003 - 500000000 END::BIGINT AS big,
	  (i - 500)::INTEGER AS i32, (i % 100 - 50)::TINYINT AS i8, (i % 30000)::SMALLINT AS i16,
	  (i * 7)::UBIGINT AS u64, (i % 250)::UTINYINT AS u8, (i * 3)::UINTEGER AS u32,
	  CASE WHEN i % 3 = 0 THEN NULL ELSE 'v' || (i % 7) END AS s_dict,
	  md5(i::VARCHAR) || '"\\ é ' || chr(10) || chr(128512) AS s_plain,
	  i % 2 = 0 AS b,
	  CASE WHEN i % 7 = 0 THEN NULL ELSE (i - 500) / 7.0 END AS d,
	  ((i - 500) / 3.0)::FLOAT AS f,
	  ((i - 500) * 1.25)::DECIMAL(9,2) AS dec9, ((i - 500) * 1.125)::DECIMAL(18,3) AS dec18,
	  ((i - 500) * 12345678901234.5678)::DECIMAL(38,4) AS dec38,
	  DATE '1969-12-25' + (i * 37)::INTEGER AS dt,
	  TIMESTAMPTZ '1969-12-31 23:59:59+00' + to_microseconds(i * 123456789) AS tstz,
	  TIMESTAMP '2024-02-29 12:00:00' + to_milliseconds(i) AS ts,
	  CAST('{"k":' || i || ',"a":[1,"x",null]}' AS JSON) AS j,
	  CAST('\\x00\\xFF' || i AS BLOB) AS bl,
	  TIME '00:00:00' + to_microseconds(i * 86399) AS tm,
	  CAST(md5(i::VARCHAR) AS UUID) AS u
	FROM range(${1:-1000}) t(i)
	EOF
}

# tap_config FILE-OR-FOLDER [MORE JSON MEMBERS]
tap_config() {
	printf '{"path": "%s"%s}\n' "$1" "${2:+, $2}" >tap.json
}

@test "every flat type DuckDB writes, each codec, data pages v1 and v2: every value is DuckDB's" {
	local codec version f
	for codec in uncompressed snappy gzip zstd; do
		for version in V1 V2; do
			f=t_${codec}_$version.parquet
			node "$DUCK" write "$f" "$(types_sql)" "COMPRESSION $codec, PARQUET_VERSION $version"
			tap_config "$f"
			run -0 --separate-stderr "$TAP" -c tap.json
			printf '%s\n' "$output" >out.jsonl
			assert_equal "$stderr" ""
			run -0 node "$DUCK" compare out.jsonl "$f"
			assert_output "1000 rows equal"
		done
	done
	# The files hold what the test means them to: each codec, and
	# PLAIN, dictionary, delta and byte-stream-split encodings.
	node "$DUCK" encodings t_zstd_V1.parquet >enc1
	node "$DUCK" encodings t_gzip_V2.parquet >enc2
	grep -q '^s_dict BYTE_ARRAY PLAIN_DICTIONARY ZSTD$' enc1
	grep -q '^s_plain BYTE_ARRAY PLAIN ZSTD$' enc1
	grep -q '^b BOOLEAN PLAIN ZSTD$' enc1
	grep -q '^s_dict BYTE_ARRAY RLE_DICTIONARY GZIP$' enc2
	grep -q '^big INT64 DELTA_BINARY_PACKED GZIP$' enc2
	grep -q '^s_plain BYTE_ARRAY DELTA_LENGTH_BYTE_ARRAY GZIP$' enc2
	grep -q '^d DOUBLE BYTE_STREAM_SPLIT GZIP$' enc2
	node "$DUCK" encodings t_snappy_V1.parquet | grep -q ' SNAPPY$'
	node "$DUCK" encodings t_uncompressed_V1.parquet | grep -q ' UNCOMPRESSED$'
}

@test "the SCHEMA maps each type, null where the column is optional" {
	node "$DUCK" write t.parquet "$(types_sql 3)"
	tap_config t.parquet '"stream_name": "t", "key_properties": ["id"]'
	run -0 --separate-stderr "$TAP" -c tap.json
	printf '%s\n' "$output" | head -n 1 >schema
	expect_file schema <<-'EOF'
	{"type":"SCHEMA","stream":"t","schema":{"type":"object","properties":{"id":{"type":["null","integer"]},"big":{"type":["null","integer"]},"i32":{"type":["null","integer"]},"i8":{"type":["null","integer"]},"i16":{"type":["null","integer"]},"u64":{"type":["null","integer"]},"u8":{"type":["null","integer"]},"u32":{"type":["null","integer"]},"s_dict":{"type":["null","string"]},"s_plain":{"type":["null","string"]},"b":{"type":["null","boolean"]},"d":{"type":["null","number"]},"f":{"type":["null","number"]},"dec9":{"type":["null","number"]},"dec18":{"type":["null","number"]},"dec38":{"type":["null","number"]},"dt":{"type":["null","string"],"format":"date"},"tstz":{"type":["null","string"],"format":"date-time"},"ts":{"type":["null","string"]},"j":{},"bl":{"type":["null","string"],"contentEncoding":"base64"},"tm":{"type":["null","string"]},"u":{"type":["null","string"],"format":"uuid"}}},"key_properties":["id"]}
	EOF
	printf '%s\n' "$output" | sed -n 2p >rec
	expect_file rec <<-'EOF'
	{"type":"RECORD","stream":"t","record":{"id":0,"big":null,"i32":-500,"i8":-50,"i16":0,"u64":0,"u8":0,"u32":0,"s_dict":null,"s_plain":"cfcd208495d565ef66e7dff9f98764da\"\\ é \n😀","b":true,"d":null,"f":-166.66667,"dec9":-625.00,"dec18":-562.500,"dec38":-6172839450617283.9000,"dt":"1969-12-25","tstz":"1969-12-31T23:59:59Z","ts":"2024-02-29T12:00:00","j":{"k":0,"a":[1,"x",null]},"bl":"AP8w","tm":"00:00:00","u":"cfcd2084-95d5-65ef-66e7-dff9f98764da"}}
	EOF
}

@test "extreme values come out exactly: integer limits, doubles, decimals, times" {
	local version
	node "$DUCK" write x.parquet "SELECT i64::BIGINT AS i64, u64::UBIGINT AS u64,
	  d::DOUBLE AS d, d2::DOUBLE AS d2, dec::DECIMAL(38,0) AS dec, dec2::DECIMAL(4,2) AS dec2,
	  make_timestamp_ns(tns::BIGINT) AS tns, tms::TIMESTAMP_MS AS tms, dt::DATE AS dt, f::FLOAT AS f, s
	FROM (VALUES
	  ('-9223372036854775808', '18446744073709551615', 'NaN', '-0.0',
	   '-99999999999999999999999999999999999999', '-0.05', '-1234567890123456789',
	   '1900-01-01 00:00:00.001', '0001-01-01', '3.4028235e38', ''),
	  ('9223372036854775807', '0', 'Infinity', '5e-324',
	   '99999999999999999999999999999999999999', '0.00', '9223372036854775806',
	   '2999-12-31 23:59:59.999', '9999-12-31', '1.4e-45', 'x'),
	  ('0', '1', '-Infinity', '1.7976931348623157e308', '12345678901234567891', '99.99',
	   '0', NULL, NULL, '0.1', NULL),
	  ('1', '2', '0.1', '123456789012345680000', '0', '-99.99', NULL, NULL, NULL, NULL, NULL)
	) v(i64, u64, d, d2, dec, dec2, tns, tms, dt, f, s)" "PARQUET_VERSION V1"
	tap_config x.parquet
	run -0 --separate-stderr "$TAP" -c tap.json
	printf '%s\n' "$output" >out.jsonl
	run -0 node "$DUCK" compare out.jsonl x.parquet
	assert_output "4 rows equal"
	grep -v SCHEMA out.jsonl >got
	expect_file got <<-'EOF'
	{"type":"RECORD","stream":"x","record":{"i64":-9223372036854775808,"u64":18446744073709551615,"d":"NaN","d2":-0.0,"dec":-99999999999999999999999999999999999999,"dec2":-0.05,"tns":"1930-11-18T00:28:29.876543211","tms":"1900-01-01T00:00:00.001","dt":"0001-01-01","f":3.4028235e+38,"s":""}}
	{"type":"RECORD","stream":"x","record":{"i64":9223372036854775807,"u64":0,"d":"Infinity","d2":4.94065645841247e-324,"dec":99999999999999999999999999999999999999,"dec2":0.00,"tns":"2262-04-11T23:47:16.854775806","tms":"2999-12-31T23:59:59.999","dt":"9999-12-31","f":1.4013e-45,"s":"x"}}
	{"type":"RECORD","stream":"x","record":{"i64":0,"u64":1,"d":"-Infinity","d2":1.7976931348623157e+308,"dec":12345678901234567891,"dec2":99.99,"tns":"1970-01-01T00:00:00","tms":null,"dt":null,"f":0.1,"s":null}}
	{"type":"RECORD","stream":"x","record":{"i64":1,"u64":2,"d":0.1,"d2":1.2345678901234568e+20,"dec":0,"dec2":-99.99,"tns":null,"tms":null,"dt":null,"f":null,"s":null}}
	{"type":"STATE","value":{"bookmarks":{"x":{"files":["x.parquet"]}}}}
	EOF
}

@test "row groups of any size, and pages of many values, are read in order" {
	local rg
	for rg in 2048 4096 100000; do
		node "$DUCK" write "rg$rg.parquet" "$(types_sql 10000)" "ROW_GROUP_SIZE $rg, COMPRESSION zstd"
		tap_config "rg$rg.parquet"
		run -0 --separate-stderr "$TAP" -c tap.json
		printf '%s\n' "$output" >out.jsonl
		run -0 node "$DUCK" compare out.jsonl "rg$rg.parquet"
		assert_output "10000 rows equal"
	done
	run -0 node "$DUCK" sql "SELECT count(DISTINCT row_group_id) AS n FROM parquet_metadata('rg2048.parquet')"
	assert_output '{"n":"5"}'
}

@test "what pipe-sink lands is read back: every type, its widened columns, nulls, the members beyond the schema" {
	use_tap tap-src
	write_pipeline src tap-src true "format: parquet" "row_group_rows: 3"
	{
		echo '{"type":"SCHEMA","stream":"t","schema":{"type":"object","properties":{"id":{"type":"integer"},"n":{"type":["null","number"]},"b":{"type":["null","boolean"]},"s":{"type":["null","string"]},"ts":{"type":["null","string"],"format":"date-time"},"d":{"type":["null","string"],"format":"date"},"o":{"type":["null","object"]},"any":{}}},"key_properties":["id"]}'
		singer_records t <<-'EOF'
		{"id":1,"n":1.5,"b":true,"s":"plain","ts":"2024-01-01T08:00:00Z","d":"2024-03-01","o":{"k":"v"},"any":"text"}
		{"id":2,"n":null,"b":null,"s":null,"ts":null,"d":null,"o":null,"any":null}
		{"id":3,"extra":"kept"}
		{"id":4,"n":-0.0001,"b":false,"s":"","ts":"1969-12-31T23:59:59.999999Z","d":"1969-12-31","o":{},"any":12345678901234567891}
		{"id":12345678901234567891,"n":0.1,"s":"é\"\\\n"}
		EOF
	} >"$FAKE_DIR/tap-src/out"
	run -0 dataspoc-pipe run src
	files=$(find "$BUCKET_DIR/raw" -name '*.parquet' | sort)
	# The id past int64 widens it to DECIMAL(38,0) in a second file: still
	# an integer, so one SCHEMA.
	[ "$(printf '%s\n' "$files" | wc -l)" -eq 2 ]
	tap_config "$BUCKET_DIR/raw/src/t" '"stream_name": "t"'
	run -0 --separate-stderr "$TAP" -c tap.json
	printf '%s\n' "$output" >out.jsonl
	# shellcheck disable=SC2086
	run -0 node "$DUCK" compare out.jsonl $files
	assert_output "5 rows equal"
	grep -c '"type":"SCHEMA"' out.jsonl >n
	expect_file n <<-'EOF'
	1
	EOF
	grep '"type":"RECORD"' out.jsonl | sed 's/.*"record"://' >got
	expect_file got <<-'EOF'
	{"id":1,"n":1.5,"b":true,"s":"plain","ts":"2024-01-01T08:00:00Z","d":"2024-03-01","o":{"k":"v"},"any":"text"}}
	{"id":2,"n":null,"b":null,"s":null,"ts":null,"d":null,"o":null,"any":null}}
	{"id":3,"n":null,"b":null,"s":null,"ts":null,"d":null,"o":null,"any":null,"extra":"kept"}}
	{"id":4,"n":-0.0001,"b":false,"s":"","ts":"1969-12-31T23:59:59.999999Z","d":"1969-12-31","o":{},"any":12345678901234567891}}
	{"id":12345678901234567891,"n":0.1,"b":null,"s":"é\"\\\n","ts":null,"d":null,"o":null,"any":null}}
	EOF
}

@test "a second pipeline lands the first one's table again, value for value (bronze to silver)" {
	use_tap tap-src
	write_pipeline bronze tap-src true "format: parquet"
	{
		echo '{"type":"SCHEMA","stream":"orders","schema":{"type":"object","properties":{"id":{"type":"integer"},"total":{"type":"number"},"at":{"type":"string","format":"date-time"}}},"key_properties":["id"]}'
		singer_records orders <<-'EOF'
		{"id":1,"total":10.5,"at":"2024-01-01T00:00:00Z"}
		{"id":2,"total":0.1,"at":"2024-01-02T00:00:01.5Z"}
		EOF
	} >"$FAKE_DIR/tap-src/out"
	run -0 dataspoc-pipe run bronze
	printf '{"path": "%s", "stream_name": "orders", "key_properties": ["id"]}\n' \
		"$BUCKET_DIR/raw/src/orders" >"$BATS_TEST_TMPDIR/silver.json"
	cat >"$DATASPOC_PIPE_HOME/pipelines/silver.yaml" <<-EOF
	source:
	  tap: dataspoc-tap-parquet
	  config: $BATS_TEST_TMPDIR/silver.json
	destination:
	  bucket: $BUCKET_DIR
	  path: silver
	incremental:
	  enabled: true
	EOF
	run -0 dataspoc-pipe run silver
	assert_output --partial "orders: 2"
	b=$(find "$BUCKET_DIR/raw/src/orders" -name '*.parquet')
	s=$(find "$BUCKET_DIR/silver" -name '*.parquet')
	node "$DUCK" sql "SELECT id, total, \"at\" FROM '$b' ORDER BY id" >want
	node "$DUCK" sql "SELECT id, total, \"at\" FROM '$s' ORDER BY id" >got
	diff -u want got
	run -0 node "$DUCK" sql "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM '$s')"
	assert_line --index 0 '{"column_name":"id","column_type":"BIGINT"}'
	assert_line --index 1 '{"column_name":"total","column_type":"DOUBLE"}'
	assert_line --index 2 '{"column_name":"at","column_type":"TIMESTAMP WITH TIME ZONE"}'
	# Incremental by file: a run with no new bronze file lands nothing.
	run -0 dataspoc-pipe run silver
	assert_output --partial "0 records"
	[ "$(find "$BUCKET_DIR/silver" -name '*.parquet' | wc -l)" -eq 1 ]
}

@test "files are read in name order under the path; the glob skips hidden folders; a SCHEMA per change" {
	mkdir -p lake/a lake/b/c lake/.dataspoc/staging lake/_x
	node "$DUCK" write lake/b/c/2.parquet "SELECT 2 AS id"
	node "$DUCK" write lake/a/1.parquet "SELECT 1 AS id"
	node "$DUCK" write lake/_x/3.parquet "SELECT 3 AS id, 'x' AS s"
	node "$DUCK" write lake/.dataspoc/staging/9.parquet "SELECT 9 AS id"
	node "$DUCK" write lake/top.parquet "SELECT 4 AS id"
	echo 'not parquet' >lake/a/notes.txt
	tap_config lake '"stream_name": "s"'
	run -0 --separate-stderr "$TAP" -c tap.json
	printf '%s\n' "$output" >got
	expect_file got <<-'EOF'
	{"type":"SCHEMA","stream":"s","schema":{"type":"object","properties":{"id":{"type":["null","integer"]},"s":{"type":["null","string"]}}},"key_properties":[]}
	{"type":"RECORD","stream":"s","record":{"id":3,"s":"x"}}
	{"type":"SCHEMA","stream":"s","schema":{"type":"object","properties":{"id":{"type":["null","integer"]}}},"key_properties":[]}
	{"type":"RECORD","stream":"s","record":{"id":1}}
	{"type":"RECORD","stream":"s","record":{"id":2}}
	{"type":"RECORD","stream":"s","record":{"id":4}}
	{"type":"STATE","value":{"bookmarks":{"s":{"files":["_x/3.parquet","a/1.parquet","b/c/2.parquet","top.parquet"]}}}}
	EOF
	tap_config lake '"stream_name": "s", "glob": "b/**/*.parquet"'
	run -0 --separate-stderr "$TAP" -c tap.json
	assert_line --index 1 '{"type":"RECORD","stream":"s","record":{"id":2}}'
	assert_line --index 2 '{"type":"STATE","value":{"bookmarks":{"s":{"files":["b/c/2.parquet"]}}}}'
	tap_config lake '"stream_name": "s", "glob": "*.parquet"'
	run -0 --separate-stderr "$TAP" -c tap.json
	assert_line --index 1 '{"type":"RECORD","stream":"s","record":{"id":4}}'
	assert_equal "${#lines[@]}" 3
}

@test "incremental by file: with --state only the files it does not list are read; other bookmarks pass" {
	mkdir -p lake
	node "$DUCK" write lake/1.parquet "SELECT 1 AS id"
	node "$DUCK" write lake/2.parquet "SELECT 2 AS id"
	tap_config lake '"stream_name": "s"'
	cat >state.json <<-'EOF'
	{"bookmarks": {"other": {"x": 12345678901234567891}, "s": {"files": ["1.parquet", "gone.parquet"]}}, "currently_syncing": null}
	EOF
	run -0 --separate-stderr "$TAP" -c tap.json -s state.json
	printf '%s\n' "$output" >got
	expect_file got <<-'EOF'
	{"type":"SCHEMA","stream":"s","schema":{"type":"object","properties":{"id":{"type":["null","integer"]}}},"key_properties":[]}
	{"type":"RECORD","stream":"s","record":{"id":2}}
	{"type":"STATE","value":{"bookmarks":{"other":{"x":12345678901234567891},"s":{"files":["1.parquet","2.parquet"]}},"currently_syncing":null}}
	EOF
	# A whole STATE message is a state too; nothing new: only the STATE.
	tail -n 1 got >state2.json
	run -0 --separate-stderr "$TAP" -c tap.json --state state2.json
	assert_output '{"type":"STATE","value":{"bookmarks":{"other":{"x":12345678901234567891},"s":{"files":["1.parquet","2.parquet"]}},"currently_syncing":null}}'
	echo '{"bookmarks": {"s": {"files": "1.parquet"}}}' >bad.json
	run -2 --separate-stderr "$TAP" -c tap.json -s bad.json
	assert_equal "$stderr" "dataspoc-tap-parquet: state 'bad.json': \"files\" of 's' is not an array"
}

@test "hive_partitioning: k=v folders become string columns" {
	mkdir -p 'lake/dt=2024-01-01/region=eu' 'lake/dt=2024-01-02'
	node "$DUCK" write 'lake/dt=2024-01-01/region=eu/a.parquet' "SELECT 1 AS id"
	node "$DUCK" write 'lake/dt=2024-01-02/b.parquet' "SELECT 2 AS id, 'x' AS region"
	tap_config lake '"stream_name": "s", "hive_partitioning": true'
	run -0 --separate-stderr "$TAP" -c tap.json
	printf '%s\n' "$output" >got
	expect_file got <<-'EOF'
	{"type":"SCHEMA","stream":"s","schema":{"type":"object","properties":{"id":{"type":["null","integer"]},"dt":{"type":"string"},"region":{"type":"string"}}},"key_properties":[]}
	{"type":"RECORD","stream":"s","record":{"id":1,"dt":"2024-01-01","region":"eu"}}
	{"type":"SCHEMA","stream":"s","schema":{"type":"object","properties":{"id":{"type":["null","integer"]},"region":{"type":["null","string"]},"dt":{"type":"string"}}},"key_properties":[]}
	{"type":"RECORD","stream":"s","record":{"id":2,"region":"x","dt":"2024-01-02"}}
	{"type":"STATE","value":{"bookmarks":{"s":{"files":["dt=2024-01-01/region=eu/a.parquet","dt=2024-01-02/b.parquet"]}}}}
	EOF
	tap_config lake '"stream_name": "s"'
	run -0 --separate-stderr "$TAP" -c tap.json
	assert_line --index 1 '{"type":"RECORD","stream":"s","record":{"id":1}}'
}

@test "a nested column is an error naming the file and the column, before any message; a catalog can leave it out" {
	node "$DUCK" write n.parquet "SELECT 1 AS id, [1, 2] AS l, {'a': 1} AS st"
	tap_config n.parquet
	run -1 --separate-stderr "$TAP" -c tap.json
	assert_output ""
	assert_equal "$stderr" "dataspoc-tap-parquet: cannot read 'n.parquet': column 'l': nested column (LIST) is not supported"
	cat >cat.json <<-'EOF'
	{"streams": [{"tap_stream_id": "n", "metadata": [
	  {"breadcrumb": ["properties", "l"], "metadata": {"selected": false}},
	  {"breadcrumb": ["properties", "st"], "metadata": {"selected": false}}]}]}
	EOF
	run -0 --separate-stderr "$TAP" -c tap.json --catalog cat.json
	assert_line --index 1 '{"type":"RECORD","stream":"n","record":{"id":1}}'
	run -0 --separate-stderr "$TAP" -c tap.json -d
	printf '%s\n' "$output" >cat
	grep -q '"inclusion": "unsupported"' cat
	# The catalog's schema lists only what can be read.
	run -0 jq -c '.streams[0].schema' cat
	assert_output '{"type":"object","properties":{"id":{"type":["null","integer"]}}}'
	# A catalog that does not list the stream: nothing is read.
	echo '{"streams": []}' >none.json
	run -0 --separate-stderr "$TAP" -c tap.json -p none.json
	assert_output ""
}

@test "damaged files and missing paths are errors that name them" {
	node "$DUCK" write ok.parquet "SELECT i AS id, md5(i::VARCHAR) AS s FROM range(1000) t(i)" "COMPRESSION zstd"
	echo 'hello' >text.parquet
	tap_config text.parquet
	run -1 --separate-stderr "$TAP" -c tap.json
	assert_equal "$stderr" "dataspoc-tap-parquet: cannot read 'text.parquet': not a Parquet file (no PAR1 at its start and end)"
	head -c 2000 ok.parquet >cut.parquet
	printf 'PAR1' >>cut.parquet
	tap_config cut.parquet
	run -1 --separate-stderr "$TAP" -c tap.json
	assert_output ""
	assert_equal "$stderr" "dataspoc-tap-parquet: cannot read 'cut.parquet': its footer length is beyond the file"
	# A page damaged in the middle: the rows before it are printed, then the error.
	size=$(stat -c %s ok.parquet)
	{ head -c 300 ok.parquet; head -c 3000 /dev/zero; tail -c $((size - 3300)) ok.parquet; } >mid.parquet
	tap_config mid.parquet
	run -1 --separate-stderr "$TAP" -c tap.json
	assert_regex "$stderr" "^dataspoc-tap-parquet: cannot read 'mid.parquet': column '(id|s)': "
	refute_output --partial '"type":"STATE"'
	tap_config nothere
	run -1 --separate-stderr "$TAP" -c tap.json
	assert_equal "$stderr" "dataspoc-tap-parquet: cannot read 'nothere': No such file or directory"
	tap_config nothere.parquet
	run -1 --separate-stderr "$TAP" -c tap.json
	assert_equal "$stderr" "dataspoc-tap-parquet: cannot read 'nothere.parquet': no such file"
}

@test "a FIFO (or any file that is not a regular one) as the path is refused, naming it; in a folder it is not listed; the tap never hangs" {
	mkdir d
	node "$DUCK" write d/a.parquet "SELECT 1 AS id" "COMPRESSION zstd"
	mkfifo d/b.parquet
	# in a folder: not listed (a folder's files are its regular ones)
	tap_config d
	run -0 --separate-stderr timeout 20 "$TAP" -c tap.json
	assert_equal "$(grep -c '"type":"RECORD"' <<<"$output")" 1
	mkfifo f.parquet
	tap_config f.parquet
	run -1 --separate-stderr timeout 20 "$TAP" -c tap.json
	assert_equal "$stderr" "dataspoc-tap-parquet: cannot read 'f.parquet': not a regular file (a FIFO)"
}

@test "an empty folder gives only a STATE; an empty Parquet file gives its SCHEMA" {
	mkdir empty
	tap_config empty '"stream_name": "e"'
	run -0 --separate-stderr "$TAP" -c tap.json
	assert_output '{"type":"STATE","value":{"bookmarks":{"e":{"files":[]}}}}'
	node "$DUCK" write empty/z.parquet "SELECT 1 AS id WHERE false"
	run -0 --separate-stderr "$TAP" -c tap.json
	assert_line --index 0 '{"type":"SCHEMA","stream":"e","schema":{"type":"object","properties":{"id":{"type":["null","integer"]}}},"key_properties":[]}'
	assert_line --index 1 '{"type":"STATE","value":{"bookmarks":{"e":{"files":["z.parquet"]}}}}'
}

@test "config errors exit 2 and say what is wrong" {
	echo '{}' >c.json
	run -2 --separate-stderr "$TAP" -c c.json
	assert_regex "$stderr" "^dataspoc-tap-parquet: config 'c.json': \"path\" must be a non-empty string"
	echo '{"path": "x", "hive_partitioning": "yes"}' >c.json
	run -2 --separate-stderr "$TAP" -c c.json
	assert_equal "$stderr" "dataspoc-tap-parquet: config 'c.json': \"hive_partitioning\" must be true or false"
	echo '{"path": "x", "key_properties": "id"}' >c.json
	run -2 --separate-stderr "$TAP" -c c.json
	assert_equal "$stderr" "dataspoc-tap-parquet: config 'c.json': \"key_properties\" must be an array of strings"
	node "$DUCK" write k.parquet "SELECT 1 AS id"
	echo '{"path": "k.parquet", "key_properties": ["nope"], "colour": 1}' >c.json
	run -2 --separate-stderr "$TAP" -c c.json
	assert_equal "$stderr" "dataspoc-tap-parquet: warning: config 'c.json': key 'colour' ignored
dataspoc-tap-parquet: config 'c.json': key property 'nope' is not a column of 'k.parquet'"
	run -2 --separate-stderr "$TAP"
	assert_equal "$stderr" "dataspoc-tap-parquet: --config is required
usage: dataspoc-tap-parquet [-d] -c config [-s state] [-p properties | --catalog catalog]"
	run -2 --separate-stderr "$TAP" -c
	assert_equal "${stderr%%$'\n'*}" "dataspoc-tap-parquet: option '-c' needs an argument"
}

@test "--help, --version and --about" {
	run -0 "$TAP" --help
	assert_line --index 0 "usage: dataspoc-tap-parquet [-d] -c config [-s state] [-p properties | --catalog catalog]"
	run -0 "$TAP" --version
	assert_output --regexp '^dataspoc-tap-parquet [0-9]'
	run -0 "$TAP" --about
	printf '%s\n' "$output" >about
	run -0 jq -r '.name, (.capabilities | join(","))' about
	assert_output "dataspoc-tap-parquet
discover,catalog,properties,state"
}

@test "a full stdout is an error" {
	node "$DUCK" write t.parquet "SELECT 1 AS id"
	tap_config t.parquet
	run -1 --separate-stderr sh -c '"$0" -c tap.json >/dev/full' "$TAP"
	assert_equal "$stderr" "dataspoc-tap-parquet: cannot write 'standard output': No space left on device"
}
