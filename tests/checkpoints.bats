#!/usr/bin/env bats
# incremental.checkpoint_every (issue #15) on a local bucket: the scenarios
# of tests/helpers/checkpoint_scenarios.bash, and what only a local run shows.

load helpers/common
use_local_lake
load helpers/checkpoint_scenarios

@test "checkpoints: a failed run keeps its checkpoints' records once, logs them, and the next run goes on from there" {
	scenario_ck_fail_resume
}

@test "checkpoints: kill -9 of the driver after a checkpoint: the next run logs it as failed, every record once" {
	scenario_ck_kill_driver
}

@test "checkpoints: Parquet, seven checkpoints and a failure: Lens reads every row once, before and after the next run" {
	scenario_ck_parquet_lens
}

@test "checkpoint_every: a snapshot pipeline refuses it; durations and sizes, and what is not one, at file:line:col" {
	local f=$DATASPOC_PIPE_HOME/pipelines/ck.yaml
	ck_pipeline ck jsonl 15m
	sed -i 's/enabled: true/enabled: false/' "$f"
	run -2 --separate-stderr dataspoc-pipe run ck
	[[ $stderr == *"ck.yaml:8:3: incremental.checkpoint_every needs incremental.enabled: true (a snapshot pipeline replaces its tables whole, and a checkpoint would publish half of one)"* ]]
	run_ok() {
		ck_pipeline ck jsonl "$1"
		run -0 --separate-stderr pipe-sink -n ck
		assert_output checkpoints
	}
	run_ok 30s
	run_ok 15m
	run_ok 2h
	run_ok 10min
	run_ok 512MiB
	run_ok 1GB
	run_ok 64B
	local bad
	for bad in 15M 15 0s 1.5h 10d -3m 0B MiB; do
		ck_pipeline ck jsonl "$bad"
		run -2 --separate-stderr pipe-sink -n ck
		[[ $stderr == *"ck.yaml:8:21: incremental.checkpoint_every must be a duration (30s, 15m, 1h) or a size of records (512MiB), not '$bad'"* ]]
	done
	# without it, pipe-sink -n prints nothing (the driver runs no pipe-commit -k)
	write_pipeline plain tap-counter
	run -0 --separate-stderr pipe-sink -n plain
	assert_output ""
}

@test "checkpoints: without checkpoint_every nothing changes: a failed run commits nothing, its plan has no unit" {
	mkdir -p "$FAKE_DIR/tap-counter"
	write_pipeline plain tap-counter
	COUNTER_FAIL=7 run -1 --separate-stderr dataspoc-pipe run plain
	run -0 bucket_files
	assert_output ""
	run -1 bucket_exists .dataspoc/state/plain/state.json
	pipe-state new-run-id >rid
	echo '{}' | DATASPOC_RUN_ID=$(cat rid) pipe-tap plain | DATASPOC_RUN_ID=$(cat rid) pipe-sink -q plain >plan
	run -1 grep -c '"type":"checkpoint"' plan
}

@test "checkpoints: the stages by hand: pipe-commit -k publishes each unit as it passes, pipe-commit the rest" {
	local rid
	ck_pipeline ck jsonl
	rid=$(pipe-state new-run-id)
	export DATASPOC_RUN_ID=$rid
	pipe-state get ck >state
	pipe-tap ck <state | pipe-sink -q ck | pipe-commit -k ck >plan
	# units 1 and 2 (records 1-8) are published, the rest is not yet
	grep -c '"type":"checkpoint"' plan >n
	expect_file n <<<2
	[ "$(ck_ids)" = "$(ck_seq 8)" ]
	bucket_cat .dataspoc/state/ck/state.json | jq -c . >state
	expect_file state <<<'{"n":8}'
	run -0 pipe-commit ck <plan
	assert_output "Done! 10 records in 1 stream(s)
  ev: 10"
	[ "$(ck_ids)" = "$(ck_seq 10)" ]
	ck_log ck | jq -c '[.status, .total_records, .checkpointed_records]' >log
	expect_file log <<<'["success",10,8]'
	# the same plan again (a retry) publishes nothing twice
	run -0 --separate-stderr pipe-commit ck <plan
	[ "$(ck_ids)" = "$(ck_seq 10)" ]
	bucket_cat .dataspoc/manifest.json | jq -c '.tables["counter/ev"].stats | [.total_rows, .extractions]' >stats
	expect_file stats <<<'[10,1]'
}

