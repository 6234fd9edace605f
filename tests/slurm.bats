#!/usr/bin/env bats
# dataspoc-pipe export slurm on a real Slurm cluster of this machine
# (tests/helpers/slurm.bash: munged, slurmctld and slurmd, one node): the
# exported batch scripts submitted with sbatch, the lake read back with DuckDB;
# a PostgreSQL 15 (tests/helpers/pg.bash) for a table split across the shards.
# Skipped only when not root (the daemons run as root); a missing Slurm fails.

load helpers/common
load helpers/slurm
load helpers/pg

setup_file() {
	slurm_start
	pg_start
	pg_sql "CREATE DATABASE appdb"
}

teardown_file() {
	pg_stop
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

# A pipeline of tap-many's 12 streams (tests/shards.bats), Parquet under path NAME.
many_pipeline() {	# NAME
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
many_rows() {	# NAME
	local files
	files=$(find "$BUCKET_DIR/$1" -name '*.parquet' 2>/dev/null | sort)
	[ -n "$files" ] || return 0
	# shellcheck disable=SC2086
	node "$BATS_TEST_DIRNAME/clients/parquet/duckdb-rows.mjs" $files |
		jq -r '"\(.stream) \(.id)"' | sort
}

# sharded_submit NAME: sbatch the exported script of a sharded run; sets
# run_id, shards_job and commit_job from its output.
sharded_submit() {
	local id line
	id=$(sbatch --parsable --chdir="$PWD/jobs-out" "jobs/$1.sbatch") || return 1
	slurm_wait "$id" >plan-job || return 1
	[ "$(cat plan-job)" = "- COMPLETED 0:0" ] || { cat plan-job "jobs-out/slurm-$id.out" >&2; return 1; }
	line=$(grep '^Sharded run ' "jobs-out/slurm-$id.out") || { cat "jobs-out/slurm-$id.out" >&2; return 1; }
	run_id=$(sed -E 's/^Sharded run ([^ ]*) .*/\1/' <<<"$line")
	shards_job=$(sed -E 's/.* shards job ([0-9]+) .*/\1/' <<<"$line")
	commit_job=$(sed -E 's/.* commit job ([0-9]+)$/\1/' <<<"$line")
}

# sharded_done SUMMARY: the 3 array tasks of $shards_job and the commit job
# $commit_job completed, the commit saying SUMMARY.
sharded_done() {
	run -0 slurm_wait "$shards_job"
	assert_output "0 COMPLETED 0:0
1 COMPLETED 0:0
2 COMPLETED 0:0"
	run -0 slurm_wait "$commit_job"
	assert_output "- COMPLETED 0:0"
	run -0 cat "jobs-out/slurm-$commit_job.out"
	assert_line "$1"
}

@test "slurm: a sharded run's exported script: a job array of 3 shards and one commit after them lands every row once" {
	many_pipeline plain
	many_pipeline wide
	run -0 dataspoc-pipe run plain
	rm "$FAKE_DIR/tap-many/extracted"
	run -0 dataspoc-pipe export slurm -o jobs --shards 3 wide
	run -0 grep -c -e '--array=0-2 ' -e '--dependency=afterany:' jobs/wide.sbatch
	assert_output 2
	sharded_submit wide
	sharded_done "Done! 60 records in 12 stream(s)"
	# one commit of every shard's rows, as an unsharded run lands them
	many_rows plain >want
	many_rows wide >got
	[ "$(wc -l <got)" -eq 60 ]
	diff -u want got
	[ "$(sort "$FAKE_DIR/tap-many/extracted" | uniq -d)" = "" ]
	run -0 dataspoc-pipe logs --output json wide
	[ "$(grep -c '"status":"success"' <<<"$output")" -eq 1 ]
	assert_output --partial "\"run_id\":\"$run_id\""
	[ "$(bucket_cat .dataspoc/state/plain/state.json | jq -S -c .)" = \
		"$(bucket_cat .dataspoc/state/wide/state.json | jq -S -c .)" ]
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	run -1 bucket_exists .dataspoc/state/wide/lock
}

# The array task of job $1 still running once the others have ended, and
# tap-many inside it waiting on hang-s05: "JOB_TASK".
hung_task() {	# ARRAY-JOB
	local end=$((SECONDS + 60)) t
	until [ -e "$FAKE_DIR/tap-many/hanging-s05" ]; do
		[ "$SECONDS" -lt "$end" ] || { echo "hung_task: no shard reached s05" >&2; return 1; }
		sleep 0.2
	done
	while :; do
		t=$(squeue -h -j "$1" -o '%i %T')
		if [ "$(wc -l <<<"$t")" -eq 1 ] && [[ $t == *" RUNNING" ]]; then
			echo "${t%% *}"
			return 0
		fi
		[ "$SECONDS" -lt "$end" ] || { echo "hung_task: $t" >&2; return 1; }
		sleep 0.2
	done
}

@test "slurm: a shard killed with scancel: the commit job refuses, naming it; nothing lands, the lock is let go" {
	many_pipeline wide
	run -0 dataspoc-pipe run wide
	before=$(bucket_cat .dataspoc/state/wide/state.json)
	many_rows wide >before-rows
	: >"$FAKE_DIR/tap-many/hang-s05"
	run -0 dataspoc-pipe export slurm -o jobs --shards 3 wide
	sharded_submit wide
	task=$(hung_task "$shards_job")
	run -0 scancel "$task"
	run -0 slurm_wait "$shards_job"
	assert_line --regexp "^${task#*_} CANCELLED "
	[ "$(grep -c COMPLETED <<<"$output")" -eq 2 ]
	run -0 slurm_wait "$commit_job"
	assert_output "- FAILED 1:0"
	run -0 cat "jobs-out/slurm-$commit_job.out"
	assert_line --partial "shard ${task#*_} of 3 did not stage its part: nothing published"
	[ "$(bucket_cat .dataspoc/state/wide/state.json)" = "$before" ]
	many_rows wide >after-rows
	diff -u before-rows after-rows
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	run -1 bucket_exists .dataspoc/state/wide/lock
	run -0 dataspoc-pipe logs -n 1 --output json wide
	assert_output --partial '"status":"failure"'
	rm "$FAKE_DIR/tap-many/hang-s05"
}

@test "slurm: a commit started before a shard ended refuses and ends the run; the late shard stages nothing" {
	many_pipeline wide
	mkdir -p "$FAKE_DIR/tap-many"
	: >"$FAKE_DIR/tap-many/hang-s05"
	run -0 dataspoc-pipe export slurm -o jobs --shards 3 wide
	sharded_submit wide
	task=$(hung_task "$shards_job")
	run -1 dataspoc-pipe commit wide --run-id "$run_id"
	assert_output --partial "shard ${task#*_} of 3 did not stage its part: nothing published"
	run -1 bucket_exists .dataspoc/state/wide/lock
	rm "$FAKE_DIR/tap-many/hang-s05"
	run -0 slurm_wait "$shards_job"
	assert_line "${task#*_} FAILED 1:0"
	run -0 cat "jobs-out/slurm-${shards_job}_${task#*_}.out"
	assert_output --partial "no longer holds the lock of pipeline 'wide'"
	run -0 slurm_wait "$commit_job"
	assert_output "- FAILED 1:0"
	[ -z "$(bucket_files)" ]
	run -1 bucket_exists .dataspoc/state/wide/state.json
	run -1 bucket_exists .dataspoc/state/wide/lock
	# the late shard's files, staged before it found the lock gone, are
	# swept by the next run, as any failed run's
	run -0 dataspoc-pipe run wide --shards 3
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	[ "$(many_rows wide | wc -l)" -eq 60 ]
}

@test "slurm: a shard run twice (its command submitted again with the run id, after its array task ended) lands every row once" {
	many_pipeline wide
	mkdir -p "$FAKE_DIR/tap-many"
	# one task held on s05, so that the commit waits while another shard runs again
	: >"$FAKE_DIR/tap-many/hang-s05"
	run -0 dataspoc-pipe export slurm -o jobs --shards 3 wide
	sharded_submit wide
	task=$(hung_task "$shards_job")
	again=$(((${task#*_} + 1) % 3))
	run -0 sbatch --parsable --chdir="$PWD/jobs-out" \
		--wrap="exec $(command -v dataspoc-pipe) run wide --shard $again/3 --run-id $run_id"
	local twice=$output
	run -0 slurm_wait "$twice"
	assert_output "- COMPLETED 0:0"
	run -0 cat "jobs-out/slurm-$twice.out"
	assert_line --regexp "^Staged: shard $again/3 of run $run_id \\([0-9]+ records\\)$"
	rm "$FAKE_DIR/tap-many/hang-s05"
	sharded_done "Done! 60 records in 12 stream(s)"
	# the shard's streams were extracted twice, and land once
	[ -n "$(sort "$FAKE_DIR/tap-many/extracted" | uniq -d)" ]
	many_rows wide >got
	[ "$(wc -l <got)" -eq 60 ]
	[ "$(sort -u got | wc -l)" -eq 60 ]
	run -0 dataspoc-pipe logs --output json wide
	[ "$(grep -c '"status":"success"' <<<"$output")" -eq 1 ]
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	run -1 bucket_exists .dataspoc/state/wide/lock
}

@test "slurm: a PostgreSQL table split across 3 array tasks, in the snapshot the plan job holds: every row once, one commit" {
	pg_sql -d appdb "DROP TABLE IF EXISTS big; CREATE TABLE big(id int primary key, t text);
		INSERT INTO big SELECT i, md5(i::text) FROM generate_series(1, 60000) i"
	pg_config_json tap.json
	cat >"$DATASPOC_PIPE_HOME/pipelines/big.yaml" <<-EOF
	source:
	  tap: dataspoc-tap-postgres
	  config: $PWD/tap.json
	  streams: [appdb-public-big]
	  metadata:
	    appdb-public-big: {replication-method: FULL_TABLE, shard-split: true}
	destination:
	$(bucket_yaml)
	  format: parquet
	  path: big
	EOF
	export DATASPOC_PIPE_HOLD_POLL=1
	run -0 dataspoc-pipe export slurm -o jobs --shards 3 big
	sharded_submit big
	sharded_done "Done! 60,000 records in 1 stream(s)"
	# each task read a part, in the held snapshot
	local i
	for i in 0 1 2; do
		run -0 grep '^Staged: shard ' "jobs-out/slurm-${shards_job}_$i.out"
		[[ $output =~ \(([0-9]+)\ records\) ]]
		[ "${BASH_REMATCH[1]}" -gt 0 ] && [ "${BASH_REMATCH[1]}" -lt 60000 ]
	done
	pg_sql -d appdb "SELECT id || '|' || t FROM big ORDER BY id" >want
	files=$(find "$BUCKET_DIR/big" -name '*.parquet' | sort)
	# shellcheck disable=SC2086
	node "$BATS_TEST_DIRNAME/clients/parquet/duckdb-rows.mjs" $files |
		jq -r '"\(.id)|\(.t)"' | sort -t'|' -k1,1n >got
	diff -u want got
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	# the plan job held the snapshot until the run ended, then let it go
	[ "$(pg_sql "SELECT count(*) FROM pg_stat_activity WHERE datname = 'appdb' AND state LIKE 'idle in transaction%'")" -eq 0 ]
}
