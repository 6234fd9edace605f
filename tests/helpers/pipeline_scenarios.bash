# helpers/pipeline_scenarios.bash: whole runs of `dataspoc-pipe run`, one function
# per scenario, each the body of a test.  They reach the bucket only through
# the bucket_* functions of helpers/common.bash, so tests/dataspoc-pipe.bats runs
# them on a local directory and an S3 suite can run them again on a server:
#
#   load helpers/common
#   load helpers/pipeline_scenarios
#   bucket_setup() { ... }   # and the other bucket_* functions
#   @test "full run" { scenario_full_run; }

# --- the shop: a tap with two streams -----------------------------------------

# Records that must land byte for byte: numbers past double precision, \u
# escapes (a surrogate pair, \u0000), raw UTF-8, nesting, spaces in odd places.
shop_records() {
	cat >orders.jsonl <<-'EOF'
	{"id":1,"big":12345678901234567891,"tiny":1.0e-400,"s":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \u0000"}
	{"id":2,"utf8":"日本語 é 😀","nested":{"a":[1,2.50,{"b":null}],"t":true,"f":false}}
	{ "id" : 3 , "spaced" : [ ] , "neg" : -0 }
	EOF
	cat >users.jsonl <<-'EOF'
	{"id":"u1","n":1E+2}
	{"id":"u2","n":-12345678901234567890123.5e10}
	EOF
}

# The Singer stream of tap-shop, streams interleaved, into FILE.
shop_stream() {
	{
		echo '{"type":"SCHEMA","stream":"orders","schema":{"type":"object","properties":{"id":{"type":"integer"},"s":{"type":["null","string"]}}},"key_properties":["id"]}'
		sed -n 1p orders.jsonl | singer_records orders
		echo '{"type":"SCHEMA","stream":"users","schema":{"type":"object","properties":{"id":{"type":"string"}}},"key_properties":["id"]}'
		sed -n 1p users.jsonl | singer_records users
		echo '{"type":"STATE","value":{"bookmarks":{"orders":{"id":1}}}}'
		sed -n 2,3p orders.jsonl | singer_records orders
		sed -n 2p users.jsonl | singer_records users
		echo '{"type":"STATE","value":{"bookmarks":{"orders":{"id":3,"big":12345678901234567891},"users":{"id":"u2"}}}}'
	} >"$1"
}

SHOP_STATE='{
  "bookmarks": {
    "orders": {
      "id": 3,
      "big": 12345678901234567891
    },
    "users": {
      "id": "u2"
    }
  }
}'

# A pipeline "shop" on tap-shop (source "shop"), extra destination lines as
# arguments.
shop_pipeline() {
	local incremental=${INCREMENTAL:-true}
	use_tap tap-shop
	shop_records
	shop_stream "$FAKE_DIR/tap-shop/out"
	write_pipeline shop tap-shop "$incremental" "$@"
}

# Run shop once, successfully.
shop_run() {
	run -0 --separate-stderr dataspoc-pipe run shop
}

# Two more orders and their STATE, for a second run.
shop_more() {
	cat >more.jsonl <<-'EOF'
	{"id":4,"big":98765432109876543210}
	{"id":5,"s":"\u00fc"}
	EOF
	{
		singer_records orders <more.jsonl
		echo '{"type":"STATE","value":{"bookmarks":{"orders":{"id":5},"users":{"id":"u2"}}}}'
	} >"$FAKE_DIR/tap-shop/out"
}

# The snapshot without the run logs, which every run adds to.
snapshot_but_logs() {
	bucket_snapshot | grep -v ' \.dataspoc/logs/' || true
}

# --- scenarios -------------------------------------------------------------------

