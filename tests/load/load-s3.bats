#!/usr/bin/env bats
# load-s3.bats: the concurrent pipelines of load.bats on s3:// — 20
# pipelines by `run --all -j 8` into one bucket of an S3 server started
# here (s3rver, tests/helpers/s3.bash), twice.  Smaller volumes than on the
# local bucket (LOAD_S3_RECORDS records per stream and run, default 200):
# s3rver is one node process on the same cores, and what is tested here is
# the concurrency, not the volume.

load ../helpers/load
S3RVER_JS=${S3RVER_JS:-$BATS_TEST_DIRNAME/../../.deps/node_modules/s3rver/bin/s3rver.js}
load ../helpers/s3

setup_file() {
	load_build
	s3_start
}

teardown_file() {
	s3_stop
}

setup() {
	load_setup
}

teardown() {
	pipe_teardown
}

# What landed, read from the mirror of the bucket.
landed_dir() {
	s3_sync || return 1
	printf '%s\n' "$S3_MIRROR"
}

@test "s3: run --all -j 8: 20 pipelines into one bucket, twice, every state and table right" {
	scenario_concurrent "${LOAD_S3_RECORDS:-200}"
}
