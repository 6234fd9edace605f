#!/usr/bin/env bats
# The compact scenarios of tests/compact.bats on s3:// (s3rver on
# 127.0.0.1) (issue #27): dataspoc-pipe compact NAME [STREAM].

load helpers/common
load helpers/s3
use_s3_lake
load helpers/upsert_scenarios
load helpers/pipeline_scenarios
load helpers/compact_scenarios

@test "s3 compact: an append-only table's small files merged into files of max_file_size, every row kept, state kept, logged; again, nothing changes" {
	scenario_compact_append
}

@test "s3 compact: a table landed append-only becomes one row per key once load_method is upsert, the last versions kept; again, nothing changes" {
	scenario_compact_to_upsert
}

@test "s3 compact: locked like a run (75, nothing changed); a stream never landed is refused and logged; bad usage is 2" {
	scenario_compact_refusals
}
