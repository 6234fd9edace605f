#!/usr/bin/env bats
# pipe-sink: a Singer stream (ended by pipe-tap's end line) in, staged
# compressed files and a commit plan out.

load helpers/common

RID=20260102T030405Z-abc123
STAGE=.dataspoc/staging/shop/$RID/
END_OK='{"type":"DATASPOC_TAP_END","status":"success","exit_status":0}'
USAGE='usage: pipe-sink [-fhnq] [-j THREADS] [-r RUN_ID] NAME | -c FILE.yaml'

setup() {
	pipe_setup
	use_tap tap-shop
	write_pipeline shop tap-shop
	cat >orders.jsonl <<-'EOF'
	{"id":1,"big":12345678901234567891,"s":"caf\u00e9 \ud83d\ude00 \"q\" \\ \u0000"}
	{"id":2,"utf8":"日本語","nested":{"a":[1,2.50,{"b":null}]}}
	{ "id" : 3 }
	EOF
	{
		echo '{"type":"SCHEMA","stream":"orders","schema":{"type":"object","properties":{"id":{"type":"integer","maximum":12345678901234567891}}},"key_properties":["id"]}'
		sed -n 1p orders.jsonl | singer_records orders
		echo '{"type":"RECORD","stream":"users","record":{"id":"u1"}}'
		echo '{"type":"STATE","value":{"first":1}}'
		sed -n 2,3p orders.jsonl | singer_records orders
		echo '{"type":"STATE","value":{"b":12345678901234567891, "s" : "\u00e9"}}'
		echo "$END_OK"
	} >dump.jsonl
}

teardown() {
	pipe_teardown
}

# The plan's lines as jq -c prints them, one kind at a time.
plan_lines() {	# TYPE [PLAN]
	jq -c "select(.type == \"$1\")" "${2:-plan.jsonl}"
}

expect_staging_empty() {
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
}

@test "-h prints the help on stdout" {
	run -0 --separate-stderr pipe-sink -h
	assert_line --index 0 "usage: pipe-sink [-fhnq] [-j THREADS] [-r RUN_ID] NAME"
	assert_stderr ""
}

@test "bad usage prints the usage on stderr and exits 2" {
	run -2 --separate-stderr pipe-sink -x shop <dump.jsonl
	assert_equal "$output" ""
	assert_stderr "pipe-sink: invalid option -- 'x'
$USAGE"
	run -2 --separate-stderr pipe-sink shop extra <dump.jsonl
	assert_stderr "$USAGE"
	run -2 --separate-stderr pipe-sink -j many shop <dump.jsonl
	assert_stderr "pipe-sink: -j wants a number of threads from 0 to 256, not 'many'"
	run -2 --separate-stderr pipe-sink -r 2026-01-02 shop <dump.jsonl
	assert_stderr "pipe-sink: invalid run id '2026-01-02' (expected the shape 20261130T004809Z-3fa9c1)"
	run -2 --separate-stderr pipe-sink nosuch <dump.jsonl
	assert_stderr "pipe-sink: no pipeline 'nosuch' (looked for $DATASPOC_PIPE_HOME/pipelines/nosuch.yaml)"
	bucket_untouched
}