@test "checkpoints: --full keeps the old state until the first checkpoint commits" {
	ck_pipeline ck jsonl
	run -0 --separate-stderr dataspoc-pipe run ck
	# a full run that fails before its first checkpoint: the old state stays
	COUNTER_FAIL=3 run -1 --separate-stderr dataspoc-pipe run ck --full
	bucket_cat .dataspoc/state/ck/state.json | jq -c . >state
	expect_file state <<<'{"n":10}'
	# one that fails after it: the checkpoint's state
	COUNTER_FAIL=6 run -1 --separate-stderr dataspoc-pipe run ck --full
	bucket_cat .dataspoc/state/ck/state.json | jq -c . >state
	expect_file state <<<'{"n":4}'
	[ "$(ck_ids)" = "1 1 2 2 3 3 4 4 5 6 7 8 9 10" ]
}

@test "checkpoints: a transform's records are what the checkpoints publish" {
	ck_pipeline ck jsonl 10B
	mkdir -p "$DATASPOC_PIPE_HOME/transforms"
	echo 'select(.id % 3 != 0) | del(.v)' >"$DATASPOC_PIPE_HOME/transforms/ck.jq"
	COUNTER_FAIL=7 run -1 --separate-stderr dataspoc-pipe run ck
	table_data raw/counter/ev | jq -c . >landed
	expect_file landed <<-'EOF'
	{"id":1}
	{"id":2}
	{"id":4}
	{"id":5}
	EOF
	run -0 --separate-stderr dataspoc-pipe run ck
	[ "$(ck_ids)" = "1 2 4 5 7 8 10" ]
}

@test "checkpoints: many streams through one open file and the spill file: every record once" {
	ck_pipeline ck jsonl
	COUNTER_STREAMS=5 COUNTER_N=60 COUNTER_FAIL=43 DATASPOC_PIPE_MAX_OPEN=1 \
		run -1 --separate-stderr dataspoc-pipe run ck
	ck_log ck | jq -c '.checkpointed_records' >n
	expect_file n <<<40
	local s all=
	for s in 0 1 2 3 4; do
		all="$all $(ck_ids raw/counter/ev$s)"
	done
	[ "$(tr ' ' '\n' <<<"$all" | grep . | sort -n | tr '\n' ' ' | sed 's/ $//')" = "$(ck_seq 40)" ]
	COUNTER_STREAMS=5 COUNTER_N=60 DATASPOC_PIPE_MAX_OPEN=1 run -0 --separate-stderr dataspoc-pipe run ck
	all=
	for s in 0 1 2 3 4; do
		all="$all $(ck_ids raw/counter/ev$s)"
	done
	[ "$(tr ' ' '\n' <<<"$all" | grep . | sort -n | tr '\n' ' ' | sed 's/ $//')" = "$(ck_seq 60)" ]
}

