#!/usr/bin/env bats
# dataspoc-pipe export slurm on a real Slurm cluster of this machine
# (tests/helpers/slurm.bash: munged, slurmctld and slurmd, one node): the
# exported batch scripts submitted with sbatch, the lake read back with DuckDB.
# Skipped only when not root (the daemons run as root); a missing Slurm fails.

load helpers/common
load helpers/slurm

setup_file() {
	slurm_start
}

teardown_file() {
	slurm_stop
}

setup() {
	pipe_setup
	write_pipeline orders cmdtap-ok true 'format: parquet'
	printf 'schedule:\n  cron: "0 2 * * *"\n' >>"$DATASPOC_PIPE_HOME/pipelines/orders.yaml"
	mkdir jobs-out
}

teardown() {
	pipe_teardown
}

# The lake's rows of a stream, read by DuckDB: one JSON object a line.
lake_rows() {	# STREAM
	local files
	files=$(find "$BUCKET_DIR/raw/cmdok/$1" -name '*.parquet' | sort)
	[ -n "$files" ] || { echo "no Parquet files under raw/cmdok/$1" >&2; return 1; }
	# shellcheck disable=SC2086
	node "$BATS_TEST_DIRNAME/clients/parquet/duckdb-rows.mjs" $files
}

@test "slurm: the exported batch script runs the pipeline as a Slurm job" {
	run -0 dataspoc-pipe export slurm -o jobs orders
	run -0 sbatch --parsable --chdir="$PWD/jobs-out" jobs/orders.sbatch
	local id=$output
	run -0 slurm_wait "$id"
	assert_output "- COMPLETED 0:0"
	run -0 cat "jobs-out/slurm-$id.out"
	assert_line "Done! 3 records in 1 stream(s)"
	run -0 lake_rows items
	assert_output '{"id":"1","name":"one","_extra":null}
{"id":"2","name":"two","_extra":null}
{"id":"3","name":"three","_extra":null}'
}

@test "slurm: a job whose pipeline another run holds exits 75 and lands nothing" {
	printf '{"run_id": "20260101T000000Z-0ther0", "host": "elsewhere.example", "pid": 1, "started_at": "2026-01-01T00:00:00Z", "expires_at": "'"$LIVE_UNTIL"'"}\n' |
		bucket_put .dataspoc/state/orders/lock
	run -0 dataspoc-pipe export slurm -o jobs orders
	run -0 sbatch --parsable --chdir="$PWD/jobs-out" jobs/orders.sbatch
	local id=$output
	run -0 slurm_wait "$id"
	assert_output "- FAILED 75:0"
	run -0 cat "jobs-out/slurm-$id.out"
	assert_line --partial "dataspoc-pipe: run 'orders' failed: pipeline 'orders' is locked by run 20260101T000000Z-0ther0"
	run -0 bucket_files
	assert_output ""
}
