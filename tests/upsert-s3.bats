#!/usr/bin/env bats
# The upsert scenarios of tests/upsert.bats on s3:// (s3rver on 127.0.0.1)
# (issue #27): destination.load_method: upsert, pipe-merge
# between pipe-sink and pipe-commit, the table read back as DataSpoc Lens
# reads it (read_parquet('<location>/**/*.parquet', hive_partitioning=true,
# union_by_name=true)): one row per key, the last version the tap sent.

load helpers/common
load helpers/s3
use_s3_lake
load helpers/upsert_scenarios

@test "s3 upsert: updates replace, re-sent rows count once, later records win" {
	scenario_upsert_updates
}

@test "s3 upsert: _sdc_deleted_at removes the key (hard_delete, the default), or keeps the row with it set (hard_delete: false)" {
	scenario_upsert_deletes
}

@test "s3 upsert: a key that changed between runs is refused; --full rebuilds the table by the new key" {
	scenario_upsert_key_changed
}

@test "s3 upsert: singer-io tap-postgres LOG_BASED (recorded) replayed run after run: deletes leave, re-sent changes count once" {
	scenario_upsert_fixture_singer
}

@test "s3 upsert: random inserts, updates, deletes and re-sent rows over many runs, tables split in many files, equal an oracle after every run" {
	scenario_upsert_random
}

@test "s3 upsert: kill -9 at random moments of a run: the lake is the table before or after it, never a duplicate or a lost row, and the next run recovers" {
	scenario_upsert_kill
}

@test "s3 upsert: a property a record leaves out keeps the table's value (a TOASTed column an update left), one sent as null sets null, the run's earlier record fills a later one" {
	scenario_upsert_absent
}
