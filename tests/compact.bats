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
