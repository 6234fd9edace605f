#!/usr/bin/env bats
# Sharded runs (docs/SCALE.md): run --shards N on this machine, and the
# engine's steps (run --plan --shards N, run --shard I/N --run-id ID,
# commit --run-id ID) by hand.  tests/taps/tap-many offers 12 streams; the
# lake is read back with DuckDB.

load helpers/common

setup() {
	pipe_setup
	many_pipeline plain
	many_pipeline sharded
}

teardown() {
	pipe_teardown
}

# many_pipeline NAME: tap-many's 12 streams selected, Parquet under path NAME.
many_pipeline() {
	{
		printf 'source:\n  tap: tap-many\n  config: {x: 1}\n'
		printf '  streams: [s01, s02, s03, s04, s05, s06, s07, s08, s09, s10, s11, s12]\n'
		printf 'destination:\n'
		bucket_yaml
		printf '  format: parquet\n  path: %s\n' "$1"
		printf 'incremental:\n  enabled: true\n'
	} >"$DATASPOC_PIPE_HOME/pipelines/$1.yaml"
}

# Every row under path NAME, read by DuckDB, sorted: "stream id" a line.
lake() {
	local files
	files=$(find "$BUCKET_DIR/$1" -name '*.parquet' 2>/dev/null | sort)
	[ -n "$files" ] || return 0
	# shellcheck disable=SC2086
	node "$BATS_TEST_DIRNAME/clients/parquet/duckdb-rows.mjs" $files |
		jq -r '"\(.stream) \(.id)"' | sort
}

# The saved state of NAME, members sorted.
state_of() {
	bucket_cat ".dataspoc/state/$1/state.json" | jq -S -c .
}

@test "shards: a 12-stream tap sharded 3 ways lands every row exactly once, and the state of an unsharded run" {
	run -0 dataspoc-pipe run plain
	rm "$FAKE_DIR/tap-many/extracted"
	run -0 dataspoc-pipe run sharded --shards 3
	assert_line --regexp '^Sharded run [0-9]{8}T[0-9]{6}Z-[0-9a-z]+ of sharded: 3 shards$'
	assert_line "Done! 60 records in 12 stream(s)"
	[ "$(grep -c '^Staged: shard ' <<<"$output")" -eq 3 ]
	lake plain >want
	[ "$(wc -l <want)" -eq 60 ]
	lake sharded >got
	diff -u want got
	[ "$(sort -u got | wc -l)" -eq 60 ]
	[ "$(state_of plain)" = "$(state_of sharded)" ]
	# each stream extracted once, by one shard
	[ "$(sort "$FAKE_DIR/tap-many/extracted" | uniq -d)" = "" ]
	# a second run of each goes on from its bookmarks, as one run would
	run -0 dataspoc-pipe run plain
	run -0 dataspoc-pipe run sharded --shards 3
	lake plain >want
	[ "$(wc -l <want)" -eq 120 ]
	lake sharded >got
	diff -u want got
	[ "$(state_of plain)" = "$(state_of sharded)" ]
	# nothing of the runs is left in staging, the lock is free
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	run -1 bucket_exists .dataspoc/state/sharded/lock
}

@test "shards: a shard that fails makes the commit refuse, naming it; nothing lands, the previous state stays" {
	run -0 dataspoc-pipe run sharded --shards 3
	before=$(state_of sharded)
	lake sharded >before-rows
	: >"$FAKE_DIR/tap-many/fail-s05"
	run -1 dataspoc-pipe run sharded --shards 3
	assert_line --regexp "^dataspoc-pipe: run 'sharded \(shard [0-2]/3 of run .*\)' failed: "
	assert_line --regexp "^dataspoc-pipe: run .* of pipeline 'sharded': shard [0-2] of 3 did not stage its part: nothing published$"
	[ "$(state_of sharded)" = "$before" ]
	lake sharded >after-rows
	diff -u before-rows after-rows
	# the run is over: logged as failed, its staging gone, its lock free
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	run -1 bucket_exists .dataspoc/state/sharded/lock
	run -0 dataspoc-pipe logs -n 1 --output json sharded
	assert_output --partial '"status":"failure"'
	assert_output --partial 'did not stage its part'
	# the next run lands what the failed one did not
	rm "$FAKE_DIR/tap-many/fail-s05"
	run -0 dataspoc-pipe run sharded --shards 3
	[ "$(lake sharded | wc -l)" -eq 120 ]
}