@test "a dump becomes staged files and a plan; nothing is visible yet" {
	run -0 --separate-stderr pipe-sink -r "$RID" shop <dump.jsonl
	assert_stderr "  orders: 3 records...
  users: 1 record..."
	printf '%s\n' "$output" >plan.jsonl
	local ofile="raw/shop/orders/dt=2026-01-02/orders_${RID}_0000.jsonl.zst"
	local ufile="raw/shop/users/dt=2026-01-02/users_${RID}_0000.jsonl.zst"
	jq -c .type plan.jsonl >types
	expect_file types <<-'EOF'
	"run"
	"file"
	"file"
	"stream"
	"stream"
	"state"
	"end"
	EOF
	plan_lines run >got
	expect_file got <<-EOF
	{"type":"run","pipeline":"shop","run_id":"$RID","started_at":"2026-01-02T03:04:05Z","source":"shop","format":"jsonl","compression":"zstd","incremental":true,"replace":false,"full":false}
	EOF
	plan_lines file | jq -c 'del(.bytes)' >got
	expect_file got <<-EOF
	{"type":"file","stream":"orders","staged":"$STAGE${ofile##*/}","final":"$ofile","records":3}
	{"type":"file","stream":"users","staged":"$STAGE${ufile##*/}","final":"$ufile","records":1}
	EOF
	plan_lines stream | jq -c 'del(.schema)' >got
	expect_file got <<-'EOF'
	{"type":"stream","stream":"orders","dir":"raw/shop/orders","records":3,"key_properties":["id"]}
	{"type":"stream","stream":"users","dir":"raw/shop/users","records":1,"key_properties":null}
	EOF
	# schema and state are carried byte for byte (no jq here: it would
	# round 12345678901234567891)
	run -0 grep -c -F '"schema":{"type":"object","properties":{"id":{"type":"integer","maximum":12345678901234567891}}}' plan.jsonl
	assert_output 1
	run -0 grep -c -F '"schema":null' plan.jsonl
	assert_output 1
	run -0 grep -x -F '{"type":"state","value":{"b":12345678901234567891,"s":"\u00e9"}}' plan.jsonl
	plan_lines end >got
	echo '{"type":"end","status":"success","records":4}' | expect_file got

	bucket_keys >keys
	expect_file keys <<-EOF
	$STAGE${ofile##*/}
	$STAGE${ufile##*/}
	EOF
	bucket_data "$STAGE${ofile##*/}" >got
	diff -u orders.jsonl got
	echo '{"id":"u1"}' >want
	bucket_data "$STAGE${ufile##*/}" >got
	diff -u want got
	# bytes: each staged object's size
	local k
	for k in "$ofile" "$ufile"; do
		bucket_cat "$STAGE${k##*/}" >obj
		run -0 jq -r --arg f "$k" 'select(.final == $f) | .bytes' plan.jsonl
		assert_output "$(wc -c <obj)"
	done
}

@test "-c FILE.yaml instead of a name: the same plan" {
	pipe-sink -q -r "$RID" shop <dump.jsonl >by-name.jsonl
	rm -rf "$BUCKET_DIR"
	cp "$DATASPOC_PIPE_HOME/pipelines/shop.yaml" shop.yaml
	pipe-sink -q -r "$RID" -c shop.yaml <dump.jsonl >by-file.jsonl
	diff -u by-name.jsonl by-file.jsonl
}

@test "the run id comes from DATASPOC_RUN_ID, else a new one" {
	DATASPOC_RUN_ID=$RID pipe-sink -q shop <dump.jsonl >plan.jsonl
	run -0 jq -r 'select(.type == "run") | .run_id' plan.jsonl
	assert_output "$RID"
	pipe-sink -q shop <dump.jsonl >plan2.jsonl
	run -0 jq -r 'select(.type == "run") | .run_id' plan2.jsonl
	assert_output --regexp '^[0-9]{8}T[0-9]{6}Z-[0-9]{3}[0-9a-f]{6}$'
	refute_output "$RID"
}

@test "-q: no progress; -f: the plan says the saved state was ignored" {
	run -0 --separate-stderr pipe-sink -q -f -r "$RID" shop <dump.jsonl
	assert_stderr ""
	printf '%s\n' "$output" >plan.jsonl
	run -0 jq -c 'select(.type == "run") | .full' plan.jsonl
	assert_output true
}

@test "-j 2: zstd with worker threads lands the same bytes" {
	pipe-sink -q -j 2 -r "$RID" shop <dump.jsonl >plan.jsonl
	bucket_data "${STAGE}orders_${RID}_0000.jsonl.zst" >got
	diff -u orders.jsonl got
}

# sink_threads J WANT: the threads of a pipe-sink -j J compressing 3.6 MB
# of one stream, once they are WANT (or after 5 s).
sink_threads() {
	local p n i=0
	mkfifo "in$1"
	pipe-sink -q -j "$1" shop <"in$1" >/dev/null 2>&1 &
	p=$!
	exec 7>"in$1"
	awk 'BEGIN { for (i = 0; i < 40000; i++)
		printf "{\"type\":\"RECORD\",\"stream\":\"orders\",\"record\":{\"a\":%d,\"p\":\"%060d\"}}\n", i, i }' >&7
	# (the workers start once the first job is full; the input stays open)
	while n=$(awk '/^Threads:/ { print $2 }' "/proc/$p/status") && [ "$n" != "$2" ] && [ $i -lt 50 ]; do
		i=$((i + 1))
		sleep 0.1
	done
	exec 7>&-
	wait "$p" || true
	echo "$n"
}

@test "-j: zstd gets that many worker threads (-j 0: none, compressing in pipe-sink's own)" {
	run -0 sink_threads 0 1
	assert_output 1
	run -0 sink_threads 2 3
	assert_output 3
}

@test "input without pipe-tap's end line: failure, staging emptied" {
	head -n 6 dump.jsonl >cut.jsonl
	run -1 --separate-stderr pipe-sink -q -r "$RID" shop <cut.jsonl
	assert_stderr "pipe-sink: input ended without pipe-tap's end line: the tap or pipe-tap did not finish"
	printf '%s\n' "$output" >plan.jsonl
	plan_lines end >got
	echo '{"type":"end","status":"failure","records":4,"error":"input ended without pipe-tap'"'"'s end line: the tap or pipe-tap did not finish"}' |
		expect_file got
	run -0 plan_lines file
	assert_output ""
	expect_staging_empty
}

@test "a failed run removes its staging folders, but not .dataspoc/staging, which every pipeline shares, nor the pipeline's, which each of its runs stages in" {
	head -n 6 dump.jsonl >cut.jsonl
	run -1 --separate-stderr pipe-sink -q -r "$RID" shop <cut.jsonl
	(cd "$BUCKET_DIR" && find . -printf '%P\n' | LC_ALL=C sort) >got
	printf '%s\n' "" .dataspoc .dataspoc/staging .dataspoc/staging/shop | expect_file got
}

@test "empty input: failure" {
	run -1 --separate-stderr pipe-sink -q -r "$RID" shop </dev/null
	assert_stderr "pipe-sink: input ended without pipe-tap's end line: the tap or pipe-tap did not finish"
	assert_line --index 0 --partial '{"type":"run",'
	assert_line --index 1 '{"type":"end","status":"failure","records":0,"error":"input ended without pipe-tap'"'"'s end line: the tap or pipe-tap did not finish"}'
	expect_staging_empty
}

@test "a failure end line from pipe-tap: failure with the tap's error" {
	head -n 6 dump.jsonl >failed.jsonl
	echo '{"type":"DATASPOC_TAP_END","status":"failure","exit_status":3,"error":"tap-shop exited with status 3"}' >>failed.jsonl
	run -1 --separate-stderr pipe-sink -q -r "$RID" shop <failed.jsonl
	assert_stderr "pipe-sink: tap-shop exited with status 3"
	printf '%s\n' "$output" >plan.jsonl
	plan_lines end >got
	echo '{"type":"end","status":"failure","records":4,"error":"tap-shop exited with status 3"}' | expect_file got
	run -0 plan_lines file
	assert_output ""
	expect_staging_empty
}

@test "input going on after the end line: failure" {
	{ cat dump.jsonl; echo '{"type":"RECORD","stream":"orders","record":{}}'; } >more.jsonl
	run -1 --separate-stderr pipe-sink -q -r "$RID" shop <more.jsonl
	assert_stderr "pipe-sink: <stdin>:9: input goes on after pipe-tap's end line"
	expect_staging_empty
}

# bad_line LINE ERROR [QUOTED]: LINE as the 3rd line of the stream fails
# with ERROR, then, unless QUOTED is "no", the start of LINE quoted (60
# bytes at most: a tap's log line on stdout is recognised).
bad_line() {
	local want=$2
	[ "${3:-}" = no ] || want="$2: '${1:0:60}$([ ${#1} -le 60 ] || echo ...)'"
	{ sed -n 1,2p dump.jsonl; printf '%s\n' "$1"; echo "$END_OK"; } >bad.jsonl
	run -1 --separate-stderr pipe-sink -q -r "$RID" shop <bad.jsonl
	assert_stderr "pipe-sink: $want"
	printf '%s\n' "$output" >plan.jsonl
	expect_staging_empty
	run -0 jq -r 'select(.type == "end") | .status + ": " + .error' plan.jsonl
	assert_output "failure: $want"
}

@test "malformed lines: the error names the line and the column" {
	bad_line '{"type":"RECORD","stream":"orders","record":{"id":9}' '<stdin>:3:53: invalid JSON: unexpected end of input'
	bad_line '{"type":"RECORD","stream":"orders","record":{"id":9}} x' '<stdin>:3:55: invalid JSON: unexpected character'
	bad_line '{"stream":"orders","record":{"id":9}}' '<stdin>:3:1: message without "type"'
	bad_line '{"type":7,"stream":"orders"}' '<stdin>:3:9: "type" is not a string'
	bad_line '[1,2]' '<stdin>:3:1: not a JSON object'
	bad_line '{"type":"RECORD","record":{"id":9}}' '<stdin>:3:1: RECORD without "stream"'
	bad_line '{"type":"RECORD","stream":5,"record":{}}' '<stdin>:3:27: RECORD "stream" is not a string'
	bad_line '{"type":"RECORD","stream":"orders"}' '<stdin>:3:1: RECORD without "record"'
	bad_line '{"type":"RECORD","stream":"orders","record":[1]}' '<stdin>:3:45: RECORD "record" is not an object'
	bad_line '{"type":"STATE"}' '<stdin>:3:1: STATE without "value"'
	bad_line '{"type":"STATE","value":[1]}' '<stdin>:3: STATE value is not a JSON object' no
	bad_line 'INFO tap starting, password=hunter2 ok' "<stdin>:3:1: invalid JSON: unexpected character: 'INFO tap starting, password=*** ok'" no
	bad_line '{"type":"SCHEMA","stream":"x"}' '<stdin>:3:1: SCHEMA without "schema"'
	bad_line '{"type":"SCHEMA","stream":"x","schema":{},"key_properties":"id"}' '<stdin>:3:60: SCHEMA "key_properties" is not an array'
}

@test "a line cut short at the end of the input: failure" {
	{ sed -n 1,2p dump.jsonl; printf '%s' '{"type":"RECORD","stream":"orders","rec'; } >cut.jsonl
	run -1 --separate-stderr pipe-sink -q -r "$RID" shop <cut.jsonl
	assert_stderr "pipe-sink: <stdin>:3: input ends in the middle of a line: the tap's output was cut short"
	expect_staging_empty
}

@test "Singer: any case of types, RECORD before SCHEMA and unknown types passed over; ACTIVATE_VERSION in the plan, a file per version" {
	cat >dump.jsonl <<-EOF
	{"type":"record","stream":"s","record":{"n":1},"version":5}

	{"type":"ACTIVATE_VERSION","stream":"s","version":5}
	{"type":"Schema","stream":"s","schema":{"properties":{"n":{"type":"integer"}}},"key_properties":[]}
	{"type":"METRIC","value":{"x":1}}
	{"type":"BATCH","stream":"s","filepath":"/etc/passwd"}
	{"type":"RECORD","stream":"s","record":{"n":2}}CR
	{"type":"state","value":{"n":2}}
	{"type":"SCHEMA","stream":"s","schema":{"properties":{"m":{"type":"string"}}},"key_properties":["m"]}
	$END_OK
	EOF
	sed -i 's/CR$/\r/' dump.jsonl
	run -0 --separate-stderr pipe-sink -q -r "$RID" shop <dump.jsonl
	printf '%s\n' "$output" >plan.jsonl
	plan_lines stream >got
	expect_file got <<-'EOF'
	{"type":"stream","stream":"s","dir":"raw/shop/s","records":2,"schema":{"properties":{"m":{"type":"string"}}},"key_properties":["m"],"activated":5}
	EOF
	plan_lines state >got
	echo '{"type":"state","value":{"n":2}}' | expect_file got
	# the record of version 5, then the one that names no version (kept)
	plan_lines file | jq -c '[.records, .version]' >got
	expect_file got <<-'EOF'
	[1,5]
	[1,null]
	EOF
	bucket_data "${STAGE}s_${RID}_0000.jsonl.zst" >got
	echo '{"n":1}' | expect_file got
	bucket_data "${STAGE}s_${RID}_0001.jsonl.zst" >got
	echo '{"n":2}' | expect_file got
}

@test "no STATE: the plan carries none" {
	grep -v STATE dump.jsonl >nostate.jsonl
	pipe-sink -q -r "$RID" shop <nostate.jsonl >plan.jsonl
	run -0 plan_lines state
	assert_output ""
}

@test "stream names are made safe, or refused" {
	{
		echo '{"type":"RECORD","stream":"../../etc","record":{}}'
		echo '{"type":"RECORD","stream":"a/b\\c","record":{}}'
		echo '{"type":"RECORD","stream":".x","record":{}}'
		echo "$END_OK"
	} >names.jsonl
	pipe-sink -q -r "$RID" shop <names.jsonl >plan.jsonl
	run -0 jq -r 'select(.type == "stream") | "\(.stream) \(.dir)"' plan.jsonl
	assert_output '../../etc raw/shop/_._.._etc
a/b\c raw/shop/a_b_c
.x raw/shop/_x'
	bucket_keys >keys
	expect_file keys <<-EOF
	${STAGE}_._.._etc_${RID}_0000.jsonl.zst
	${STAGE}_x_${RID}_0000.jsonl.zst
	${STAGE}a_b_c_${RID}_0000.jsonl.zst
	EOF
	rm -rf "$BUCKET_DIR"

	refused() {	# stream-json error
		printf '{"type":"RECORD","stream":%s,"record":{}}\n%s\n' "$1" "$END_OK" >bad.jsonl
		run -1 --separate-stderr pipe-sink -q -r "$RID" shop <bad.jsonl
		assert_stderr "pipe-sink: $2"
		expect_staging_empty
	}
	refused '""' '<stdin>:1: stream name cannot be used: the name is empty'
	refused '"a\u0001b"' '<stdin>:1: stream name cannot be used: the name holds control characters'
	refused '"a\u0000b"' '<stdin>:1: stream name cannot be used: the name holds control characters'
	printf '%s\n' '{"type":"RECORD","stream":"a/b","record":{}}' '{"type":"RECORD","stream":"a_b","record":{}}' "$END_OK" >bad.jsonl
	run -1 --separate-stderr pipe-sink -q -r "$RID" shop <bad.jsonl
	assert_stderr "pipe-sink: <stdin>:2: streams 'a/b' and 'a_b' would share the folder 'a_b'"
	expect_staging_empty
}

# ROUNDS rounds of one record to each of STREAMS streams, round robin.
round_robin() {	# STREAMS ROUNDS
	awk -v n="$1" -v r="$2" 'BEGIN {
		for (j = 1; j <= r; j++)
			for (i = 1; i <= n; i++)
				printf "{\"type\":\"RECORD\",\"stream\":\"s%02d\",\"record\":{\"r\":%d,\"pad\":\"%0200d\"}}\n", i, j, 0
	}'
	echo "$END_OK"
}

