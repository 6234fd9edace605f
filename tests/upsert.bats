#!/usr/bin/env bats
# Upsert by key (issue #27): destination.load_method: upsert, pipe-merge
# between pipe-sink and pipe-commit, the table read back as DataSpoc Lens
# reads it (read_parquet('<location>/**/*.parquet', hive_partitioning=true,
# union_by_name=true)): one row per key, the last version the tap sent.

load helpers/common
use_local_lake
load helpers/upsert_scenarios

@test "upsert: updates replace, re-sent rows count once, later records win" {
	scenario_upsert_updates
}

@test "upsert: _sdc_deleted_at removes the key (hard_delete, the default), or keeps the row with it set (hard_delete: false)" {
	scenario_upsert_deletes
}

@test "upsert: a record without its key fails the run naming stream, record and property; nothing committed" {
	scenario_upsert_missing_key
}

@test "upsert: the key comes from destination.key_properties when the tap sends none; a stream with no key at all is refused" {
	scenario_upsert_key_fallback
}

@test "upsert: a key that changed between runs is refused; --full rebuilds the table by the new key" {
	scenario_upsert_key_changed
}

@test "upsert: format jsonl is a config error naming the file and line; append-only stays the default" {
	scenario_upsert_config_errors
}

@test "upsert: per-stream overrides: one stream upserts, another appends, in one pipeline" {
	scenario_upsert_per_stream
}

@test "upsert: a table landed append-only is refused until --full rebuilds it" {
	scenario_upsert_append_table
}

@test "upsert: singer-io tap-postgres LOG_BASED (recorded) replayed run after run: deletes leave, re-sent changes count once" {
	scenario_upsert_fixture_singer
}

@test "upsert: pipelinewise-tap-postgres LOG_BASED (recorded): awkward values survive the merge, the delete leaves" {
	scenario_upsert_fixture_pipelinewise
}

@test "upsert: random inserts, updates, deletes and re-sent rows over many runs, tables split in many files, equal an oracle after every run" {
	scenario_upsert_random
}

@test "upsert: kill -9 at random moments of a run: the lake is the table before or after it, never a duplicate or a lost row, and the next run recovers" {
	scenario_upsert_kill
}

# compact PIPELINE [STREAM]: pipe-merge -C between the lock and the commit, as a run has them
compact() {
	local id
	id=$(pipe-state new-run-id)
	pipe-state get -r "$id" "$1" >/dev/null &&
		DATASPOC_RUN_ID=$id pipe-merge -C ${2:+-s "$2"} "$1" >plan &&
		DATASPOC_RUN_ID=$id pipe-commit "$1" <plan >/dev/null ||
		{ DATASPOC_RUN_ID=$id pipe-commit -a "$1" </dev/null >/dev/null 2>&1; return 1; }
}

@test "upsert: pipe-merge -C merges an append-only table's small files; with upsert it turns the table into one row per key, the last versions kept, state untouched; again, nothing changes" {
	use_tap tap-cp
	lake_pipeline cp tap-cp true
	tap_sends tap-cp <<-'EOF'
	{"id":1,"name":"ana"}
	{"id":2,"name":"bo"}
	EOF
	run -0 --separate-stderr dataspoc-pipe run cp
	tap_sends tap-cp <<-'EOF'
	{"id":2,"name":"bo2"}
	{"id":3,"name":"cy"}
	{"id":1,"_sdc_deleted_at":"2026-12-01T00:00:00+00:00"}
	EOF
	run -0 --separate-stderr dataspoc-pipe run cp
	run -0 distinct_ok cp/users
	assert_output "5 3"
	# still append-only: its two small files merged, every row kept
	run -0 compact cp
	run -0 distinct_ok cp/users
	assert_output "5 3"
	lake_pipeline cp tap-cp true "load_method: upsert"
	bucket_cat .dataspoc/state/cp/state.json >state.before
	run -0 compact cp
	lens_rows cp/users >rows
	expect_file rows <<-'EOF'
	{"id":"2","name":"bo2"}
	{"id":"3","name":"cy"}
	EOF
	bucket_cat .dataspoc/state/cp/state.json | diff -u state.before -
	manifest_table cp/users | jq -c '{load_method, rows: .stats.total_rows}' >m
	expect_file m <<<'{"load_method":"upsert","rows":2}'
	run -0 compact cp
	lens_rows cp/users >rows2
	diff -u rows rows2
	# and the table takes upsert runs from there
	tap_sends tap-cp <<<'{"id":3,"name":"cy2"}'
	run -0 --separate-stderr dataspoc-pipe run cp
	lens_rows cp/users >rows
	expect_file rows <<-'EOF'
	{"id":"2","name":"bo2"}
	{"id":"3","name":"cy2"}
	EOF
}

@test "upsert: a run's records sorted a few at a time (DATASPOC_PIPE_MERGE_KEYS), chunk by chunk in spill files: the same table as the oracle" {
	export DATASPOC_PIPE_MERGE_KEYS=8
	scenario_upsert_random
}