@test "checkpoints: FULL_TABLE with ACTIVATE_VERSION (tap-mysql): a new version waits for the run's end; one copy always" {
	use_tap tap-mysql
	lake_pipeline my tap-mysql true 'format: jsonl'
	printf '  checkpoint_every: 1B\n' >>"$DATASPOC_PIPE_HOME/pipelines/my.yaml"
	local n1 n2
	n1=$(grep -c '"type": "RECORD"' "$FIXTURES/tap-mysql/run-full1.jsonl")
	n2=$(grep -c '"type": "RECORD"' "$FIXTURES/tap-mysql/run-full2.jsonl")
	cp "$FIXTURES/tap-mysql/run-full1.jsonl" "$FAKE_DIR/tap-mysql/out"
	# the first copy: no version is recorded yet, so checkpoints publish it
	run -0 --separate-stderr dataspoc-pipe run my
	[ "$(table_data raw/mysql/products | wc -l)" -eq "$n1" ]
	[[ $stderr != *"waits"* ]]
	# a new version that fails half way: the old copy, whole, and only it
	head -n 14 "$FIXTURES/tap-mysql/run-full2.jsonl" >"$FAKE_DIR/tap-mysql/out"
	echo 1 >"$FAKE_DIR/tap-mysql/exit"
	run -1 --separate-stderr dataspoc-pipe run my
	[[ $stderr == *"waits: stream 'products' lands table version"* ]]
	[ "$(table_data raw/mysql/products | wc -l)" -eq "$n1" ]
	rm "$FAKE_DIR/tap-mysql/exit"
	cp "$FIXTURES/tap-mysql/run-full2.jsonl" "$FAKE_DIR/tap-mysql/out"
	run -0 --separate-stderr dataspoc-pipe run my
	[ "$(table_data raw/mysql/products | wc -l)" -eq "$n2" ]
}

@test "pipe-commit -k: a plan of another run publishes nothing; a record of checkpoints that is not one stops the checkpoint, left pending for the next run" {
	local rid other
	ck_pipeline ck jsonl
	rid=$(pipe-state new-run-id)
	other=$(pipe-state new-run-id)
	echo '{}' | DATASPOC_RUN_ID=$rid pipe-tap ck | DATASPOC_RUN_ID=$rid pipe-sink -q ck >plan
	grep -q '"type":"checkpoint"' plan
	# the plan is another run's
	run -1 --separate-stderr env DATASPOC_RUN_ID=$other pipe-commit -k ck <plan
	[[ $stderr == *"pipe-commit: the plan is of run $rid, not $other; nothing published"* ]]
	run -0 bucket_files
	assert_output ""
	run -1 bucket_exists .dataspoc/state/ck/state.json
	# the run's record of checkpoints is not one
	echo 'not json' | bucket_put ".dataspoc/state/ck/checkpoints/$rid.json"
	run -1 --separate-stderr env DATASPOC_RUN_ID=$rid pipe-commit -k ck <plan
	[[ $stderr == *"is not a record of checkpoints; inspect and remove it by hand"* ]]
	[[ $stderr == *"checkpoint 1 of run $rid did not finish"* ]]
	# (the record is written last: the checkpoint's commit began, and stays
	# pending for the next run, which finishes it once the record is mended)
	bucket_exists ".dataspoc/state/ck/pending/$rid.json"
	bucket_rm ".dataspoc/state/ck/checkpoints/$rid.json"
	run -0 --separate-stderr pipe-state get -r "$(pipe-state new-run-id)" ck
	[[ $stderr == *"finishing the commit of run $rid"* ]]
	run -1 bucket_exists ".dataspoc/state/ck/pending/$rid.json"
	[ "$(ck_ids)" = "$(ck_seq 4)" ]
}

@test "checkpoints: a checkpoint that cannot publish fails the run at once, says so, changes no state; the next run finishes it" {
	ck_pipeline ck jsonl
	# a file where the table's folder goes: the first checkpoint's publish fails
	echo block | bucket_put raw/counter/ev
	run -1 --separate-stderr dataspoc-pipe run ck
	[[ $stderr == *"dataspoc-pipe: checkpoint 1 of run "*" did not finish; the next run of 'ck' finishes it"* ]]
	[[ $stderr == *"a checkpoint did not finish (pipe-commit -k exited with status 1)"* ]]
	run -1 bucket_exists .dataspoc/state/ck/state.json
	run -0 bucket_files
	assert_output raw/counter/ev
	bucket_rm raw/counter/ev
	run -0 --separate-stderr dataspoc-pipe run ck
	[[ $stderr == *"finishing the commit of run "* ]]
	[ "$(ck_ids)" = "$(ck_seq 10)" ]
}

@test "checkpoints with upsert: each unit merged and published whole; kill -9 after a checkpoint leaves that unit's table; a failed run keeps its last unit's; --full rebuilds with its first unit only" {
	load helpers/upsert_scenarios
	scenario_ck_upsert
}
