#!/usr/bin/env bats
# orphans.bats: no process of a run outlives its driver.  After kill -9 of
# dataspoc-pipe the tap's process group, pipe-tap and pipe-sink go within
# seconds (pipe-tap watches $DATASPOC_PIPE_PID), and the next run takes the
# dead run's lock over and finds the bucket as before.

load test_helper

setup() {
	pipe_setup
	use_tap tap-orph
	T=$FAKE_DIR/tap-orph
	write_pipeline orph tap-orph
}

teardown() {
	pipe_teardown
}

# A bound of a few seconds: the 2 s of grace for the tap, and some slack.
QUICK=8

# The pids of this test's processes in process group $1.
in_group() {
	local p stat
	for p in $(pids_of_test); do
		read -r stat 2>/dev/null <"/proc/$p/stat" || continue
		stat=${stat##*) }
		set -- "$1" $stat
		[ "$6" = "$1" ] && echo "$p"
		set -- "$1"
	done
	return 0
}

nothing_in_group() {
	[ -z "$(in_group "$1")" ]
}

nothing_left() {
	[ -z "$(pids_of_test)" ]
}

@test "kill -9 of the driver: the tap's processes go within seconds; the next run finds the bucket as before" {
	printf '%s\n' '{"type":"RECORD","stream":"s","record":{"n":1}}' '{"type":"STATE","value":{"n":1}}' >"$T/out"
	run -0 --separate-stderr dataspoc-pipe run orph
	bucket_snapshot | grep -v ' \.dataspoc/logs/' >before.snap
	printf '%s\n' '{"type":"RECORD","stream":"s","record":{"n":2}}' >"$T/out"
	: >"$T/block"
	dataspoc-pipe run orph >run.out 2>run.err &
	local driver=$! st=0 tap pt pgid rid
	BG_PIDS="$BG_PIDS $driver"
	wait_for "$T/ready"
	rid=$(bucket_cat .dataspoc/state/orph/lock | jq -r .run_id)
	read -r tap pt <"$T/pid"
	pgid=$(ps -o pgid= -p "$tap" | tr -d ' ')
	alive "$tap"
	kill -9 "$driver"
	wait "$driver" || st=$?
	assert_equal "$st" 137
	# the tap was never released: only the driver's death stops it
	WAIT_LIMIT=$QUICK wait_until dead "$tap"
	WAIT_LIMIT=$QUICK wait_until nothing_in_group "$pgid"
	WAIT_LIMIT=$QUICK wait_until nothing_left
	[ ! -e "$T/release" ]

	rm -f "$T/block"
	: >"$T/out"
	run -0 --separate-stderr dataspoc-pipe run orph
	assert_output "Running: orph
  Incremental mode (using previous checkpoint)
Done! 0 records in 0 stream(s)"
	assert_stderr "pipe-state: warning: pipeline 'orph': taking over the lock of run $rid (pid $driver on $(hostname)), which is no longer running"
	bucket_snapshot | grep -v ' \.dataspoc/logs/' >after.snap
	diff -u before.snap after.snap
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
}

@test "pipe-tap: when the process of \$DATASPOC_PIPE_PID ends, the tap's group is stopped" {
	# the tap starts a child of its own, in its group
	printf '#!/bin/sh\nsleep 300 &\necho $! >"%s/child"\necho "$$ $PPID" >"%s/pid"\n: >"%s/ready"\nwait\n' \
		"$FAKE_DIR" "$FAKE_DIR" "$FAKE_DIR" >"$BATS_TEST_TMPDIR/bin/tap-kid"
	chmod +x "$BATS_TEST_TMPDIR/bin/tap-kid"
	write_pipeline kid tap-kid
	sleep 300 &
	local drv=$! st=0 pt tap ppid child
	BG_PIDS="$BG_PIDS $drv"
	DATASPOC_PIPE_PID=$drv pipe-tap kid </dev/null >dump 2>err &
	pt=$!
	BG_PIDS="$BG_PIDS $pt"
	wait_for "$FAKE_DIR/ready"
	read -r tap ppid <"$FAKE_DIR/pid"
	child=$(cat "$FAKE_DIR/child")
	assert_equal "$ppid" "$pt"
	# the tap leads a group of its own
	assert_equal "$(ps -o pgid= -p "$tap" | tr -d ' ')" "$tap"
	kill -9 "$drv"
	WAIT_LIMIT=$QUICK wait_until dead "$pt"
	wait "$pt" || st=$?
	assert_equal "$st" 1
	dead "$tap"
	WAIT_LIMIT=$QUICK wait_until dead "$child"
	expect_file err <<<"pipe-tap: tap-kid stopped: its driver (pid $drv) is gone"
	expect_file dump <<<"{\"type\":\"DATASPOC_TAP_END\",\"status\":\"failure\",\"exit_status\":1,\"error\":\"tap-kid stopped: its driver (pid $drv) is gone\"}"
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

@test "pipe-tap: a driver already gone: the tap does not start" {
	sh -c 'exit 0' &
	local gone=$!
	wait "$gone" || true
	run -1 --separate-stderr env DATASPOC_PIPE_PID=$gone pipe-tap orph </dev/null
	assert_stderr "pipe-tap: tap-orph not started: its driver (pid $gone) is gone"
	[ ! -e "$T/runs" ]
}

@test "kill -9 of pipe-tap: its tap goes at once (a parent-death signal)" {
	: >"$T/block"
	pipe-tap orph </dev/null >dump 2>err &
	local pt=$! tap ppid
	BG_PIDS="$BG_PIDS $pt"
	wait_for "$T/ready"
	read -r tap ppid <"$T/pid"
	kill -9 "$pt"
	WAIT_LIMIT=$QUICK wait_until dead "$tap"
	[ ! -e "$T/release" ]
	# and the janitor removed the private folder
	WAIT_LIMIT=$QUICK wait_until nothing_left
	run -0 ls -A "$TMPDIR"
	assert_output ""
}
