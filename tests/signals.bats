#!/usr/bin/env bats
# signals.bats: SIGTERM, SIGINT and SIGHUP to `dataspoc-pipe run` at the
# moments tests/faults/run reaches only by chance: while pipe-state get
# holds the lock (held up here by a FIFO as state.json, which it reads after
# taking the lock).  The run must stop before any stage starts: exit 128+n,
# a failure log naming the signal, the lock released, the state untouched,
# no temporary file left.

load helpers/common

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

# signal_ignored PID N: status 0 when process PID ignores signal N (its
# SigIgn mask in /proc has bit N-1 set).
signal_ignored() {
	local mask
	mask=$(awk '$1 == "SigIgn:" { print $2 }' "/proc/$1/status") || return 1
	(( (16#$mask >> ($2 - 1)) & 1 ))
}

# driver_exits PID STATUS: the driver PID ends with STATUS; bounded: a
# driver still there after WAIT_LIMIT is killed (137).
driver_exits() {
	local watchdog st=0
	(sleep "$WAIT_LIMIT"; kill -9 "$1" 2>/dev/null) &
	watchdog=$!
	BG_PIDS="$BG_PIDS $watchdog"
	wait "$1" || st=$?
	kill "$watchdog" 2>/dev/null || true
	assert_equal "$st" "$2"
}

# signal_during_state_get SIGNAL N
signal_during_state_get() {
	local fifo=$BUCKET_DIR/.dataspoc/state/sig/state.json driver rid
	mkdir -p "${fifo%/*}"
	mkfifo "$fifo"
	# (a script's background jobs ignore SIGINT unless told otherwise, and
	# under nohup everything inherits SIGHUP ignored: give both back)
	env --default-signal=INT,HUP dataspoc-pipe run sig >out 2>err &
	driver=$!
	BG_PIDS="$BG_PIDS $driver"
	wait_until bucket_exists .dataspoc/state/sig/lock
	wait_until pid_of pipe-state >/dev/null
	# A shell cannot trap a signal ignored when it started: such a driver
	# would never see the signal, and the test would only wait.
	if signal_ignored "$driver" "$2"; then
		skip "the driver started with SIG$1 ignored (nohup?): it cannot be caught"
	fi
	rid=$(bucket_cat .dataspoc/state/sig/lock | jq -r .run_id)
	kill -s "$1" "$driver"
	# pipe-state gets its state and ends; the driver goes no further
	timeout "$WAIT_LIMIT" sh -c 'echo "{\"n\":0}" >"$1"' sh "$fifo"
	driver_exits "$driver" $((128 + $2))
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

@test "under nohup (SIGHUP ignored) the SIGHUP test ends, bounded, instead of hanging" {
	run -0 timeout 120 env --ignore-signal=HUP WAIT_LIMIT=20 PIPE_BIN="$PIPE_BIN" \
		bats -f 'SIGHUP while pipe-state get' "$BATS_TEST_DIRNAME/signals.bats"
	assert_line --index 0 "1..1"
	assert_line --index 1 --regexp '^ok 1 SIGHUP while pipe-state get runs'
}

# signal_during_checks SIGNAL N: the signal while pipe-tap -n discovers
# the catalog (a tap held up by a file), before the run's own traps.
signal_during_checks() {
	local driver d=$FAKE_DIR/disc
	mkdir -p "$d"
	cat >"$BATS_TEST_TMPDIR/bin/tap-disc" <<-EOF
	#!/bin/sh
	case " \$* " in
	*" --discover "*)
		: >"$d/ready"
		while [ ! -e "$d/release" ]; do sleep 0.05; done
		echo '{"streams":[{"tap_stream_id":"s","stream":"s","schema":{},"metadata":[]}]}' ;;
	esac
	EOF
	chmod +x "$BATS_TEST_TMPDIR/bin/tap-disc"
	{
		printf 'source:\n  tap: tap-disc\n  streams: [s]\ndestination:\n'
		bucket_yaml
		printf '  format: jsonl\n'
	} >"$DATASPOC_PIPE_HOME/pipelines/disc.yaml"
	env --default-signal=INT,HUP dataspoc-pipe run disc >out 2>err &
	driver=$!
	BG_PIDS="$BG_PIDS $driver"
	wait_for "$d/ready"
	if signal_ignored "$driver" "$2"; then
		skip "the driver started with SIG$1 ignored (nohup?): it cannot be caught"
	fi
	kill -s "$1" "$driver"
	: >"$d/release"
	driver_exits "$driver" $((128 + $2))
	# nothing touched; the driver's private folder gone with it
	run -0 bucket_keys
	assert_output ""
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

@test "SIGINT while the checks run: 130, TMPDIR left empty" {
	signal_during_checks INT 2
}

@test "SIGTERM while the checks run: 143, TMPDIR left empty" {
	signal_during_checks TERM 15
}
