#!/usr/bin/env bats
# destination.partition_by on s3:// (s3rver): the scenarios of tests/partition.bats
# (tests/helpers/partition_scenarios.bash), the bucket copied down and read as Lens reads it.

load helpers/common
load helpers/s3
use_s3_lake
load helpers/partition_scenarios

@test "s3 partition: by a date-time's day (its SCHEMA says date-time): folders of the records' own UTC days, a null folder, the fields read back unchanged" {
	scenario_part_day
}

@test "s3 partition: by value, JSON lines: percent-encoded folders, null and objects in the null folder" {
	scenario_part_value_jsonl
}

@test "s3 partition: a snapshot by month replaces the whole table, every folder" {
	scenario_part_snapshot
}

@test "s3 partition: a field named as the folders fails the run, nothing lands" {
	scenario_part_collision
}

@test "s3 partition: changing partition_by: a run that would mix two folder keys fails, nothing published; --full lands the table anew in the new folders" {
	scenario_part_refold
}

load helpers/upsert_scenarios
load helpers/partition_upsert_scenarios

@test "s3 partition upsert: a key whose value moves leaves its old folder in the same commit; deletes, left-out properties (the partition field too), unchanged runs" {
	scenario_part_upsert_moves
}

@test "s3 partition upsert: null and unparsable values in the null folder, a key leaving and entering it; --full rebuilds every folder" {
	scenario_part_upsert_null_full
}

@test "s3 partition upsert: checkpoints merge each unit; a key moved between units ends in one folder" {
	scenario_part_upsert_checkpoints
}

@test "s3 partition upsert: compact NAME STREAM merges a partitioned append-only table by key into the folders of its rows' values" {
	scenario_part_upsert_compact
}
