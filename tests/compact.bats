#!/usr/bin/env bats
# dataspoc-pipe compact NAME [STREAM] (issue #27) on a local bucket: an
# append-only table's small files merged into files of max_file_size, row
# for row; a table landed append-only turned into one row per key once its
# load_method is upsert; locked, atomic, logged, idempotent.

load helpers/common
use_local_lake
load helpers/upsert_scenarios
load helpers/pipeline_scenarios
load helpers/compact_scenarios
load helpers/partition_scenarios

@test "compact: an append-only table's small files merged into files of max_file_size, every row kept, state kept, logged; again, nothing changes" {
	scenario_compact_append
}

@test "compact: a table landed append-only becomes one row per key once load_method is upsert, the last versions kept; again, nothing changes" {
	scenario_compact_to_upsert
}

@test "compact: locked like a run (75, nothing changed); a stream never landed is refused and logged; bad usage is 2" {
	scenario_compact_refusals
}

@test "compact: killed in its commit, the rows are what they were; the next compact finishes the commit and merges nothing more" {
	scenario_compact_killed
}

@test "compact: status shows the last extraction, not a compact after it, which it says on a line (and key) of its own; logs lists the compacts" {
	use_tap tap-cs
	lake_pipeline cs tap-cs true
	tap_sends tap-cs <<-'EOF'
	{"id":1,"name":"ana"}
	{"id":2,"name":"bo"}
	EOF
	dataspoc-pipe run cs >/dev/null
	local rid
	rid=$(run_ids cs | tail -n 1)
	run -0 dataspoc-pipe compact cs
	run -0 dataspoc-pipe compact cs
	local compact
	compact=$(run_ids cs | tail -n 1)
	[ "$compact" != "$rid" ]
	# the table: the extraction's run and its 2 records, then the compact
	local started
	started=$(bucket_cat ".dataspoc/logs/cs/$compact.json" | jq -r .started_at)
	run -0 --separate-stderr dataspoc-pipe status cs
	assert_line --index 1 --regexp '^cs +[0-9T:Z-]+ +success +[0-9]+s +2$'
	assert_line --index 2 "cs: compacted since: $started success"
	[ "${#lines[@]}" -eq 3 ]
	run -0 --separate-stderr dataspoc-pipe status -o json cs
	run -0 jq -c '.[0] | [.status, .records, .last_compact.run_id, .last_compact.status]' <<<"$output"
	assert_output "[\"success\",2,\"$compact\",\"success\"]"
	# logs: every run, the compacts among them
	run -0 --separate-stderr dataspoc-pipe logs -n 10 -o json cs
	run -0 jq -r '.[] | .command // "run"' <<<"$output"
	assert_output "compact
compact
run"
	# a run after them: the last extraction again, no compact line
	dataspoc-pipe run cs >/dev/null
	run -0 --separate-stderr dataspoc-pipe status cs
	[ "${#lines[@]}" -eq 2 ]
	run -0 --separate-stderr dataspoc-pipe status -o json cs
	run -0 jq -c '.[0].last_compact' <<<"$output"
	assert_output null
}

@test "compact: an append-only table with partition_by: each folder's small files merged, every row of every folder kept; its partition kept in the manifest, so the next run lands as before" {
	use_tap tap-cp
	lake_pipeline cp tap-cp true 'partition_by: {field: created_at, granularity: year}'
	part_orders <<<'{"id":1,"created_at":"2023-05-01T00:00:00Z"}' >"$FAKE_DIR/tap-cp/out"
	run -0 --separate-stderr dataspoc-pipe run cp
	part_orders <<<'{"id":2,"created_at":"2023-06-01T00:00:00Z"}' >"$FAKE_DIR/tap-cp/out"
	run -0 --separate-stderr dataspoc-pipe run cp
	part_orders <<<'{"id":3,"created_at":"2024-06-01T00:00:00Z"}' >"$FAKE_DIR/tap-cp/out"
	run -0 --separate-stderr dataspoc-pipe run cp
	run -0 --separate-stderr dataspoc-pipe compact cp
	bucket_files | sed -E 's/_[0-9]{8}T[0-9]{6}Z-[0-9a-z]+_[0-9]+\.parquet$//' | sort | uniq -c | awk '{print $1, $2}' >folders
	expect_file folders <<-'EOF'
	1 raw/cp/orders/created_at_year=2023/orders
	1 raw/cp/orders/created_at_year=2024/orders
	EOF
	LENS_HIVE=1 lens cp/orders | jq -c '[.id, .created_at_year]' | sort >rows
	expect_file rows <<-'EOF'
	["1","2023"]
	["2","2023"]
	["3","2024"]
	EOF
	manifest_table cp/orders | jq -c '[.partition.column, .stats.total_rows]' >m
	expect_file m <<<'["created_at_year",3]'
	part_orders <<<'{"id":4,"created_at":"2024-07-01T00:00:00Z"}' >"$FAKE_DIR/tap-cp/out"
	run -0 --separate-stderr dataspoc-pipe run cp
	[ "$(LENS_HIVE=1 lens cp/orders | wc -l)" -eq 4 ]
}