# Every stream's files, in plan order, hold its rounds 1..ROUNDS in order.
expect_rounds() {	# STREAMS ROUNDS [STREAM...]
	local n=$1 rounds=$2 s k
	shift 2
	seq 1 "$rounds" >want
	for s in "$@"; do
		run -0 jq -r --arg s "$s" 'select(.type == "file" and .stream == $s) | .staged' plan.jsonl
		for k in "${lines[@]}"; do
			bucket_data "$k"
		done | jq .r >got
		diff -u want got
	done
	run -0 jq -s '[.[] | select(.type == "stream") | .records] | add' plan.jsonl
	assert_output "$((n * rounds))"
}

@test "more streams than open files: the others wait in a spill file; one file per stream" {
	round_robin 70 30 >many.jsonl
	DATASPOC_PIPE_MAX_OPEN=8 pipe-sink -q -r "$RID" shop <many.jsonl >plan.jsonl
	run -0 jq -s -c '[.[] | select(.type == "file")] | length' plan.jsonl
	assert_output 70
	expect_rounds 70 30 s01 s08 s09 s35 s70
	# the spill file was never a name in TMPDIR, or is gone
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

@test "a low limit of open descriptors: fewer files are open at once, the others wait; every record lands" {
	round_robin 70 30 >many.jsonl
	# 48 descriptors, soft and hard: the default 256 files cannot all be
	# open, so pipe-sink opens what fits (24) instead of failing on EMFILE
	run -0 --separate-stderr bash -c 'ulimit -n 48 && exec pipe-sink -q -r "$1" shop <many.jsonl >plan.jsonl' _ "$RID"
	assert_stderr ""
	run -0 jq -s -c '[.[] | select(.type == "file")] | length' plan.jsonl
	assert_output 70
	expect_rounds 70 30 s01 s24 s25 s70
}

@test "more waiting than the spill may hold: the stream with the most takes a slot; files roll" {
	# 40 streams, 4 open: about 1.3 MB waits in all, the limit is 1 MB
	round_robin 40 150 >many.jsonl
	DATASPOC_PIPE_MAX_OPEN=4 DATASPOC_PIPE_SPILL_MB=1 pipe-sink -q -r "$RID" shop <many.jsonl >plan.jsonl
	run -0 jq -s -c '[.[] | select(.type == "file")] | length > 40' plan.jsonl
	assert_output true
	expect_rounds 40 150 s01 s04 s05 s23 s40
}

# STREAMS streams of ROUNDS records of about 2 kB, round robin: 30 x 300 is
# about 18 MB, more than the 16 MiB that may wait in the compressors' pool,
# so that chunks end early too (the stream holding the most ends its chunk).
wide_rounds() {	# STREAMS ROUNDS
	awk -v n="$1" -v r="$2" 'BEGIN {
		for (j = 1; j <= r; j++)
			for (i = 1; i <= n; i++)
				printf "{\"type\":\"RECORD\",\"stream\":\"s%02d\",\"record\":{\"r\":%d,\"pad\":\"%02000d\"}}\n", i, j, i * j * 7919
	}'
	echo "$END_OK"
}

