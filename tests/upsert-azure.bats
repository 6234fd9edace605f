#!/usr/bin/env bats
# The upsert scenarios of tests/upsert.bats on az:// (Azurite on 127.0.0.1)
# (issue #27): destination.load_method: upsert, pipe-merge between pipe-sink
# and pipe-commit, the table read back as DataSpoc Lens reads it
# (read_parquet('<location>/**/*.parquet', hive_partitioning=true,
# union_by_name=true)): one row per key, the last version the tap sent;
# with checkpoints each unit merged whole; dataspoc-pipe compact.

load helpers/common
load helpers/azure
use_az_lake
load helpers/upsert_scenarios
load helpers/checkpoint_scenarios
load helpers/pipeline_scenarios
load helpers/compact_scenarios
load helpers/partition_upsert_scenarios

@test "az upsert: updates replace, re-sent rows count once, later records win" {
	scenario_upsert_updates
}

@test "az upsert: _sdc_deleted_at removes the key (hard_delete, the default), or keeps the row with it set (hard_delete: false)" {
	scenario_upsert_deletes
}

@test "az upsert: a key that changed between runs is refused; --full rebuilds the table by the new key" {
	scenario_upsert_key_changed
}

@test "az upsert: singer-io tap-postgres LOG_BASED (recorded) replayed run after run: deletes leave, re-sent changes count once" {
	scenario_upsert_fixture_singer
}

@test "az upsert: random inserts, updates, deletes and re-sent rows over many runs, tables split in many files, equal an oracle after every run" {
	scenario_upsert_random
}

@test "az upsert: kill -9 at random moments of a run: the lake is the table before or after it, never a duplicate or a lost row, and the next run recovers" {
	scenario_upsert_kill
}

@test "az checkpoints with upsert: each unit merged and published whole; kill -9 after a checkpoint leaves that unit's table; a failed run keeps its last unit's; --full rebuilds with its first unit only" {
	scenario_ck_upsert
}

@test "az compact: an append-only table's small files merged into files of max_file_size, every row kept, state kept, logged; again, nothing changes" {
	scenario_compact_append
}

@test "az compact: a table landed append-only becomes one row per key once load_method is upsert, the last versions kept; again, nothing changes" {
	scenario_compact_to_upsert
}

@test "az upsert: a property a record leaves out keeps the table's value (a TOASTed column an update left), one sent as null sets null, the run's earlier record fills a later one" {
	scenario_upsert_absent
}

@test "az partition upsert: a key whose value moves leaves its old folder in the same commit; deletes, left-out properties (the partition field too), unchanged runs" {
	scenario_part_upsert_moves
}

@test "az partition upsert: compact NAME STREAM merges a partitioned append-only table by key into the folders of its rows' values" {
	scenario_part_upsert_compact
}