@test "compact: a table of a stream with a field dt (in _dt=) turned upsert: merged by key into _dt=, its dt read back as the tap sent it; the next run merges on" {
	use_tap tap-cdt
	lake_pipeline cdt tap-cdt true
	part_orders <<<'{"id":1,"created_at":"2023-05-01T00:00:00Z","dt":"2020-01-01"}' >"$FAKE_DIR/tap-cdt/out"
	run -0 --separate-stderr dataspoc-pipe run cdt
	part_orders <<<'{"id":1,"created_at":"2023-05-02T00:00:00Z","dt":"2020-01-02"}' >"$FAKE_DIR/tap-cdt/out"
	run -0 --separate-stderr dataspoc-pipe run cdt
	lake_pipeline cdt tap-cdt true 'load_method: upsert'
	run -0 --separate-stderr dataspoc-pipe compact cdt
	LENS_HIVE=1 lens cdt/orders | jq -c '[.id, .dt]' >rows
	expect_file rows <<<'["1","2020-01-02"]'
	bucket_files | sed -E 's|/[^/]*$||; s|=.*||' | sort -u >folders
	expect_file folders <<<'raw/cdt/orders/_dt'
	manifest_table cdt/orders | jq -c '.partition.column' >m
	expect_file m <<<'"_dt"'
	part_orders <<<'{"id":1,"created_at":"2023-05-03T00:00:00Z","dt":"2020-01-03"}' >"$FAKE_DIR/tap-cdt/out"
	run -0 --separate-stderr dataspoc-pipe run cdt
	LENS_HIVE=1 lens cdt/orders | jq -c '[.id, .dt]' >rows
	expect_file rows <<<'["1","2020-01-03"]'
}

@test "compact: a partitioned table landed append-only, a key's records of one run in two folders (no known order): refused, nothing changes; once a later run sends the key, compact keeps that" {
	use_tap tap-cpo
	lake_pipeline cpo tap-cpo true 'partition_by: {field: status, granularity: value}'
	sends() {
		echo '{"type":"SCHEMA","stream":"t","schema":{"type":"object","properties":{"id":{"type":"integer"},"status":{"type":["null","string"]},"n":{"type":["null","integer"]}}},"key_properties":["id"]}'
		singer_records t
		echo '{"type":"STATE","value":{"at":1}}'
	}
	sends >"$FAKE_DIR/tap-cpo/out" <<-'EOF'
	{"id":2,"status":"open","n":1}
	{"id":1,"status":"closed","n":1}
	{"id":1,"status":"open","n":2}
	{"id":3,"status":"open","n":1}
	{"id":3,"status":"closed","n":2}
	EOF
	run -0 --separate-stderr dataspoc-pipe run cpo
	lake_pipeline cpo tap-cpo true 'partition_by: {field: status, granularity: value}' 'load_method: upsert'
	bucket_snapshot | grep -v ' \.dataspoc/logs/' >before.snap
	run -1 --separate-stderr dataspoc-pipe compact cpo t
	[[ $stderr == *"compact 'cpo' failed: stream 't': a key has records of one run in two folders of partition_by 'status'"*"run once with --full"* ]]
	bucket_snapshot | grep -v ' \.dataspoc/logs/' >after.snap
	diff before.snap after.snap
	# a later run (append-only still) sends keys 1 and 3 again: compact keeps those
	lake_pipeline cpo tap-cpo true 'partition_by: {field: status, granularity: value}'
	sends >"$FAKE_DIR/tap-cpo/out" <<-'EOF'
	{"id":1,"status":"open","n":3}
	{"id":3,"status":"closed","n":3}
	EOF
	run -0 --separate-stderr dataspoc-pipe run cpo
	lake_pipeline cpo tap-cpo true 'partition_by: {field: status, granularity: value}' 'load_method: upsert'
	run -0 --separate-stderr dataspoc-pipe compact cpo t
	LENS_HIVE=1 lens cpo/t | jq -c '[.id, .status, .n, .status_value]' | sort >rows
	expect_file rows <<-'EOF'
	["1","open","3","open"]
	["2","open","1","open"]
	["3","closed","3","closed"]
	EOF
}