@test "upsert: a delete is seen when the SCHEMA does not declare _sdc_deleted_at (it lands in the extra column)" {
	use_tap tap-ud
	lake_pipeline ud tap-ud true "load_method: upsert"
	{
		echo '{"type":"SCHEMA","stream":"users","schema":{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":["null","string"]}}},"key_properties":["id"]}'
		singer_records users <<-'EOF'
		{"id":1,"name":"ana"}
		{"id":2,"name":"bo"}
		{"id":2,"_sdc_deleted_at":"2026-12-01T00:00:00+00:00"}
		{"id":3,"name":"cy","_sdc_deleted_at":null}
		EOF
	} >"$FAKE_DIR/tap-ud/out"
	run -0 --separate-stderr dataspoc-pipe run ud
	lens_rows ud/users >rows
	expect_file rows <<-'EOF'
	{"id":"1","name":"ana"}
	{"id":"3","name":"cy"}
	EOF
}

@test "upsert: new keys above the table's land in a file of their own, none rewritten; an update rewrites only the file holding its key" {
	export DATASPOC_PIPE_MERGE_ROWS=5
	use_tap tap-lay
	lake_pipeline lay tap-lay true "load_method: upsert"
	seq 10 -1 1 | jq -c '{id: ., name: "a\(.)"}' | tap_sends tap-lay
	run -0 --separate-stderr dataspoc-pipe run lay
	bucket_files | LC_ALL=C sort >f1
	# two files of 5 rows, each named by its keys' range and rows
	[ "$(wc -l <f1)" -eq 2 ]
	[ "$(grep -c '_r[0-9a-v]*-[0-9a-v]*-5\.parquet$' f1)" -eq 2 ]
	seq 11 13 | jq -c '{id: ., name: "a\(.)"}' | tap_sends tap-lay
	run -0 --separate-stderr dataspoc-pipe run lay
	bucket_files | LC_ALL=C sort >f2
	comm -23 f1 f2 >gone
	expect_file gone </dev/null
	comm -13 f1 f2 >new
	[ "$(wc -l <new)" -eq 1 ]
	tap_sends tap-lay <<<'{"id":12,"name":"b12"}'
	run -0 --separate-stderr dataspoc-pipe run lay
	bucket_files | LC_ALL=C sort >f3
	comm -23 f2 f3 >gone
	diff -u new gone
	tap_sends tap-lay <<<'{"id":3,"name":"b3"}'
	run -0 --separate-stderr dataspoc-pipe run lay
	bucket_files | LC_ALL=C sort >f4
	comm -23 f3 f4 >gone
	[ "$(wc -l <gone)" -eq 1 ]
	grep -q "$(head -n 1 f1)" gone || grep -q "$(tail -n 1 f1)" gone
	lens_rows lay/users | jq -r '"\(.id) \(.name)"' | sort -n | paste -sd' ' >rows
	expect_file rows <<<'1 a1 2 a2 3 b3 4 a4 5 a5 6 a6 7 a7 8 a8 9 a9 10 a10 11 a11 12 b12 13 a13'
	run -0 distinct_ok lay/users
	[ "$(manifest_table lay/users | jq .stats.total_rows)" -eq 13 ]
}

@test "upsert: 16 neighbouring small files (new keys, run after run) are merged into one" {
	export DATASPOC_PIPE_MERGE_ROWS=160
	use_tap tap-sm
	lake_pipeline sm tap-sm true "load_method: upsert"
	for r in $(seq 0 16); do
		seq $((r * 2 + 1)) $((r * 2 + 2)) | jq -c '{id: ., name: "a\(.)"}' | tap_sends tap-sm
		run -0 --separate-stderr dataspoc-pipe run sm
		[ "$r" -eq 16 ] || [ "$(bucket_files | wc -l)" -eq $((r + 1)) ]
	done
	# runs 1-16 made 16 files of 2 rows (less than 160/16); run 17 merged them, its new keys with them
	bucket_files >f
	[ "$(wc -l <f)" -eq 1 ]
	grep -q -- '-34\.parquet$' f
	[ "$(lens_rows sm/users | wc -l)" -eq 34 ]
	run -0 distinct_ok sm/users
}

