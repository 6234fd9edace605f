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

@test "upsert: a run's keys held a few at a time (DATASPOC_PIPE_MERGE_KEYS), pass by pass: the same table as the oracle" {
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
