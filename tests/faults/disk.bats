#!/usr/bin/env bats
# disk.bats: a bucket on a full disk and a read-only bucket.  The bucket is a
# 1 MiB tmpfs, or a read-only bind mount, mounted here: these tests need
# root (CAP_SYS_ADMIN) and are skipped, saying so, without it.  Run by
# `make test-faults`.

load ../helpers/common
TAPS=$BATS_TEST_DIRNAME/../taps

setup() {
	pipe_setup
	mkdir -p "$BUCKET_DIR"
	small_tmpfs "$BUCKET_DIR" || skip "cannot mount a tmpfs here (needs root): no full-disk test"
	use_tap tap-disk
	write_pipeline disk tap-disk true "compression: none"
	# a first run: the state and the data that must survive
	printf '%s\n' '{"type":"RECORD","stream":"s","record":{"n":1}}' '{"type":"STATE","value":{"n":1}}' >"$FAKE_DIR/tap-disk/out"
	run -0 --separate-stderr dataspoc-pipe run disk || { echo "$stderr" >&2; return 1; }
	snapshot_but_logs >before.snap
}

teardown() {
	unmount_all
	pipe_teardown
}

snapshot_but_logs() {
	bucket_snapshot | grep -v ' \.dataspoc/logs/' || true
}

# N bytes of records that do not compress, then a STATE, as the tap's output.
big_output() {
	head -c "$1" /dev/urandom | base64 -w 100 | sed 's/.*/{"type":"RECORD","stream":"s","record":{"b":"&"}}/'
	echo '{"type":"STATE","value":{"n":2}}'
}

# Fill the disk, leaving about $1 bytes (default none).
fill_disk() {
	dd if=/dev/zero of="$BUCKET_DIR/filler" bs=4096 2>/dev/null || true
	[ "${1:-0}" -eq 0 ] || truncate -s "-${1}" "$BUCKET_DIR/filler"
}

# The bucket is as before the failed run (run logs aside), with nothing staged,
# pending or locked.
expect_as_before() {
	rm -f "$BUCKET_DIR/filler"
	snapshot_but_logs >after.snap
	diff -u before.snap after.snap
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	run -1 bucket_exists .dataspoc/state/disk/lock
}

# Once there is room again, a run lands its records and saves its state.
expect_next_run_works() {
	rm -f "$BUCKET_DIR/filler"
	printf '%s\n' '{"type":"RECORD","stream":"s","record":{"n":3}}' '{"type":"STATE","value":{"n":3}}' >"$FAKE_DIR/tap-disk/out"
	run -0 --separate-stderr dataspoc-pipe run disk || { echo "$stderr" >&2; return 1; }
	bucket_cat .dataspoc/state/disk/state.json | jq -c . >state.got
	echo '{"n":3}' | expect_file state.got
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
}

@test "disk full: a run whose files do not fit fails with the reason; state and data as before" {
	big_output 1500000 >"$FAKE_DIR/tap-disk/out"
	run -1 --separate-stderr dataspoc-pipe run disk
	printf '%s\n' "$stderr" >err
	grep -q "^dataspoc-pipe: cannot write '$BUCKET_DIR/\.dataspoc/staging/disk/.*': No space left on device\$" err
	tail -n 1 err >last
	grep -q "^dataspoc-pipe: run 'disk' failed: cannot write '\.dataspoc/staging/disk/.*' in .*: No space left on device\$" last
	expect_as_before
	# the failure is logged, now that the staged files are gone, with its cause
	run -0 sh -c "cat '$BUCKET_DIR'/.dataspoc/logs/disk/*.json | jq -r 'select(.status == \"failure\") | .error'"
	assert_output --regexp "^cannot write '\.dataspoc/staging/disk/.*' in .*: No space left on device\$"
	run -0 dataspoc-pipe logs -n 1 disk
	assert_output --regexp "error +cannot write .*: No space left on device"
	expect_next_run_works
}