scenario_full_run() {
	shop_pipeline
	local status=0
	dataspoc-pipe run shop >out 2>err || status=$?
	assert_equal "$status" 0
	expect_file out <<-'EOF'
	Running: shop
	Done! 5 records in 2 stream(s)
	  orders: 3
	  users: 2
	EOF
	expect_file err <<-'EOF'
	  orders: 3 records...
	  users: 2 records...
	EOF

	local rid day
	rid=$(run_ids shop)
	day=$(run_day "$rid")
	bucket_keys >keys
	expect_file keys <<-EOF
	.dataspoc/logs/shop/$rid.json
	.dataspoc/manifest.json
	.dataspoc/state/shop/state.json
	raw/shop/orders/dt=$day/orders_${rid}_0000.jsonl.zst
	raw/shop/users/dt=$day/users_${rid}_0000.jsonl.zst
	EOF
	bucket_data "raw/shop/orders/dt=$day/orders_${rid}_0000.jsonl.zst" >orders.got
	diff -u orders.jsonl orders.got
	bucket_data "raw/shop/users/dt=$day/users_${rid}_0000.jsonl.zst" >users.got
	diff -u users.jsonl users.got

	bucket_cat .dataspoc/state/shop/state.json >state.got
	printf '%s\n' "$SHOP_STATE" | expect_file state.got
	bucket_cat ".dataspoc/logs/shop/$rid.json" >log.json
	jq -c '{pipeline, run_id, status, streams, total_records, error}' log.json >log.got
	expect_file log.got <<-EOF
	{"pipeline":"shop","run_id":"$rid","status":"success","streams":{"orders":{"records":3},"users":{"records":2}},"total_records":5,"error":null}
	EOF
	# the tap ran without --state, and nothing is left in TMPDIR
	expect_file_empty "$FAKE_DIR/tap-shop/argv"
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

scenario_compression() {	# gzip | none
	local ext=
	[ "$1" = gzip ] && ext=.gz
	shop_pipeline "compression: $1"
	shop_run
	local rid day
	rid=$(run_ids shop)
	day=$(run_day "$rid")
	bucket_files >keys
	expect_file keys <<-EOF
	raw/shop/orders/dt=$day/orders_${rid}_0000.jsonl$ext
	raw/shop/users/dt=$day/users_${rid}_0000.jsonl$ext
	EOF
	bucket_cat "raw/shop/orders/dt=$day/orders_${rid}_0000.jsonl$ext" >orders.raw
	if [ "$1" = gzip ]; then
		gzip -dc orders.raw >orders.got
	else
		cp orders.raw orders.got
	fi
	diff -u orders.jsonl orders.got
	bucket_data "raw/shop/users/dt=$day/users_${rid}_0000.jsonl$ext" >users.got
	diff -u users.jsonl users.got
	jq -r '.tables["shop/orders"].compression' <(bucket_cat .dataspoc/manifest.json) >comp.got
	echo "$1" | expect_file comp.got
}

# Files roll over at destination.max_file_size: several files, each record
# once, in order, and each file closed at the first record that reached the
# limit.
scenario_rollover() {
	use_tap tap-shop
	local i
	for i in $(seq 1 1500); do
		printf '{"id":%d,"pad":"%s"}\n' "$i" "$(printf '%08d' "$i")"
	done >orders.jsonl
	singer_records orders <orders.jsonl >"$FAKE_DIR/tap-shop/out"
	write_pipeline shop tap-shop true "compression: none" "max_file_size: 1 KiB"
	shop_run
	assert_equal "$output" "Running: shop
Done! 1,500 records in 1 stream(s)
  orders: 1,500"
	assert_stderr "  orders: 1,500 records..."

	local rid day n k last size
	rid=$(run_ids shop)
	day=$(run_day "$rid")
	bucket_files >keys
	n=$(wc -l <keys)
	[ "$n" -gt 10 ]
	seq 0 $((n - 1)) | while read -r i; do
		printf 'raw/shop/orders/dt=%s/orders_%s_%04d.jsonl\n' "$day" "$rid" "$i"
	done | expect_file keys
	table_data raw/shop/orders >got
	diff -u orders.jsonl got
	last=$(tail -n 1 keys)
	for k in $(cat keys); do
		bucket_cat "$k" >one
		size=$(wc -c <one)
		if [ "$k" != "$last" ]; then
			[ "$size" -ge 1024 ] || { echo "$k: $size bytes, under the limit" >&2; return 1; }
			[ $((size - $(tail -n 1 one | wc -c))) -lt 1024 ] ||
				{ echo "$k: went on past the limit" >&2; return 1; }
		fi
	done
}

# zstd files roll over too, and each is a whole zstd frame.  (Compressed
# sizes are known only as the compressor emits them, in jobs of about a
# MiB: the input is big enough for several files whatever the job size.)
scenario_rollover_zstd() {
	use_tap tap-shop
	head -c 3000000 /dev/urandom | od -An -tx1 -v | tr -d ' ' |
		sed 's/.*/{"hex":"&"}/' >orders.jsonl
	sed 's/.*/{"type":"RECORD","stream":"orders","record":&}/' orders.jsonl >"$FAKE_DIR/tap-shop/out"
	write_pipeline shop tap-shop true "max_file_size: 256 KiB"
	shop_run
	local k n
	bucket_files >keys
	n=$(wc -l <keys)
	[ "$n" -ge 2 ]
	for k in $(cat keys); do
		bucket_cat "$k" >one.zst
		zstd -qt one.zst
	done
	table_data raw/shop/orders >got
	cmp orders.jsonl got
}

# state.json is the last STATE's value as `jq .` prints it (numbers kept).
scenario_state_pretty() {
	use_tap tap-shop
	local v='{"bookmarks":{"a":[],"b":{},"c":[1,"x",{"d":null,"e":[true,false]}],"f":1.5,"g":"日本 é","h":-3},"currently_syncing":null}'
	{
		echo '{"type":"STATE","value":{"bookmarks":{"old":1}}}'
		echo '{"type":"RECORD","stream":"s","record":{"id":1}}'
		printf '{"type":"STATE","value":%s}\n' "$v"
	} >"$FAKE_DIR/tap-shop/out"
	write_pipeline shop tap-shop
	shop_run
	bucket_cat .dataspoc/state/shop/state.json >state.got
	printf '%s\n' "$v" | jq . >state.want
	diff -u state.want state.got
}

# The second run passes the saved state with --state and lands new files
# beside the first run's.
scenario_incremental() {
	shop_pipeline
	shop_run
	bucket_snapshot >run1.snap
	shop_more
	run -0 --separate-stderr dataspoc-pipe run shop
	assert_equal "$output" "Running: shop
  Incremental mode (using previous checkpoint)
Done! 2 records in 1 stream(s)
  orders: 2"
	assert_stderr "  orders: 2 records..."

	# --state FILE, FILE holding the saved state, in a private folder
	# removed afterwards
	run -0 sed -n 1p "$FAKE_DIR/tap-shop/argv"
	assert_output "--state"
	run -0 sed -n 2p "$FAKE_DIR/tap-shop/argv"
	assert_output --regexp "^$TMPDIR/dataspoc-pipe\.[^/]+/state\.json\$"
	run -0 wc -l <"$FAKE_DIR/tap-shop/argv"
	assert_output 2
	echo '{"bookmarks":{"orders":{"id":3,"big":12345678901234567891},"users":{"id":"u2"}}}' |
		expect_file "$FAKE_DIR/tap-shop/state-in"
	run -0 ls -A "$TMPDIR"
	assert_output ""

	local r1 r2
	run_ids shop >ids
	r1=$(sed -n 1p ids)
	r2=$(sed -n 2p ids)
	[ -n "$r2" ] && [ "$r1" != "$r2" ]
	bucket_files >keys
	expect_file keys <<-EOF
	raw/shop/orders/dt=$(run_day "$r1")/orders_${r1}_0000.jsonl.zst
	raw/shop/orders/dt=$(run_day "$r2")/orders_${r2}_0000.jsonl.zst
	raw/shop/users/dt=$(run_day "$r1")/users_${r1}_0000.jsonl.zst
	EOF
	# the first run's files are untouched
	bucket_snapshot >run2.snap
	grep ' raw/' run1.snap >run1.data
	grep -F -f run1.data run2.snap >kept
	diff -u run1.data kept
	cat orders.jsonl more.jsonl >want
	table_data raw/shop/orders >got
	diff -u want got
	bucket_cat .dataspoc/state/shop/state.json >state.got
	expect_file state.got <<-'EOF'
	{
	  "bookmarks": {
	    "orders": {
	      "id": 5
	    },
	    "users": {
	      "id": "u2"
	    }
	  }
	}
	EOF
}

# --full: no --state; a failed full run leaves the state alone, a good one
# replaces it.
scenario_full_flag() {
	shop_pipeline
	shop_run
	bucket_snapshot >before.snap
	shop_more
	echo 1 >"$FAKE_DIR/tap-shop/exit"
	run -1 --separate-stderr dataspoc-pipe run shop --full
	assert_equal "$output" "Running: shop
  Full extraction (saved state ignored)
Records: 0 landed, 2 read"
	assert_stderr "dataspoc-pipe: run 'shop' failed: tap-shop exited with status 1"
	expect_file_empty "$FAKE_DIR/tap-shop/argv"
	grep -v ' \.dataspoc/logs/' before.snap >before.rest
	snapshot_but_logs >after.rest
	diff -u before.rest after.rest

	rm "$FAKE_DIR/tap-shop/exit"
	run -0 --separate-stderr dataspoc-pipe run --full shop
	assert_equal "$output" "Running: shop
  Full extraction (saved state ignored)
Done! 2 records in 1 stream(s)
  orders: 2"
	expect_file_empty "$FAKE_DIR/tap-shop/argv"
	bucket_cat .dataspoc/state/shop/state.json >state.got
	jq . <<<'{"bookmarks":{"orders":{"id":5},"users":{"id":"u2"}}}' | expect_file state.got
	# an incremental pipeline keeps what earlier runs landed
	cat orders.jsonl more.jsonl >want
	table_data raw/shop/orders >got
	diff -u want got
}

# incremental.enabled false: never --state; each run replaces the stream's
# previous snapshot.
scenario_snapshot_pipeline() {
	INCREMENTAL=false shop_pipeline
	shop_run
	assert_equal "$output" "Running: shop
Done! 5 records in 2 stream(s)
  orders: 3
  users: 2"
	local r1 r2
	r1=$(run_ids shop)
	cat >new-orders.jsonl <<-'EOF'
	{"id":1,"v":"second"}
	{"id":7,"v":"\u00e9"}
	EOF
	{
		singer_records orders <new-orders.jsonl
		echo '{"type":"STATE","value":{"bookmarks":{"orders":{"id":7}}}}'
	} >"$FAKE_DIR/tap-shop/out"
	run -0 --separate-stderr dataspoc-pipe run shop
	assert_equal "$output" "Running: shop
Done! 2 records in 1 stream(s)
  orders: 2"
	expect_file_empty "$FAKE_DIR/tap-shop/argv"
	r2=$(run_ids shop | sed -n 2p)
	bucket_files >keys
	expect_file keys <<-EOF
	raw/shop/orders/dt=$(run_day "$r2")/orders_${r2}_0000.jsonl.zst
	raw/shop/users/dt=$(run_day "$r1")/users_${r1}_0000.jsonl.zst
	EOF
	table_data raw/shop/orders >got
	diff -u new-orders.jsonl got
	bucket_cat .dataspoc/manifest.json >manifest.json
	jq -c '.tables["shop/orders"].stats | {total_rows, extractions, last_extraction_rows}' manifest.json >stats.got
	echo '{"total_rows":2,"extractions":2,"last_extraction_rows":2}' | expect_file stats.got
}

# The recorded output of the real tap-postgres, run 1 then run 2 with its
# state: ACTIVATE_VERSION passed over, the bookmarks (keyed by
# tap_stream_id) saved as they came.
scenario_tap_postgres() {
	mkdir -p "$FAKE_DIR/tap-postgres"
	{
		printf 'source:\n  tap: tap-postgres\n  config:\n    host: localhost\n    dbname: appdb\n'
		printf 'destination:\n'
		bucket_yaml
		printf '  format: jsonl\nincremental:\n  enabled: true\n'
	} >"$DATASPOC_PIPE_HOME/pipelines/pg.yaml"
	records_of() {
		sed -n 's/^{"type": "RECORD", "stream": "customers", "record": \(.*\), "version": [0-9]*, "time_extracted": "[^"]*"}$/\1/p' "$1"
	}
	records_of "$PG_FIXTURES/run1.jsonl" >run1.records
	records_of "$PG_FIXTURES/run2.jsonl" >run2.records
	run -0 wc -l run1.records run2.records
	assert_line --index 0 --regexp '^ *20 run1.records$'
	assert_line --index 1 --regexp '^ *7 run2.records$'

	run -0 --separate-stderr dataspoc-pipe run pg
	assert_equal "$output" "Running: pg
Done! 20 records in 1 stream(s)
  customers: 20"
	assert_stderr "  customers: 20 records..."
	bucket_cat .dataspoc/state/pg/state.json >state1.got
	diff -u "$PG_FIXTURES/state-after-run1.json" state1.got
	run -0 sed -n 1p "$FAKE_DIR/tap-postgres/argv"
	assert_output "--config"

	run -0 --separate-stderr dataspoc-pipe run pg
	assert_equal "$output" "Running: pg
  Incremental mode (using previous checkpoint)
Done! 7 records in 1 stream(s)
  customers: 7"
	jq -c . "$PG_FIXTURES/state-after-run1.json" | expect_file "$FAKE_DIR/tap-postgres/state-in"
	grep '"type": "STATE"' "$PG_FIXTURES/run2.jsonl" | tail -n 1 | jq .value >state2.want
	bucket_cat .dataspoc/state/pg/state.json >state2.got
	diff -u state2.want state2.got

	local r1 r2
	run_ids pg >ids
	r1=$(sed -n 1p ids)
	r2=$(sed -n 2p ids)
	bucket_files >keys
	expect_file keys <<-EOF
	raw/postgres/customers/dt=$(run_day "$r1")/customers_${r1}_0000.jsonl.zst
	raw/postgres/customers/dt=$(run_day "$r2")/customers_${r2}_0000.jsonl.zst
	EOF
	cat run1.records run2.records >want
	table_data raw/postgres/customers >got
	diff -u want got

	bucket_cat .dataspoc/manifest.json >manifest.json
	jq -S -c '.tables | map_values({source, table, columns, key_properties, format, stats: (.stats | {total_rows, extractions, last_extraction_rows})})' manifest.json >tables.got
	expect_file tables.got <<-'EOF'
	{"postgres/customers":{"columns":[{"name":"id","nullable":false,"type":"integer"},{"name":"name","nullable":true,"type":"string"},{"format":"date-time","name":"updated_at","nullable":true,"type":"string"}],"format":"jsonl","key_properties":["id"],"source":"postgres","stats":{"extractions":2,"last_extraction_rows":7,"total_rows":27},"table":"customers"}}
	EOF
}

# The manifest lists every table with its columns, keys and stats, and keeps
# the tables a run did not touch.
scenario_manifest() {
	shop_pipeline
	shop_run
	shop_more
	run -0 dataspoc-pipe run shop
	local r2
	r2=$(run_ids shop | sed -n 2p)
	bucket_cat .dataspoc/manifest.json >manifest.json
	jq -S -c '{version, tables: (.tables | map_values({source, table, columns, key_properties, format, stats: (.stats | {total_rows, extractions, last_extraction_rows})}))}' manifest.json >got
	expect_file got <<-'EOF'
	{"tables":{"shop/orders":{"columns":[{"name":"id","nullable":false,"type":"integer"},{"name":"s","nullable":true,"type":"string"}],"format":"jsonl","key_properties":["id"],"source":"shop","stats":{"extractions":2,"last_extraction_rows":2,"total_rows":5},"table":"orders"},"shop/users":{"columns":[{"name":"id","nullable":false,"type":"string"}],"format":"jsonl","key_properties":["id"],"source":"shop","stats":{"extractions":1,"last_extraction_rows":2,"total_rows":2},"table":"users"}},"version":"1.0"}
	EOF
	# times are ISO 8601 UTC; the last extraction is the second run's
	run -0 jq -r '.updated_at, .tables["shop/orders"].stats.last_extraction, .tables["shop/users"].stats.last_extraction' manifest.json
	assert_line --index 0 --regexp '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$'
	assert_line --index 1 --regexp '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$'
	[ "${lines[1]}" \> "${lines[2]}" ] || [ "${lines[1]}" = "${lines[2]}" ]
	run -0 jq -r '.tables["shop/orders"].last_run_id' manifest.json
	assert_output "$r2"
}

# A tap that exits 1 halfway: the run fails naming its status, the bucket is
# as before but for the failure's run log, and staging is clean.
scenario_tap_fails() {
	shop_pipeline
	shop_run
	bucket_snapshot >before.snap
	shop_more
	echo 1 >"$FAKE_DIR/tap-shop/exit"
	echo 'tap-shop: connection reset' >"$FAKE_DIR/tap-shop/stderr"
	run -1 --separate-stderr dataspoc-pipe run shop
	assert_equal "$output" "Running: shop
  Incremental mode (using previous checkpoint)
Records: 0 landed, 2 read"
	assert_stderr "dataspoc-pipe: the tap's last words:
  | tap-shop: connection reset
dataspoc-pipe: run 'shop' failed: tap-shop exited with status 1"

	local r2
	r2=$(run_ids shop | sed -n 2p)
	[ -n "$r2" ]
	bucket_snapshot >after.snap
	grep -v " \.dataspoc/logs/shop/$r2\.json\$" after.snap >rest.snap
	diff -u before.snap rest.snap
	[ "$(wc -l <after.snap)" -eq $(($(wc -l <before.snap) + 1)) ]
	bucket_cat ".dataspoc/logs/shop/$r2.json" >log.json
	# nothing landed; what the run read is said apart (#29 item 5)
	jq -c '{pipeline, run_id, status, total_records, records_read, error, tap_stderr}' log.json >log.got
	expect_file log.got <<-EOF
	{"pipeline":"shop","run_id":"$r2","status":"failure","total_records":0,"records_read":2,"error":"tap-shop exited with status 1","tap_stderr":["tap-shop: connection reset"]}
	EOF
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

# A malformed line: the error names the line and column and quotes the
# line's start, nothing is committed.  $1 the bad line (60 bytes at most),
# $2 the error expected of pipe-sink, before the quote.
scenario_malformed() {
	local error="$2: '$1'" said
	# the driver's words: "<stdin>:L:C: " is the tap's output
	said=$(printf '%s\n' "$error" | sed "s/^<stdin>:\([0-9]*\):\([0-9]*\): /the tap's output, line \1, column \2: /")
	shop_pipeline
	shop_run
	bucket_snapshot >before.snap
	{
		echo '{"type":"RECORD","stream":"orders","record":{"id":8}}'
		echo '{"type":"STATE","value":{"bookmarks":{"orders":{"id":8}}}}'
		printf '%s' "$1"
	} >"$FAKE_DIR/tap-shop/out"
	run -1 --separate-stderr dataspoc-pipe run shop
	assert_equal "$output" "Running: shop
  Incremental mode (using previous checkpoint)
Records: 0 landed, 1 read"
	assert_stderr "dataspoc-pipe: run 'shop' failed: $said"
	grep -v ' \.dataspoc/logs/' before.snap >before.rest
	snapshot_but_logs >after.rest
	diff -u before.rest after.rest
	local r2
	r2=$(run_ids shop | sed -n 2p)
	bucket_cat ".dataspoc/logs/shop/$r2.json" >log.json
	run -0 jq -r '.status + ": " + .error' log.json
	assert_output "failure: $error"
}

# The folders of the test's folder, the bucket aside.
outside() {
	find "$BATS_TEST_TMPDIR" -path "$BATS_TEST_TMPDIR/bucket" -prune -o -type d -print |
		LC_ALL=C sort
}

# Stream names from the tap cannot leave their table folder.
scenario_stream_names() {
	use_tap tap-shop
	{
		echo '{"type":"RECORD","stream":"../../etc","record":{"n":1}}'
		echo '{"type":"RECORD","stream":"a/b","record":{"n":2}}'
		echo '{"type":"RECORD","stream":"../../../../../../tmp/x","record":{"n":3}}'
		echo '{"type":"RECORD","stream":"..","record":{"n":4}}'
		echo '{"type":"RECORD","stream":".hidden","record":{"n":5}}'
		echo '{"type":"RECORD","stream":"\u002e\u002e\u002fup","record":{"n":6}}'
	} >"$FAKE_DIR/tap-shop/out"
	write_pipeline shop tap-shop
	outside >outside.before
	shop_run
	assert_equal "$output" 'Running: shop
Done! 6 records in 6 stream(s)
  ../../etc: 1
  a/b: 1
  ../../../../../../tmp/x: 1
  ..: 1
  .hidden: 1
  ../up: 1'
	local rid day
	rid=$(run_ids shop)
	day=$(run_day "$rid")
	bucket_files >keys
	expect_file keys <<-EOF
	raw/shop/_./dt=$day/_._${rid}_0000.jsonl.zst
	raw/shop/_._.._.._.._.._.._tmp_x/dt=$day/_._.._.._.._.._.._tmp_x_${rid}_0000.jsonl.zst
	raw/shop/_._.._etc/dt=$day/_._.._etc_${rid}_0000.jsonl.zst
	raw/shop/_._up/dt=$day/_._up_${rid}_0000.jsonl.zst
	raw/shop/_hidden/dt=$day/_hidden_${rid}_0000.jsonl.zst
	raw/shop/a_b/dt=$day/a_b_${rid}_0000.jsonl.zst
	EOF
	outside >outside.after
	diff -u outside.before outside.after
}

# --- kill -9 of each stage --------------------------------------------------------

# Start `dataspoc-pipe run shop` in the background with tap-shop blocked
# after its first records; DRIVER is its pid.
start_blocked_run() {
	shop_pipeline
	shop_run
	bucket_snapshot >before.snap
	shop_more
	mv "$FAKE_DIR/tap-shop/out" "$FAKE_DIR/tap-shop/after"
	echo '{"type":"RECORD","stream":"orders","record":{"id":"first"}}' >"$FAKE_DIR/tap-shop/out"
	: >"$FAKE_DIR/tap-shop/block"
	rm -f "$FAKE_DIR/tap-shop/ready" "$FAKE_DIR/tap-shop/release"
	dataspoc-pipe run shop >run.out 2>run.err &
	DRIVER=$!
	BG_PIDS="$BG_PIDS $DRIVER"
	wait_for "$FAKE_DIR/tap-shop/ready"
	read -r TAP_PID PIPE_TAP_PID <"$FAKE_DIR/tap-shop/pid"
}

# Let the tap go on, wait for the driver; its status in DRIVER_STATUS.
finish_run() {
	: >"$FAKE_DIR/tap-shop/release"
	DRIVER_STATUS=0
	wait "$DRIVER" || DRIVER_STATUS=$?
	wait_until no_process pipe-tap
	wait_until no_process pipe-sink
	wait_until no_process pipe-commit
}

# The next run (a tap with nothing to say) recovers; then the bucket must be
# as it was before the killed run: the old state, no new visible file.
# $1: what the recovering run may warn about on stderr.
expect_recovered_to_old() {
	rm -f "$FAKE_DIR/tap-shop/block" "$FAKE_DIR/tap-shop/after"
	: >"$FAKE_DIR/tap-shop/out"
	run -0 --separate-stderr dataspoc-pipe run shop
	assert_equal "$output" "Running: shop
  Incremental mode (using previous checkpoint)
Done! 0 records in 0 stream(s)"
	assert_stderr "${1:-}"
	grep -v ' \.dataspoc/logs/' before.snap >before.rest
	snapshot_but_logs >after.rest
	diff -u before.rest after.rest
	table_data raw/shop/orders >got
	diff -u orders.jsonl got
}

scenario_kill_pipe_tap() {
	start_blocked_run
	[ "$(cat "/proc/$PIPE_TAP_PID/comm")" = pipe-tap ]
	kill -9 "$PIPE_TAP_PID"
	finish_run
	assert_equal "$DRIVER_STATUS" 1
	run -0 cat run.err
	assert_line "dataspoc-pipe: run 'shop' failed: pipe-tap was killed by signal 9"
	refute_line --partial 'pipe-tap: '
	refute_line --partial 'pipe-sink: '
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	expect_recovered_to_old
}

scenario_kill_tap() {
	start_blocked_run
	kill -9 "$TAP_PID"
	finish_run
	assert_equal "$DRIVER_STATUS" 1
	run -0 cat run.err
	assert_line "dataspoc-pipe: run 'shop' failed: tap-shop was killed by signal 9 (Killed)"
	refute_line --partial 'pipe-tap: '
	refute_line --partial 'pipe-sink: '
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	expect_recovered_to_old
}

scenario_kill_pipe_sink() {
	start_blocked_run
	local sink
	wait_until pid_of pipe-sink >/dev/null
	sink=$(pid_of pipe-sink)
	kill -9 "$sink"
	finish_run
	assert_equal "$DRIVER_STATUS" 1
	run -0 cat run.err
	assert_line "dataspoc-pipe: run 'shop' failed: pipe-sink was killed by signal 9"
	refute_line --partial 'pipe-tap: '
	refute_line --partial 'pipe-sink: '
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	expect_recovered_to_old
}

# The driver itself: pipe-tap sees it go and stops the tap, which is never
# released; pipe-sink, cut short, removes what it staged; nothing commits,
# and the next run takes over the dead run's lock.
scenario_kill_driver() {
	start_blocked_run
	local rid
	wait_until bucket_exists .dataspoc/state/shop/lock
	rid=$(bucket_cat .dataspoc/state/shop/lock | jq -r .run_id)
	kill -9 "$DRIVER"
	DRIVER_STATUS=0
	wait "$DRIVER" || DRIVER_STATUS=$?
	assert_equal "$DRIVER_STATUS" 137
	wait_until dead "$TAP_PID"
	wait_until no_process pipe-tap
	wait_until no_process pipe-sink
	[ ! -e "$FAKE_DIR/tap-shop/release" ]
	run -0 bucket_keys ".dataspoc/staging/shop/$rid/"
	assert_output ""
	expect_recovered_to_old "dataspoc-pipe: warning: pipeline 'shop': taking over the lock of run $rid (pid $DRIVER on $(hostname)), which is no longer running
dataspoc-pipe: warning: run $rid ended without its log (killed: no process of it was left): logged as failed"
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
}

# SIGTERM to the driver (a scheduler stopping it): every stage stops, the
# run fails with 143, the bucket is as before but for the failure's log.
scenario_sigterm() {
	start_blocked_run
	local rid
	wait_until bucket_exists .dataspoc/state/shop/lock
	rid=$(bucket_cat .dataspoc/state/shop/lock | jq -r .run_id)
	kill -TERM "$DRIVER"
	DRIVER_STATUS=0
	wait "$DRIVER" || DRIVER_STATUS=$?
	assert_equal "$DRIVER_STATUS" 143
	wait_until dead "$TAP_PID"
	wait_until no_process pipe-tap
	wait_until no_process pipe-sink
	run -0 cat run.out
	assert_output "Running: shop
  Incremental mode (using previous checkpoint)"
	run -0 cat run.err
	assert_line "dataspoc-pipe: run 'shop' failed: interrupted by SIGTERM"
	bucket_snapshot >after.snap
	grep -v " \.dataspoc/logs/shop/$rid\.json\$" after.snap >rest.snap
	diff -u before.snap rest.snap
	bucket_cat ".dataspoc/logs/shop/$rid.json" >log.json
	run -0 jq -r '.status + ": " + .error' log.json
	assert_output "failure: interrupted by SIGTERM"
}

# pipe-commit killed in mid-commit (held up by a manifest lock the test
# holds): the run's files and state are out, the rest is pending; the next
# run finishes the commit, every record landed exactly once.
scenario_kill_pipe_commit() {
	shop_pipeline
	shop_run
	shop_more
	local holder rid commit
	sleep 1000 &
	holder=$!
	BG_PIDS="$BG_PIDS $holder"
	printf '{"run_id": "20000101T000000Z-aaaaaa", "host": "%s", "pid": %d, "started_at": "2000-01-01T00:00:00Z", "expires_at": "'"$LIVE_UNTIL"'"}\n' \
		"$(hostname)" "$holder" | bucket_put .dataspoc/manifest.lock
	dataspoc-pipe run shop >run.out 2>run.err &
	DRIVER=$!
	BG_PIDS="$BG_PIDS $DRIVER"
	state_is_new() {
		bucket_cat .dataspoc/state/shop/state.json 2>/dev/null | grep -q '"id": 5'
	}
	wait_until state_is_new
	wait_until pid_of pipe-commit >/dev/null
	commit=$(pid_of pipe-commit)
	rid=$(bucket_keys .dataspoc/state/shop/pending/ | sed -n 's|.*/\(.*\)\.json$|\1|p')
	bucket_exists ".dataspoc/state/shop/pending/$rid.json"
	bucket_cat ".dataspoc/state/shop/pending/$rid.json" >pending.got
	jq -r 'select(.type == "run") | .run_id' pending.got >pending.rid
	echo "$rid" | expect_file pending.rid
	kill -9 "$commit"
	DRIVER_STATUS=0
	wait "$DRIVER" || DRIVER_STATUS=$?
	assert_equal "$DRIVER_STATUS" 1
	run -0 cat run.err
	assert_line "dataspoc-pipe: the commit of run $rid is pending; the next run of 'shop' finishes it"
	assert_line "dataspoc-pipe: run 'shop' failed: the commit did not finish (pipe-commit was killed by signal 9)"
	# the driver survived the failed commit: it released the lock
	run -1 bucket_exists .dataspoc/state/shop/lock

	bucket_rm .dataspoc/manifest.lock
	: >"$FAKE_DIR/tap-shop/out"
	run -0 --separate-stderr dataspoc-pipe run shop
	assert_equal "$output" "Running: shop
  Incremental mode (using previous checkpoint)
Done! 0 records in 0 stream(s)"
	assert_stderr "dataspoc-pipe: warning: finishing the commit of run $rid, which was interrupted"
	no_pending shop
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	cat orders.jsonl more.jsonl >want
	table_data raw/shop/orders >got
	diff -u want got
	bucket_cat ".dataspoc/logs/shop/$rid.json" >log.json
	run -0 jq -r '.status + " " + (.total_records | tostring)' log.json
	assert_output "success 2"
	bucket_cat .dataspoc/manifest.json >manifest.json
	run -0 jq -r '.tables["shop/orders"].stats | "\(.total_rows) \(.extractions)"' manifest.json
	assert_output "5 2"
}

# A commit cut short by hand: the stages run one by one, pending.json is
# written from the plan and only the first file is moved.  The next run
# finishes it: the new state and every record exactly once.
scenario_partial_commit() {
	shop_pipeline
	shop_run
	shop_more
	cat >>"$FAKE_DIR/tap-shop/out" <<-'EOF'
	{"type":"RECORD","stream":"users","record":{"id":"u3"}}
	EOF
	local rid staged final dead
	rid=$(new_run_id)
	# the stages' lock names a process that is gone by the next run
	sh -c 'exit 0' &
	dead=$!
	wait "$dead"
	DATASPOC_PIPE_PID=$dead pipe-state get -r "$rid" shop >state.line
	pipe-tap shop <state.line >dump.jsonl
	pipe-sink -q -r "$rid" shop <dump.jsonl >plan.jsonl
	run -0 jq -r 'select(.type == "file") | .final' plan.jsonl
	[ "${#lines[@]}" -eq 2 ]
	bucket_put .dataspoc/state/shop/pending.json <plan.jsonl
	staged=$(jq -r 'select(.type == "file") | .staged' plan.jsonl | head -n 1)
	final=$(jq -r 'select(.type == "file") | .final' plan.jsonl | head -n 1)
	bucket_cat "$staged" | bucket_put "$final"
	bucket_rm "$staged"

	: >"$FAKE_DIR/tap-shop/out"
	run -0 --separate-stderr dataspoc-pipe run shop
	assert_stderr "dataspoc-pipe: warning: pipeline 'shop': taking over the lock of run $rid (pid $dead on $(hostname)), which is no longer running
dataspoc-pipe: warning: finishing the commit of run $rid, which was interrupted"
	cat orders.jsonl more.jsonl >want
	table_data raw/shop/orders >got
	diff -u want got
	{ cat users.jsonl; echo '{"id":"u3"}'; } >want
	table_data raw/shop/users >got
	diff -u want got
	bucket_cat .dataspoc/state/shop/state.json >state.got
	jq . <<<'{"bookmarks":{"orders":{"id":5},"users":{"id":"u2"}}}' | expect_file state.got
	no_pending shop
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
}

# --- locks -------------------------------------------------------------------------

lock_json() {	# run_id host pid started expires [host_id]
	if [ $# -ge 6 ]; then
		printf '{"run_id": "%s", "host": "%s", "host_id": "%s", "pid": %s, "started_at": "%s", "expires_at": "%s"}\n' \
			"$1" "$2" "$6" "$3" "$4" "$5"
	else
		printf '{"run_id": "%s", "host": "%s", "pid": %s, "started_at": "%s", "expires_at": "%s"}\n' "$@"
	fi
}

# A lock left by a dead process on this host is taken over at once.
scenario_lock_dead_holder() {
	shop_pipeline
	local dead
	sh -c 'exit 0' &
	dead=$!
	wait "$dead"
	lock_json 20260101T000000Z-dead00 "$(hostname)" "$dead" 2026-01-01T00:00:00Z "$LIVE_UNTIL" "$(this_host_id)" |
		bucket_put .dataspoc/state/shop/lock
	shop_run
	assert_equal "$output" "Running: shop
Done! 5 records in 2 stream(s)
  orders: 3
  users: 2"
	assert_stderr "dataspoc-pipe: warning: pipeline 'shop': taking over the lock of run 20260101T000000Z-dead00 (pid $dead on $(hostname)), which is no longer running
dataspoc-pipe: warning: run 20260101T000000Z-dead00 ended without its log (killed: no process of it was left): logged as failed
  orders: 3 records...
  users: 2 records..."
	run -1 bucket_exists .dataspoc/state/shop/lock
	bucket_exists .dataspoc/state/shop/state.json
}

# A lock held by a live process refuses the run and changes nothing.
scenario_lock_live_holder() {
	shop_pipeline
	shop_run
	local holder
	sleep 1000 &
	holder=$!
	BG_PIDS="$BG_PIDS $holder"
	lock_json 20260101T000000Z-a1b2c3 "$(hostname)" "$holder" 2026-01-01T00:00:00Z "$LIVE_UNTIL" |
		bucket_put .dataspoc/state/shop/lock
	bucket_snapshot >before.snap
	shop_more
	run -75 --separate-stderr dataspoc-pipe run shop
	assert_equal "$output" "Running: shop"
	assert_stderr "dataspoc-pipe: run 'shop' failed: pipeline 'shop' is locked by run 20260101T000000Z-a1b2c3 (pid $holder on $(hostname), since 2026-01-01T00:00:00Z, until ${LIVE_UNTIL}); if that run is gone, use 'pipe-state unlock shop'"
	bucket_snapshot >after.snap
	diff -u before.snap after.snap
	run -0 cat "$FAKE_DIR/tap-shop/runs"
	assert_output "run"
}

# A lock from another host is taken over only once it has expired.
scenario_lock_other_host() {
	shop_pipeline
	lock_json 20260101T000000Z-0ther0 elsewhere.example 1 2026-01-01T00:00:00Z "$LIVE_UNTIL" |
		bucket_put .dataspoc/state/shop/lock
	bucket_snapshot >before.snap
	run -75 --separate-stderr dataspoc-pipe run shop
	assert_stderr "dataspoc-pipe: run 'shop' failed: pipeline 'shop' is locked by run 20260101T000000Z-0ther0 (pid 1 on elsewhere.example, since 2026-01-01T00:00:00Z, until ${LIVE_UNTIL}); if that run is gone, use 'pipe-state unlock shop'"
	bucket_snapshot >after.snap
	diff -u before.snap after.snap

	lock_json 20260101T000000Z-0ther0 elsewhere.example 1 2026-01-01T00:00:00Z 2026-01-01T06:00:00Z |
		bucket_put .dataspoc/state/shop/lock
	shop_run
	assert_stderr "dataspoc-pipe: warning: pipeline 'shop': taking over the lock of run 20260101T000000Z-0ther0 (pid 1 on elsewhere.example), which expired at 2026-01-01T06:00:00Z
dataspoc-pipe: warning: run 20260101T000000Z-0ther0 ended without its log (killed or cut off: its lock expired): logged as failed
  orders: 3 records...
  users: 2 records..."
	run -1 bucket_exists .dataspoc/state/shop/lock
}

# Two pipelines into one bucket at the same time: each its own state, and
# the manifest keeps both tables.
scenario_two_pipelines() {
	local t
	for t in alpha beta; do
		use_tap "tap-$t"
		{
			echo "{\"type\":\"RECORD\",\"stream\":\"$t\",\"record\":{\"from\":\"$t\"}}"
			echo "{\"type\":\"STATE\",\"value\":{\"bookmarks\":{\"$t\":1}}}"
		} >"$FAKE_DIR/tap-$t/out"
		: >"$FAKE_DIR/tap-$t/block"
		write_pipeline "$t" "tap-$t"
	done
	dataspoc-pipe run alpha >alpha.out 2>alpha.err &
	local a=$!
	dataspoc-pipe run beta >beta.out 2>beta.err &
	local b=$!
	BG_PIDS="$BG_PIDS $a $b"
	wait_for "$FAKE_DIR/tap-alpha/ready"
	wait_for "$FAKE_DIR/tap-beta/ready"
	: >"$FAKE_DIR/tap-alpha/release"
	: >"$FAKE_DIR/tap-beta/release"
	local sa=0 sb=0
	wait "$a" || sa=$?
	wait "$b" || sb=$?
	assert_equal "$sa $sb" "0 0"
	for t in alpha beta; do
		expect_file "$t.out" <<-EOF
		Running: $t
		Done! 1 record in 1 stream(s)
		  $t: 1
		EOF
		bucket_cat ".dataspoc/state/$t/state.json" >"$t.state"
		jq . <<<"{\"bookmarks\":{\"$t\":1}}" | expect_file "$t.state"
		echo "{\"from\":\"$t\"}" >want
		table_data "raw/$t/$t" >got
		diff -u want got
	done
	bucket_cat .dataspoc/manifest.json >manifest.json
	run -0 jq -r '.tables | keys[]' manifest.json
	assert_output "alpha/alpha
beta/beta"
}

# --- config errors ---------------------------------------------------------------------

# Exit 2, one line naming the problem, nothing written anywhere.
# $1 the pipeline name to run, $2 the stderr expected (a glob pattern).
expect_config_error() {
	run -2 --separate-stderr dataspoc-pipe run "$1"
	assert_equal "$output" ""
	assert_equal "${#stderr_lines[@]}" 1
	# shellcheck disable=SC2053
	[[ $stderr == $2 ]] || assert_stderr "$2"
	bucket_untouched
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

# A tap that is not there (cron's PATH, often): exit 2, one line, and a
# failed run in the bucket, so that status and logs say so.
scenario_missing_tap() {
	write_pipeline shop tap-nowhere
	run -2 --separate-stderr dataspoc-pipe run shop
	assert_equal "$output" ""
	assert_stderr "dataspoc-pipe: run 'shop' failed: tap-nowhere not found on PATH — install it or set source.tap"
	run -0 bucket_keys
	assert_output --regexp '^\.dataspoc/logs/shop/[0-9]{8}T[0-9]{6}Z-[0-9a-f]{9}\.json$'
	bucket_cat "$output" | jq -c '{status, total_records, error}' >log.got
	expect_file log.got <<-'EOF'
	{"status":"failure","total_records":0,"error":"tap-nowhere not found on PATH — install it or set source.tap"}
	EOF
	run -0 --separate-stderr dataspoc-pipe status -o json shop
	run -0 jq -r '.[0].status' <<<"$output"
	assert_output failure
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

scenario_unknown_key() {
	use_tap tap-shop
	write_pipeline shop tap-shop true "compresion: gzip"
	expect_config_error shop "dataspoc-pipe: $DATASPOC_PIPE_HOME/pipelines/shop.yaml:6:3: unknown key 'compresion' in destination: did you mean 'compression'? (expected one of: bucket, path, compression, *)"
}

scenario_wrong_type() {
	use_tap tap-shop
	write_pipeline shop tap-shop '[yes]'
	expect_config_error shop "dataspoc-pipe: $DATASPOC_PIPE_HOME/pipelines/shop.yaml:7:12: incremental.enabled must be true or false"
}

scenario_invalid_name() {
	use_tap tap-shop
	write_pipeline shop tap-shop
	expect_config_error ../pipelines/shop "dataspoc-pipe: invalid pipeline name '../pipelines/shop' (letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64)"
}
