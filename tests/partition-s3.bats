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