@test "disk full before the commit: pipe-commit fails with the reason, publishes nothing" {
	local rid
	rid=$(new_run_id)
	printf '%s\n' '{"type":"RECORD","stream":"s","record":{"n":2}}' '{"type":"STATE","value":{"n":2}}' >"$FAKE_DIR/tap-disk/out"
	DATASPOC_PIPE_PID=$$ pipe-state get -r "$rid" disk >state.line
	pipe-tap disk <state.line >dump.jsonl
	pipe-sink -q -r "$rid" disk <dump.jsonl >plan.jsonl
	fill_disk
	run -1 --separate-stderr pipe-commit -r "$rid" disk <plan.jsonl
	assert_output ""
	grep -q "No space left on device" <<<"$stderr"
	run -0 pipe-commit -a -r "$rid" -e "the disk is full" disk <plan.jsonl
	expect_as_before
	expect_next_run_works
}

# One page left: the pending plan fits (the lock, written a moment ago by
# pipe-state get, is not renewed), then the commit
# runs out of room.  Every step is idempotent: the next run, with room,
# finishes that commit.
@test "disk full in mid-commit: the commit is kept and the next run finishes it" {
	local rid i
	rid=$(new_run_id)
	printf '%s\n' '{"type":"RECORD","stream":"s","record":{"n":2}}' '{"type":"STATE","value":{"n":2}}' >"$FAKE_DIR/tap-disk/out"
	DATASPOC_PIPE_PID=$$ pipe-state get -r "$rid" disk >state.line
	pipe-tap disk <state.line >dump.jsonl
	pipe-sink -q -r "$rid" disk <dump.jsonl >plan.jsonl
	fill_disk 4096
	run -1 --separate-stderr pipe-commit -r "$rid" disk <plan.jsonl
	printf '%s\n' "$stderr" >err
	grep -qx "pipe-commit: the commit of run $rid did not finish; the next run of 'disk' finishes it" err
	grep -q "No space left on device" err
	bucket_exists ".dataspoc/state/disk/pending/$rid.json"
	run -0 --separate-stderr pipe-commit -a -r "$rid" -e "the disk is full" disk <plan.jsonl
	assert_stderr "pipe-commit: the commit of run $rid is pending; the next run of 'disk' finishes it"
	# the old state until the commit is finished
	bucket_cat .dataspoc/state/disk/state.json | jq -c . >state.got
	echo '{"n":1}' | expect_file state.got
	rm -f "$BUCKET_DIR/filler"
	printf '%s\n' '{"type":"STATE","value":{"n":2}}' >"$FAKE_DIR/tap-disk/out"
	run -0 --separate-stderr dataspoc-pipe run disk
	assert_stderr "dataspoc-pipe: warning: finishing the commit of run $rid, which was interrupted"
	no_pending disk
	# every record once: n=1 of the first run, n=2 of the finished commit
	for i in $(bucket_files); do bucket_cat "$i"; done | jq -c .n | sort >got
	printf '1\n2\n' | expect_file got
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
}

@test "read-only bucket: the run fails with the reason; nothing changes" {
	mount --bind "$BUCKET_DIR" "$BUCKET_DIR" && mount -o remount,ro,bind "$BUCKET_DIR" ||
		skip "cannot remount the bucket read-only here"
	MOUNTED="$BUCKET_DIR $BUCKET_DIR"
	bucket_snapshot >ro-before.snap
	printf '%s\n' '{"type":"RECORD","stream":"s","record":{"n":2}}' >"$FAKE_DIR/tap-disk/out"
	run -1 --separate-stderr dataspoc-pipe run disk
	printf '%s\n' "$stderr" >err
	grep -q "Read-only file system" err
	tail -n 1 err >last
	grep -q "^dataspoc-pipe: run 'disk' failed: .*Read-only file system" last
	[ ! -e "$FAKE_DIR/tap-disk/runs" ] || [ "$(wc -l <"$FAKE_DIR/tap-disk/runs")" -eq 1 ]
	bucket_snapshot >ro-after.snap
	diff -u ro-before.snap ro-after.snap
	umount "$BUCKET_DIR"
	MOUNTED=$BUCKET_DIR
	expect_next_run_works
}
