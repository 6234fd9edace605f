#!/usr/bin/env bats
# signals.bats: SIGTERM, SIGINT and SIGHUP to `dataspoc-pipe run` at the
# moments tests/faults/run reaches only by chance: while pipe-state get
# holds the lock (held up here by a FIFO as state.json, which it reads after
# taking the lock).  The run must stop before any stage starts: exit 128+n,
# a failure log naming the signal, the lock released, the state untouched,
# no temporary file left.

load test_helper

setup() {
	pipe_setup
	use_tap tap-sig
	printf '%s\n' '{"type":"RECORD","stream":"s","record":{"n":1}}' '{"type":"STATE","value":{"n":1}}' >"$FAKE_DIR/tap-sig/out"
	write_pipeline sig tap-sig
}

teardown() {
	# a reader still blocked on the FIFO goes on
	[ -p "$BUCKET_DIR/.dataspoc/state/sig/state.json" ] &&
		{ timeout 5 sh -c "echo '{}' >'$BUCKET_DIR/.dataspoc/state/sig/state.json'" || true; }
	pipe_teardown
}

# signal_during_state_get SIGNAL N
signal_during_state_get() {
	local fifo=$BUCKET_DIR/.dataspoc/state/sig/state.json driver st=0 rid
	mkdir -p "${fifo%/*}"
	mkfifo "$fifo"
	# (a script's background jobs ignore SIGINT unless told otherwise)
	env --default-signal=INT dataspoc-pipe run sig >out 2>err &
	driver=$!
	BG_PIDS="$BG_PIDS $driver"
	wait_until bucket_exists .dataspoc/state/sig/lock
	wait_until pid_of pipe-state >/dev/null
	rid=$(bucket_cat .dataspoc/state/sig/lock | jq -r .run_id)
	kill -s "$1" "$driver"
	# pipe-state gets its state and ends; the driver goes no further
	echo '{"n":0}' >"$fifo"
	wait "$driver" || st=$?
	assert_equal "$st" $((128 + $2))
	[ ! -e "$FAKE_DIR/tap-sig/runs" ]
	expect_file out <<<"Running: sig"
	expect_file err <<<"dataspoc-pipe: run 'sig' failed: interrupted by SIG$1"
	bucket_cat ".dataspoc/logs/sig/$rid.json" | jq -r '.status + ": " + .error' >log.got
	expect_file log.got <<<"failure: interrupted by SIG$1"
	run -1 bucket_exists .dataspoc/state/sig/lock
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	run -0 bucket_files
	assert_output ""
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

@test "SIGTERM while pipe-state get runs: 143, the tap never starts" {
	signal_during_state_get TERM 15
}

@test "SIGINT while pipe-state get runs: 130, the tap never starts" {
	signal_during_state_get INT 2
}

@test "SIGHUP while pipe-state get runs: 129, the tap never starts" {
	signal_during_state_get HUP 1
}
