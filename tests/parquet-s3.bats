#!/usr/bin/env bats
# format: parquet on s3:// (s3rver on 127.0.0.1, read back with awscli), the
# files then read by DuckDB and hyparquet as in tests/parquet.bats.

load helpers/common
load helpers/s3
load helpers/parquet

use_s3_bucket

@test "s3: a parquet run lands files DuckDB and hyparquet read, every value as the tap sent it" {
	node "$PQ/gen.mjs" 5000 5 expected.jsonl | grep -v DATASPOC_TAP_END >out
	pq_pipeline s3pq "row_group_rows: 1000" "max_file_size: 32KiB"
	cp out "$FAKE_DIR/tap-s3pq/out"
	run -0 --separate-stderr dataspoc-pipe run s3pq
	assert_output --partial "Done! 5,000 records in 1 stream(s)"
	run -0 bucket_files
	[ "${#lines[@]}" -ge 2 ]
	refute_line --regexp '\.parquet.'
	pq_table_rows raw/s3pq/r >got
	diff -u expected.jsonl got
	bucket_cat .dataspoc/manifest.json | jq -r '.tables["s3pq/r"].format' >f
	expect_file f <<<parquet
}

@test "s3: schema_mismatch: fail: a value that does not fit fails the run and leaves the bucket as it was" {
	pq_pipeline s3bad "schema_mismatch: fail"
	{
		echo '{"type":"SCHEMA","stream":"t","schema":{"properties":{"id":{"type":"integer"}}}}'
		echo '{"type":"RECORD","stream":"t","record":{"id":1}}'
	} >"$FAKE_DIR/tap-s3bad/out"
	run -0 --separate-stderr dataspoc-pipe run s3bad
	bucket_snapshot | grep -v ' \.dataspoc/logs/' >before
	{
		echo '{"type":"SCHEMA","stream":"t","schema":{"properties":{"id":{"type":"integer"}}}}'
		echo '{"type":"RECORD","stream":"t","record":{"id":2}}'
		echo '{"type":"RECORD","stream":"t","record":{"id":"three"}}'
	} >"$FAKE_DIR/tap-s3bad/out"
	run -1 --separate-stderr dataspoc-pipe run s3bad
	[[ $stderr == *"record 2 of stream 't' does not fit its Parquet columns: field 'id' (INT64): \"three\" is not an integer"* ]]
	bucket_snapshot | grep -v ' \.dataspoc/logs/' >after
	diff -u before after
	run -0 bucket_keys .dataspoc/logs/s3bad/
	[ "${#lines[@]}" -eq 2 ]
}