@test "upsert: a table of the hash layout of older versions (_h<node> files) is read, and rewritten by key range on its next run" {
	use_tap tap-old
	lake_pipeline old tap-old true
	printf '%s\n' 5 3 9 1 7 | jq -c '{id: ., name: "a\(.)"}' | tap_sends tap-old
	run -0 --separate-stderr dataspoc-pipe run old
	f=$(bucket_files)
	mv "$BUCKET_DIR/$f" "$BUCKET_DIR/${f%_*}_h0002.parquet"
	printf '%s\n' 4 2 | jq -c '{id: ., name: "a\(.)"}' | tap_sends tap-old
	run -0 --separate-stderr dataspoc-pipe run old
	f=$(bucket_files | grep -v _h0002)
	mv "$BUCKET_DIR/$f" "$BUCKET_DIR/${f%_*}_h0003.parquet"
	# node files 2 and 3: the two halves of the trie, their rows in no order
	lake_pipeline old tap-old true "load_method: upsert"
	tap_sends tap-old <<-'EOF'
	{"id":3,"name":"b3"}
	{"id":11,"name":"a11"}
	EOF
	run -0 --separate-stderr dataspoc-pipe run old
	bucket_files >f
	run grep -c _h f
	[ "$output" -eq 0 ]
	[ "$(grep -c '_r[0-9a-v]*-[0-9a-v]*-8\.parquet$' f)" -eq 1 ]
	lens_rows old/users | jq -r '"\(.id) \(.name)"' | sort -n | paste -sd' ' >rows
	expect_file rows <<<'1 a1 2 a2 3 b3 4 a4 5 a5 7 a7 9 a9 11 a11'
	[ "$(manifest_table old/users | jq .stats.total_rows)" -eq 8 ]
	# and runs on from there by key range
	tap_sends tap-old <<<'{"id":12,"name":"a12"}'
	run -0 --separate-stderr dataspoc-pipe run old
	[ "$(bucket_files | wc -l)" -eq 2 ]
	[ "$(lens_rows old/users | wc -l)" -eq 9 ]
}

@test "upsert: a property a record leaves out keeps the table's value (a TOASTed column an update left), one sent as null sets null, the run's earlier record fills a later one" {
	scenario_upsert_absent
}

@test "upsert: what a record leaves out, the run sorted in chunks of 3 records (DATASPOC_PIPE_MERGE_KEYS): filled from the key's records of the chunks before" {
	export DATASPOC_PIPE_MERGE_KEYS=3
	scenario_upsert_absent
}

@test "upsert: a stream whose name is long (160 bytes) gets file names that fit 255 bytes, its bounds cut shorter" {
	local name
	name=$(printf 's%.0s' $(seq 160))
	use_tap tap-long
	lake_pipeline long tap-long true "load_method: upsert"
	for r in 1 2; do
		{
			echo "$SCHEMA_ID" | sed "s/\"users\"/\"$name\"/"
			seq $((r * 3 - 2)) $((r * 3)) | jq -c '{id: ., name: "a\(.)"}' | singer_records "$name"
			echo '{"type":"STATE","value":{"n":1}}'
		} >"$FAKE_DIR/tap-long/out"
		run -0 --separate-stderr dataspoc-pipe run long
	done
	bucket_files >f
	[ "$(wc -l <f)" -eq 2 ]
	while IFS= read -r k; do
		[ "${#k}" -gt 0 ]
		base=${k##*/}
		[ "${#base}" -le 255 ]
	done <f
	[ "$(lens_rows "long/$name" | wc -l)" -eq 6 ]
}

@test "upsert: the rows a run does not touch are copied value for value (dates, date-times, booleans, doubles, escaped strings, objects, undeclared members), and read as before when a column widens" {
	use_tap tap-ty
	lake_pipeline ty tap-ty true "load_method: upsert"
	schema='{"type":"SCHEMA","stream":"t","schema":{"type":"object","properties":{"id":{"type":"integer"},"n":{"type":["null","integer"]},"d":{"type":["null","string"],"format":"date"},"ts":{"type":["null","string"],"format":"date-time"},"b":{"type":["null","boolean"]},"x":{"type":["null","number"]},"s":{"type":["null","string"]},"o":{"type":["null","object"]}}},"key_properties":["id"]}'
	{
		echo "$schema"
		singer_records t <<-'EOF'
		{"id":1,"n":-7,"d":"2026-12-01","ts":"2026-12-01T10:20:30.123456Z","b":true,"x":1.5,"s":"a \"q\" \\ é","o":{"k":[1,2]}}
		{"id":2,"n":null,"d":null,"ts":null,"b":false,"x":-0.001,"s":"","o":null,"more":"undeclared"}
		{"id":3,"n":9007199254740993,"x":1e300,"s":"line\nbreak"}
		EOF
	} >"$FAKE_DIR/tap-ty/out"
	run -0 --separate-stderr dataspoc-pipe run ty
	lens ty/t | jq -cS 'del(.dt)' | sort >before
	# a run touching one key: the other two rows copied
	{ echo "$schema"; singer_records t <<<'{"id":4,"n":1}'; } >"$FAKE_DIR/tap-ty/out"
	run -0 --separate-stderr dataspoc-pipe run ty
	# ids 1-4 in one file: 1-3 copied, as they read before
	lens ty/t | jq -cS 'del(.dt) | select(.id != "4")' | sort >after
	diff -u before after
	# a run whose n is text: the column widens, the rows copied read their n as text
	{ echo "$schema"; singer_records t <<<'{"id":4,"n":"four"}'; } >"$FAKE_DIR/tap-ty/out"
	run -0 --separate-stderr dataspoc-pipe run ty
	lens ty/t | jq -r '"\(.id) \(.n)"' | sort >n
	expect_file n <<-'EOF'
	1 -7
	2 null
	3 9007199254740993
	4 four
	EOF
	lens ty/t | jq -cS 'del(.dt, .n) | select(.id != "4")' | sort >after
	jq -cS 'del(.n)' before | sort | diff -u - after
}
