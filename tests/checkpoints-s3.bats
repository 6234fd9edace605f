#!/usr/bin/env bats
# incremental.checkpoint_every (issue #15) on s3:// (s3rver on 127.0.0.1):
# the scenarios of tests/helpers/checkpoint_scenarios.bash, and checkpoints that
# close multipart uploads.

load helpers/common
load helpers/s3
load helpers/checkpoint_scenarios

use_s3_lake

@test "s3 checkpoints: a failed run keeps its checkpoints' records once, logs them, and the next run goes on from there" {
	scenario_ck_fail_resume
}

@test "s3 checkpoints: kill -9 of the driver after a checkpoint: the next run logs it as failed, every record once" {
	scenario_ck_kill_driver
}

@test "s3 checkpoints: Parquet, seven checkpoints and a failure: Lens reads every row once, before and after the next run" {
	scenario_ck_parquet_lens
}

@test "s3 checkpoints: each checkpoint completes the multipart uploads of its files; a failure after three keeps their 30,000 records" {
	use_tap tap-big
	# 35,000 records of 1,000 bytes, a STATE every 10,000: a checkpoint of
	# 10 MB each (two 8 MiB parts); the tap fails 5,000 records later
	awk 'BEGIN { for (i = 1; i <= 35000; i++) {
		printf "{\"type\":\"RECORD\",\"stream\":\"big\",\"record\":{\"i\":%d,\"pad\":\"%0975d\"}}\n", i, i
		if (i % 10000 == 0) printf "{\"type\":\"STATE\",\"value\":{\"i\":%d}}\n", i } }' >"$FAKE_DIR/tap-big/out"
	echo 1 >"$FAKE_DIR/tap-big/exit"
	write_pipeline big tap-big true "compression: none"
	printf '  checkpoint_every: 9MiB\n' >>"$DATASPOC_PIPE_HOME/pipelines/big.yaml"
	s3_proxy
	AWS_ENDPOINT_URL=$PROXY_ENDPOINT run -1 --separate-stderr dataspoc-pipe run big
	[[ $stderr == *"run 'big' failed: tap-big exited with status 1"* ]]
	bucket_cat .dataspoc/state/big/state.json | jq -c . >state
	expect_file state <<<'{"i":30000}'
	table_data raw/big/big | jq -r .i >ids
	seq 30000 | diff -u - ids
	run -0 grep -c '^forwarded 200 POST /[^ ]*/.dataspoc/staging/big/[^ ]*?uploadId=' "$PROXY_LOG"
	assert_output 3
	bucket_cat "$(bucket_keys .dataspoc/logs/big/ | tail -n 1)" | jq -c '[.status, .checkpointed_records, (.checkpoints | length)]' >log
	expect_file log <<<'["failure",30000,3]'
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
}

@test "s3 checkpoints with upsert: each unit merged and published whole; kill -9 after a checkpoint leaves that unit's table; a failed run keeps its last unit's; --full rebuilds with its first unit only" {
	load helpers/upsert_scenarios
	scenario_ck_upsert
}
