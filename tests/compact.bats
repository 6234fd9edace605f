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
