#!/usr/bin/env bats
# transforms/NAME.jq: applied to every record, $stream bound; compile errors
# stop the run before the tap starts; runtime errors commit nothing.

load helpers/common

setup() {
	pipe_setup
	mkdir -p "$DATASPOC_PIPE_HOME/transforms"
	cat >"$FAKE_DIR/tap.jsonl" <<-'JSONL'
	{"type":"SCHEMA","stream":"orders","schema":{"type":"object"},"key_properties":["id"]}
	{"type":"RECORD","stream":"orders","record":{"id":1,"card":"4111","big":12345678901234567891}}
	{"type":"RECORD","stream":"users","record":{"id":7,"name":"ana"}}
	{"type":"RECORD","stream":"orders","record":{"id":2,"card":"5500","drop":true}}
	{"type":"RECORD","stream":"orders","record":{"id":3,"card":"3700","twice":true}}
	{"type":"STATE","value":{"bookmarks":{"orders":{"id":3}}}}
	JSONL
	{
		printf 'source:\n  tap: [cat, %s]\n' "$FAKE_DIR/tap.jsonl"
		printf 'destination:\n'
		bucket_yaml
		printf '  format: jsonl\n  compression: gzip\nincremental:\n  enabled: false\n'
	} >"$DATASPOC_PIPE_HOME/pipelines/t.yaml"
}

teardown() {
	pipe_teardown
}

@test "a transform reshapes, drops and multiplies records; counts are of records as landed" {
	cat >"$DATASPOC_PIPE_HOME/transforms/t.jq" <<-'JQ'
	if .drop then empty
	elif .twice then (del(.card, .twice) | ., .)
	else del(.card) + {from: $stream} end
	JQ
	run -0 --separate-stderr dataspoc-pipe run t
	assert_output "Running: t
Done! 4 records in 2 stream(s)
  orders: 3
  users: 1"
	run -0 table_data raw/cat/orders
	assert_output '{"id":1,"big":12345678901234567000,"from":"orders"}
{"id":3}
{"id":3}'
	run -0 table_data raw/cat/users
	assert_output '{"id":7,"name":"ana","from":"users"}'
	run -1 grep -r 4111 "$BUCKET_DIR"
	bucket_cat ".dataspoc/logs/t/$(run_ids t | tail -n 1).json" >log.json
	run -0 jq -c '[.status, .total_records, .streams]' log.json
	assert_output '["success",4,{"orders":{"records":3},"users":{"records":1}}]'
}

@test "without a transform records keep their exact bytes" {
	run -0 --separate-stderr dataspoc-pipe run t
	run -0 table_data raw/cat/orders
	assert_line --index 0 '{"id":1,"card":"4111","big":12345678901234567891}'
}

@test "a transform that does not compile stops the run before the tap starts" {
	echo '.id |' >"$DATASPOC_PIPE_HOME/transforms/t.jq"
	# A tap that leaves a mark when it starts.
	sed -i "s|^  tap: .*|  tap: [sh, -c, 'touch $BATS_TEST_TMPDIR/tap-ran; cat $FAKE_DIR/tap.jsonl']|" \
		"$DATASPOC_PIPE_HOME/pipelines/t.yaml"
	run -2 --separate-stderr dataspoc-pipe run t
	assert_output ""
	assert_equal "$(printf '%s\n' "$stderr" | wc -l)" 1
	# jq's message in one line: the program's line it quotes without the
	# blanks jq pads it with (a caret's room), and no blank before ';'
	assert_equal "$stderr" "dataspoc-pipe: run 't' failed: $DATASPOC_PIPE_HOME/transforms/t.jq: the transform does not compile: syntax error, unexpected \$end (Unix shell quoting issues?) at <top-level>, line 1: .id |; jq: 1 compile error"
	# a failed run, in the bucket as any other (nothing else written)
	run -0 bucket_keys
	assert_output --regexp '^\.dataspoc/logs/t/[^/]*\.json$'
	[ ! -e tap-ran ]
	# the same pipeline without the broken transform does run its tap
	rm "$DATASPOC_PIPE_HOME/transforms/t.jq"
	run -0 --separate-stderr dataspoc-pipe run t
	[ -e tap-ran ]
}

@test "a runtime error fails the run with the stream and record number, and commits nothing" {
	run -0 --separate-stderr dataspoc-pipe run t
	bucket_snapshot >before
	printf '%s\n' '{"type":"RECORD","stream":"orders","record":{"id":4,"card":"x"}}' \
		'{"type":"RECORD","stream":"orders","record":{"id":"five","card":"y"}}' >"$FAKE_DIR/tap.jsonl"
	echo '{id: (.id + 1)}' >"$DATASPOC_PIPE_HOME/transforms/t.jq"
	# a tap that says something: not the failure's cause, not shown under it
	sed -i "s|^  tap: .*|  tap: [sh, -c, 'echo tap: starting >\&2; cat $FAKE_DIR/tap.jsonl']|" \
		"$DATASPOC_PIPE_HOME/pipelines/t.yaml"
	run -1 --separate-stderr dataspoc-pipe run t
	assert_equal "$stderr" "dataspoc-pipe: run 't' failed: the tap's output, line 2: the transform failed on record 2 of stream 'orders': string (\"five\") and number (1) cannot be added"
	bucket_snapshot >after
	# Only the failure's run log is new.
	diff before after | grep '^>' >added || true
	run -0 cat added
	assert_output --regexp '^> [0-9a-f]{64} \.dataspoc/logs/t/[0-9TZ]+-[0-9a-f]+\.json$'
	bucket_cat "$(sed 's/^> [0-9a-f]* //' added)" >log.json
	run -0 jq -r .status log.json
	assert_output failure
}