# pipe-sink -j J with MAX_OPEN files open (and 4 MB that may wait for one)
# on many.jsonl, its staging moved to out.J.MAX_OPEN.
sink_many() {	# J MAX_OPEN
	DATASPOC_PIPE_MAX_OPEN=$2 DATASPOC_PIPE_SPILL_MB=4 pipe-sink -q -j "$1" -r "$RID" shop <many.jsonl >plan.jsonl
	expect_rounds 30 300 s01 s17 s30
	mv "$BUCKET_DIR/$STAGE" "out.$1.$2"
}

@test "many streams share the compressors: the files are byte for byte the same with -j 0, 1 and 2" {
	wide_rounds 30 300 >many.jsonl
	sink_many 0 64
	sink_many 1 64
	sink_many 2 64
	diff -r out.0.64 out.1.64
	diff -r out.0.64 out.2.64
	# 4 open files: streams wait, take a slot, files roll, the same way with threads
	sink_many 0 4
	sink_many 2 4
	diff -r out.0.4 out.2.4
	run -0 jq -s -c '[.[] | select(.type == "file")] | length > 30' plan.jsonl
	assert_output true
	# a file is a run of whole zstd frames, each checked
	local f=out.2.64/s01_${RID}_0000.jsonl.zst
	zstd -qt "$f"
	run -0 sh -c "zstd -l '$f' | awk 'NR == 2 { print (\$1 > 1) }'"
	assert_output 1
}