@test "shards: the engine's steps by hand; a shard run twice lands once; commit of an incomplete run refuses" {
	run -0 --separate-stderr dataspoc-pipe run sharded --plan --shards 2
	local id=$output
	[[ $id =~ ^[0-9]{8}T[0-9]{6}Z-[0-9a-z]+$ ]]
	run -0 bucket_exists .dataspoc/staging/sharded/$id/shards/plan.json
	# another run of the pipeline waits for the sharded one: 75
	run -75 dataspoc-pipe run sharded
	run -0 dataspoc-pipe run sharded --shard 0/2 --run-id "$id"
	# shard 0 again: its second attempt's files replace the first's
	run -0 dataspoc-pipe run sharded --shard 0/2 --run-id "$id"
	run -2 dataspoc-pipe run sharded --shard 1/3 --run-id "$id"
	assert_output --partial "has 2 shards, not 3"
	[ -z "$(bucket_files)" ]
	run -0 dataspoc-pipe run sharded --shard 1/2 --run-id "$id"
	run -0 dataspoc-pipe commit sharded --run-id "$id"
	assert_line "Done! 60 records in 12 stream(s)"
	lake sharded >got
	[ "$(wc -l <got)" -eq 60 ]
	[ "$(sort -u got | wc -l)" -eq 60 ]
	[ "$(bucket_files | wc -l)" -eq 12 ]
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	# a shard of a run that no longer holds the lock stages nothing
	run -1 dataspoc-pipe run sharded --shard 0/2 --run-id "$id"
	assert_output --partial "no longer holds the lock of pipeline 'sharded'"
	run -1 dataspoc-pipe commit sharded --run-id "$id"
	[ "$(bucket_files | wc -l)" -eq 12 ]

	# an incomplete run: the commit refuses, naming the missing shard
	before=$(state_of sharded)
	run -0 --separate-stderr dataspoc-pipe run sharded --plan --shards 2
	id=$output
	run -0 dataspoc-pipe run sharded --shard 1/2 --run-id "$id"
	run -1 dataspoc-pipe commit sharded --run-id "$id"
	assert_output --partial "shard 0 of 2 did not stage its part: nothing published"
	[ "$(state_of sharded)" = "$before" ]
	[ "$(bucket_files | wc -l)" -eq 12 ]
	run -1 bucket_exists .dataspoc/state/sharded/lock
}

@test "shards: a pipeline without source.streams, or with checkpoints, cannot be sharded" {
	write_pipeline orders cmdtap-ok true
	run -2 dataspoc-pipe run orders --shards 2
	assert_output --partial "a sharded run splits source.streams: pipeline 'orders' selects none"
	printf '  checkpoint_every: 1m\n' >>"$DATASPOC_PIPE_HOME/pipelines/sharded.yaml"
	run -2 dataspoc-pipe run sharded --shards 2
	assert_output --partial "a sharded run cannot checkpoint"
	[ -z "$(bucket_files)" ]
	run -1 bucket_exists .dataspoc/state/sharded/lock
}

@test "shards: a bookmark the tap deleted stays deleted in the merged state, as in an unsharded run's" {
	run -0 dataspoc-pipe run plain
	run -0 dataspoc-pipe run sharded --shards 3
	[ "$(state_of plain)" = "$(state_of sharded)" ]
	run -0 jq -e '.bookmarks.s03' <<<"$(state_of sharded)"
	# the tap leaves s03's bookmark out of its state
	: >"$FAKE_DIR/tap-many/drop-s03"
	run -0 dataspoc-pipe run plain
	run -0 dataspoc-pipe run sharded --shards 3
	run -0 jq -e '.bookmarks | has("s03") | not' <<<"$(state_of plain)"
	[ "$(state_of plain)" = "$(state_of sharded)" ]
}

@test "shards: --full: every shard starts from no state; the lake and the state are an unsharded --full run's" {
	run -0 dataspoc-pipe run plain
	run -0 dataspoc-pipe run sharded --shards 3
	run -0 dataspoc-pipe run --full plain
	assert_line "  Full extraction (saved state ignored)"
	run -0 dataspoc-pipe run --full sharded --shards 3
	assert_line "Done! 60 records in 12 stream(s)"
	lake plain >want
	# append-only: a second copy of each row, in both
	[ "$(wc -l <want)" -eq 120 ]
	lake sharded >got
	diff -u want got
	[ "$(state_of plain)" = "$(state_of sharded)" ]
	# the engine's steps: --full is the plan's
	run -0 --separate-stderr dataspoc-pipe run --full sharded --plan --shards 2
	local id=$output
	run -0 bucket_cat ".dataspoc/staging/sharded/$id/shards/plan.json"
	[ "$(jq -c '[.full, .state]' <<<"$output")" = '[true,null]' ]
	run -2 dataspoc-pipe run --full sharded --shard 0/2 --run-id "$id"
	assert_output --partial "--full is the plan's"
	run -0 dataspoc-pipe run sharded --shard 0/2 --run-id "$id"
	run -0 dataspoc-pipe run sharded --shard 1/2 --run-id "$id"
	run -0 dataspoc-pipe commit sharded --run-id "$id"
	run -0 dataspoc-pipe run --full plain
	lake plain >want
	lake sharded >got
	diff -u want got
	[ "$(state_of plain)" = "$(state_of sharded)" ]
}
