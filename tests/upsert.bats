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

@test "upsert: format jsonl and checkpoint_every are config errors naming the file and line; append-only stays the default" {
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