@test "a failure while streams wait: nothing staged, nothing left in TMPDIR" {
	{ round_robin 30 20 | sed '$d'; echo '{"type":"RECORD","stream":"s29","record":{"r":'; } >bad.jsonl
	run -1 --separate-stderr env DATASPOC_PIPE_MAX_OPEN=2 pipe-sink -q -r "$RID" shop <bad.jsonl
	assert_stderr "pipe-sink: <stdin>:601:47: invalid JSON: unexpected end of input: '{\"type\":\"RECORD\",\"stream\":\"s29\",\"record\":{\"r\":'"
	expect_staging_empty
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

@test "a record of a megabyte lands byte for byte" {
	{ head -c 600000 /dev/urandom | od -An -tx1 -v | tr -d ' \n'; echo; } | sed 's/.*/{"blob":"&"}/' >big.jsonl
	{ singer_records big <big.jsonl; echo "$END_OK"; } >dump.jsonl
	pipe-sink -q -r "$RID" shop <dump.jsonl >plan.jsonl
	bucket_data "${STAGE}big_${RID}_0000.jsonl.zst" >got
	cmp big.jsonl got
}

@test "gzip and none: the extension follows" {
	write_pipeline shop tap-shop true "compression: gzip"
	pipe-sink -q -r "$RID" shop <dump.jsonl >plan.jsonl
	run -0 jq -r 'select(.type == "file") | .final' plan.jsonl
	assert_output "raw/shop/orders/dt=2026-01-02/orders_${RID}_0000.jsonl.gz
raw/shop/users/dt=2026-01-02/users_${RID}_0000.jsonl.gz"
	bucket_cat "${STAGE}orders_${RID}_0000.jsonl.gz" >o.gz
	gzip -dc o.gz >got
	diff -u orders.jsonl got
	rm -rf "$BUCKET_DIR"
	write_pipeline shop tap-shop true "compression: none"
	pipe-sink -q -r "$RID" shop <dump.jsonl >plan.jsonl
	bucket_cat "${STAGE}orders_${RID}_0000.jsonl" >got
	diff -u orders.jsonl got
}

@test "incremental disabled: the plan replaces the streams' files" {
	write_pipeline shop tap-shop false
	pipe-sink -q -r "$RID" shop <dump.jsonl >plan.jsonl
	run -0 jq -c 'select(.type == "run") | [.incremental, .replace]' plan.jsonl
	assert_output '[false,true]'
}

@test "a bucket that cannot be written: failure, the plan says why" {
	mkdir -p "$BUCKET_DIR/.dataspoc"
	: >"$BUCKET_DIR/.dataspoc/staging"
	run -1 --separate-stderr pipe-sink -q -r "$RID" shop <dump.jsonl
	assert_stderr "pipe-sink: cannot create directory '$BUCKET_DIR/.dataspoc/staging/shop': Not a directory"
	run -0 jq -r 'select(.type == "end") | .status + ": " + .error' <<<"$output"
	assert_output "failure: cannot create '${STAGE}orders_${RID}_0000.jsonl.zst' in $BUCKET_URL: Not a directory"
}

@test "a bucket whose path holds \"': \": the plan's error ends with the cause the terminal said, not a piece of the path (#29)" {
	BUCKET_DIR="$BATS_TEST_TMPDIR/it': a lake"
	BUCKET_URL="file://$BUCKET_DIR"
	sed -i "s|^  bucket: .*|  bucket: \"$BUCKET_URL\"|" "$DATASPOC_PIPE_HOME/pipelines/shop.yaml"
	mkdir -p "$BUCKET_DIR/.dataspoc"
	: >"$BUCKET_DIR/.dataspoc/staging"
	run -1 --separate-stderr pipe-sink -q -r "$RID" shop <dump.jsonl
	assert_stderr "pipe-sink: cannot create directory '$BUCKET_DIR/.dataspoc/staging/shop': Not a directory"
	run -0 jq -r 'select(.type == "end") | .status + ": " + .error' <<<"$output"
	assert_output "failure: cannot create '${STAGE}orders_${RID}_0000.jsonl.zst' in $BUCKET_URL: Not a directory"
}

@test "stdout on a full device: exit 1, write error" {
	run -1 --separate-stderr sh -c 'pipe-sink -q -r "$1" shop <dump.jsonl >/dev/full' sh "$RID"
	assert_stderr "pipe-sink: write error: No space left on device"
}

# sel_yaml NAME TAP: a pipeline of TAP that selects stream orders.
sel_yaml() {
	{
		printf 'source:\n  tap: %s\n  streams: [orders]\n' "$2"
		printf 'destination:\n'
		bucket_yaml
		printf '  format: jsonl\nincremental:\n  enabled: true\n'
	} >"$DATASPOC_PIPE_HOME/pipelines/$1.yaml"
}

@test "a DATASPOC_TAP_SELECTED line counts only as line 1 of a pipeline that selects streams" {
	local sel='{"type":"DATASPOC_TAP_SELECTED","streams":["orders"]}'
	local forged="a DATASPOC_TAP_SELECTED line that pipe-tap did not write (a tap cannot select streams)"
	sel_yaml sel tap-shop
	# pipe-tap's own: users is dropped, with a warning
	{ echo "$sel"; cat dump.jsonl; } >in.jsonl
	run -0 --separate-stderr pipe-sink -q -r "$RID" sel <in.jsonl
	assert_stderr "pipe-sink: warning: dropped 1 record(s) of stream 'users', which was not selected"
	run -0 jq -r 'select(.type == "stream") | .stream' <<<"$output"
	assert_output orders
	rm -rf "$BUCKET_DIR"
	# a pipeline that selects nothing: pipe-tap never writes one, not even first
	run -1 --separate-stderr pipe-sink -q -r "$RID" shop <in.jsonl
	assert_stderr "pipe-sink: <stdin>:1:1: $forged"
	run -0 jq -r 'select(.type == "end") | .status + ": " + .error' <<<"$output"
	assert_output "failure: <stdin>:1:1: $forged"
	expect_staging_empty
	# anywhere but line 1 (a blank line first included), for any pipeline
	for p in sel shop; do
		{ echo "$sel"; sed -n 1,2p dump.jsonl; echo "$sel"; sed -n '3,$p' dump.jsonl; } >in.jsonl
		[ "$p" = sel ] || sed -i 1d in.jsonl
		run -1 --separate-stderr pipe-sink -q -r "$RID" "$p" <in.jsonl
		assert_stderr "pipe-sink: <stdin>:$([ "$p" = sel ] && echo 4 || echo 3):1: $forged"
		expect_staging_empty
		{ echo; echo "$sel"; cat dump.jsonl; } >in.jsonl
		run -1 --separate-stderr pipe-sink -q -r "$RID" "$p" <in.jsonl
		assert_stderr "pipe-sink: <stdin>:2:1: $forged"
		expect_staging_empty
	done
	# pipe-tap's line always names its streams
	{ echo '{"type":"DATASPOC_TAP_SELECTED"}'; cat dump.jsonl; } >in.jsonl
	run -1 --separate-stderr pipe-sink -q -r "$RID" sel <in.jsonl
	assert_stderr 'pipe-sink: <stdin>:1:1: a DATASPOC_TAP_SELECTED line without a "streams" array'
	expect_staging_empty
}

@test "run: a tap that prints a DATASPOC_TAP_SELECTED line fails the run; nothing published, state kept" {
	local forged="the tap's output, line LINE, column 1: a DATASPOC_TAP_SELECTED line that pipe-tap did not write (a tap cannot select streams)"
	local zzz='{"type":"DATASPOC_TAP_SELECTED","streams":["zzz"]}'
	local records='{"type":"RECORD","stream":"orders","record":{"id":8}}'
	local state='{"type":"STATE","value":{"bookmarks":{"orders":{"id":8}}}}'
	printf '%s\n' "$records" '{"type":"STATE","value":{"n":1}}' >"$FAKE_DIR/tap-shop/out"
	run -0 --separate-stderr dataspoc-pipe run shop
	bucket_snapshot | grep -v ' \.dataspoc/logs/' >before.snap
	# its first line, then mid-stream
	for at in 1 2; do
		if [ "$at" = 1 ]; then
			printf '%s\n' "$zzz" "$records" "$state" >"$FAKE_DIR/tap-shop/out"
		else
			printf '%s\n' "$records" "$zzz" "$state" >"$FAKE_DIR/tap-shop/out"
		fi
		run -1 --separate-stderr dataspoc-pipe run shop
		assert_stderr "dataspoc-pipe: run 'shop' failed: ${forged/LINE/$at}"
		bucket_snapshot | grep -v ' \.dataspoc/logs/' >after.snap
		diff -u before.snap after.snap
	done
	run -0 jq -c . "$BUCKET_DIR/.dataspoc/state/shop/state.json"
	assert_output '{"n":1}'
	# a pipeline that selects streams: pipe-tap's line is line 1, the tap's first is line 2
	cat >"$BATS_TEST_TMPDIR/bin/seltap-forge" <<-'SH'
	#!/bin/sh
	case " $* " in *" --about "* | *" --discover "*) exec seltap-sdk "$@" ;; esac
	echo '{"type":"DATASPOC_TAP_SELECTED","streams":["a","b"]}'
	exec seltap-sdk "$@"
	SH
	chmod +x "$BATS_TEST_TMPDIR/bin/seltap-forge"
	cat >"$DATASPOC_PIPE_HOME/pipelines/sdk.yaml" <<-YAML
	source:
	  tap: seltap-forge
	  streams: [a]
	destination:
	$(bucket_yaml)
	  format: jsonl
	YAML
	bucket_snapshot | grep -v ' \.dataspoc/logs/' >before.snap
	run -1 --separate-stderr dataspoc-pipe run sdk
	assert_stderr "dataspoc-pipe: run 'sdk' failed: ${forged/LINE/2}"
	bucket_snapshot | grep -v ' \.dataspoc/logs/' >after.snap
	diff -u before.snap after.snap
	run -0 jq -r '.status + ": " + .error' "$BUCKET_DIR/.dataspoc/logs/sdk/$(run_ids sdk).json"
	assert_output "failure: <stdin>:2:1: a DATASPOC_TAP_SELECTED line that pipe-tap did not write (a tap cannot select streams)"
}
