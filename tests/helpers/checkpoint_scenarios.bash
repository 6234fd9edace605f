# helpers/checkpoint_scenarios.bash: incremental.checkpoint_every (issue #15).  A run
# commits what it has at the first STATE after each interval; a run killed
# or failed after a checkpoint leaves that checkpoint's records in the lake,
# exactly once, and its state, and the next run goes on from there.  The
# scenarios reach the bucket only through the bucket_* functions, so that
# tests/checkpoints.bats runs them on a local bucket and
# tests/checkpoints-s3.bats on s3rver.  The tap is tests/taps/tap-counter.

# ck_pipeline NAME FORMAT [EVERY [LINE...]]: an incremental pipeline of
# tap-counter that checkpoints every EVERY (default 100B: a STATE comes every
# 2 records of 42 bytes, so a checkpoint every 4 records), with LINEs added
# under destination:.
ck_pipeline() {
	local name=$1 format=$2 every=${3:-100B} line
	shift 2
	[ $# -gt 0 ] && shift
	mkdir -p "$FAKE_DIR/tap-counter"
	{
		printf 'source:\n  tap: tap-counter\ndestination:\n'
		bucket_yaml
		printf '  format: %s\n' "$format"
		for line; do
			printf '  %s\n' "$line"
		done
		printf 'incremental:\n  enabled: true\n  checkpoint_every: %s\n' "$every"
	} >"$DATASPOC_PIPE_HOME/pipelines/$name.yaml"
}

# ck_ids [FOLDER]: the ids landed (JSON lines), one line, sorted with their
# repeats: "1 2 3 4".
ck_ids() {
	table_data "${1:-raw/counter/ev}" | jq -r .id | sort -n | tr '\n' ' ' | sed 's/ $//'
}

# ck_seq N: "1 2 ... N"
ck_seq() {
	seq "$1" | tr '\n' ' ' | sed 's/ $//'
}

ck_log() {
	bucket_cat "$(bucket_keys ".dataspoc/logs/$1/" | sed -n "${2:-\$}p")"
}

# A failed run keeps what its checkpoints committed, and only that; the next
# run goes on from the last checkpoint's state.
scenario_ck_fail_resume() {
	ck_pipeline ck jsonl
	COUNTER_FAIL=7 run -1 --separate-stderr dataspoc-pipe run ck
	[[ $stderr == *"run 'ck' failed: tap-counter exited with status 3"* ]]
	bucket_cat .dataspoc/state/ck/state.json | jq -c . >state
	expect_file state <<<'{"n":4}'
	[ "$(ck_ids)" = "1 2 3 4" ]
	ck_log ck | jq -c '[.status, .total_records, .checkpointed_records, .uncommitted_records, [.checkpoints[] | [.unit, .records]], .streams.ev.records]' >log
	expect_file log <<<'["failure",4,4,3,[[1,4]],4]'
	run -0 bucket_keys .dataspoc/state/ck/checkpoints/
	assert_output ""
	run -0 dataspoc-pipe status --output json
	jq -c '.[] | [.status, .records]' <<<"$output" >status
	expect_file status <<<'["failure",4]'
	run -0 dataspoc-pipe logs ck
	assert_output --partial "  checkpoint 1 at "
	assert_output --partial "  not committed  3 records after the last checkpoint"

	run -0 --separate-stderr dataspoc-pipe run ck
	assert_output --partial "Done! 6 records in 1 stream(s)"
	[ "$(ck_ids)" = "$(ck_seq 10)" ]
	bucket_cat .dataspoc/state/ck/state.json | jq -c . >state
	expect_file state <<<'{"n":10}'
	ck_log ck | jq -c '[.status, .total_records, .checkpointed_records, [.checkpoints[] | [.unit, .records]]]' >log
	expect_file log <<<'["success",6,4,[[1,4]]]'
	bucket_cat .dataspoc/manifest.json | jq -c '.tables["counter/ev"].stats | [.total_rows, .extractions, .last_extraction_rows]' >stats
	expect_file stats <<<'[10,2,6]'
	run -0 bucket_keys .dataspoc/state/ck/
	assert_output ".dataspoc/state/ck/state.json"
}

# SIGKILL of the driver after a checkpoint: the next run logs the dead run as
# failed with its checkpoint, and the lake holds every record once.
scenario_ck_kill_driver() {
	ck_pipeline ck jsonl
	COUNTER_BLOCK=7 dataspoc-pipe run ck >run.out 2>run.err &
	local driver=$! st=0 rid
	BG_PIDS="$BG_PIDS $driver"
	wait_for "$FAKE_DIR/tap-counter/ready"
	rid=$(bucket_cat .dataspoc/state/ck/lock | jq -r .run_id)
	# the checkpoint of records 1-4 (the tap blocks at record 7; pipe-commit
	# -k publishes it meanwhile)
	wait_until bucket_exists ".dataspoc/state/ck/checkpoints/$rid.json"
	[ "$(ck_ids)" = "1 2 3 4" ]
	kill -9 "$driver"
	wait "$driver" || st=$?
	assert_equal "$st" 137
	wait_until no_stage_left
	run -0 --separate-stderr dataspoc-pipe run ck
	assert_output --partial "Done! 6 records in 1 stream(s)"
	[[ $stderr == *"dataspoc-pipe: warning: run $rid ended after checkpoint 1 without its last commit: logged as failed; its checkpoints stay"* ]]
	[ "$(ck_ids)" = "$(ck_seq 10)" ]
	bucket_cat ".dataspoc/logs/ck/$rid.json" | jq -c '[.status, .total_records, .checkpointed_records]' >log
	expect_file log <<<'["failure",4,4]'
	run -0 bucket_keys .dataspoc/state/ck/checkpoints/
	assert_output ""
}

no_stage_left() {
	[ -z "$(pids_of_test)" ]
}

# Parquet, several checkpoints, a failure, then DataSpoc Lens's reading:
# one table, every row once.
scenario_ck_parquet_lens() {
	ck_pipeline ck parquet
	COUNTER_N=40 COUNTER_FAIL=31 run -1 --separate-stderr dataspoc-pipe run ck
	ck_log ck | jq -c '[.checkpointed_records, (.checkpoints | length)]' >log
	expect_file log <<<'[28,7]'
	[ "$(lens counter/ev | jq -r .id | sort -n | tr '\n' ' ' | sed 's/ $//')" = "$(ck_seq 28)" ]
	COUNTER_N=40 run -0 --separate-stderr dataspoc-pipe run ck
	[ "$(lens counter/ev | jq -r .id | sort -n | tr '\n' ' ' | sed 's/ $//')" = "$(ck_seq 40)" ]
	bucket_cat .dataspoc/manifest.json | jq -c '.tables["counter/ev"].stats.total_rows' >rows
	expect_file rows <<<40
}

# ck_table: table counter/ev as Lens reads it, "id i" a line by id, i the
# record whose version it holds.
ck_table() {
	lens counter/ev | jq -r '"\(.id) \(.v | split(" ")[1])"' | sort -n
}

# ck_model N K: what the table holds after records 1..N of keys K
# (COUNTER_KEYS): each id's last record.
ck_model() {
	local i
	for i in $(seq 1 "$1"); do
		echo "$(((i - 1) % $2 + 1)) $i"
	done | sort -n -k1,1 -k2,2 | awk '{ last[$1] = $2 } END { for (k in last) print k, last[k] }' | sort -n
}

ck_state_n() {
	bucket_cat .dataspoc/state/ck/state.json | jq -r .n
}

# Upsert with checkpoints (issue #27): each unit merged and published
# whole.  A run killed after a checkpoint leaves the table of the units it
# committed; the next run merges on; a failed run keeps its last committed
# unit's table; --full rebuilds with its first unit, and its later units
# merge with it (its last unit sends ids 3 and 1 only: id 2 stays).
scenario_ck_upsert() {
	ck_pipeline ck parquet 100B "load_method: upsert"
	export COUNTER_KEYS=3
	COUNTER_BLOCK=7 dataspoc-pipe run ck >run.out 2>run.err &
	local driver=$! st=0 rid
	BG_PIDS="$BG_PIDS $driver"
	wait_for "$FAKE_DIR/tap-counter/ready"
	rid=$(bucket_cat .dataspoc/state/ck/lock | jq -r .run_id)
	wait_until bucket_exists ".dataspoc/state/ck/checkpoints/$rid.json"
	# unit 1 (records 1-4: ids 1 2 3 1) is the table
	[ "$(ck_state_n)" = 4 ]
	ck_table >rows
	ck_model 4 3 | diff -u - rows
	kill -9 "$driver"
	wait "$driver" || st=$?
	assert_equal "$st" 137
	wait_until no_stage_left
	ck_table | diff -u rows -
	run -0 --separate-stderr dataspoc-pipe run ck
	ck_table >rows
	ck_model 10 3 | diff -u - rows
	run -0 distinct_ok counter/ev
	assert_output "3 3"
	bucket_cat .dataspoc/manifest.json | jq -c '.tables["counter/ev"] | [.load_method, .stats.total_rows]' >m
	expect_file m <<<'["upsert",3]'
	# a failed run: the table of its last committed unit
	COUNTER_N=20 COUNTER_FAIL=17 run -1 --separate-stderr dataspoc-pipe run ck
	[ "$(ck_state_n)" -gt 10 ] && [ "$(ck_state_n)" -lt 17 ]
	ck_table >rows
	ck_model "$(ck_state_n)" 3 | diff -u - rows
	COUNTER_N=20 run -0 --separate-stderr dataspoc-pipe run ck
	ck_table >rows
	ck_model 20 3 | diff -u - rows
	# --full: three units
	run -0 --separate-stderr dataspoc-pipe run --full ck
	ck_log ck | jq -c '.checkpoints | length' >n
	expect_file n <<<2
	ck_table >rows
	ck_model 10 3 | diff -u - rows
	run -0 distinct_ok counter/ev
	assert_output "3 3"
}
