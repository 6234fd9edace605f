#!/usr/bin/env bats
# stages.bats: the stages of a run (pipe-tap, the tap, pipe-sink) end with
# it, whatever they do, and what they leave in TMPDIR stays small.
#
#   - a tap that ignores SIGTERM (tests/taps/tap-stubborn) is killed after
#     the grace period ($DATASPOC_PIPE_KILL_GRACE) when pipe-sink fails or the
#     driver is signalled, and the run lock goes only once no process of the
#     stages is left;
#   - the tap's stderr is kept to its end (pipe-tap -l), so a tap that talks
#     a lot cannot fill TMPDIR; a full TMPDIR is named as the reason (those
#     tests mount a 1 MiB tmpfs as TMPDIR: they need root, and are skipped
#     without it).

load helpers/common

setup() {
	pipe_setup
	ln -sf "$TAPS/tap-stubborn" "$BATS_TEST_TMPDIR/bin/tap-stub"
	S=$FAKE_DIR/tap-stub
	mkdir -p "$S"
	write_pipeline stub tap-stub
	use_tap tap-talk
	T=$FAKE_DIR/tap-talk
	write_pipeline talk tap-talk
	# (a small grace, so that a test waits a second, not five)
	export DATASPOC_PIPE_KILL_GRACE=1
}

teardown() {
	unmount_all
	pipe_teardown
}

# The session of process $1.
session_of() {
	local stat
	read -r stat <"/proc/$1/stat" || return 1
	stat=${stat##*) }
	set -- $stat
	echo "$4"
}

# The processes of session $1 still running (zombies aside), as pid:comm.
in_session() {
	local p stat
	for p in /proc/[0-9]*; do
		read -r stat 2>/dev/null <"$p/stat" || continue
		stat=${stat##*) }
		set -- "$1" $stat
		[ "$5" = "$1" ] && [ "$2" != Z ] && echo "${p#/proc/}:$(cat "$p/comm" 2>/dev/null)"
		set -- "$1"
	done
	return 0
}

lock_gone() {
	! bucket_exists ".dataspoc/state/$1/lock"
}

# fill_tmpdir: no room left in TMPDIR (a small tmpfs), until tmpdir_emptied.
fill_tmpdir() {
	dd if=/dev/zero of="$TMPDIR/filler" bs=4096 2>/dev/null || true
}

# tmpdir_emptied: the filler gone, TMPDIR holds nothing the run left.
tmpdir_emptied() {
	rm -f "$TMPDIR/filler"
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

# lock_goes_last PIPELINE SID: once the run lock of PIPELINE is gone, no
# process of session SID (the stages) is left.
lock_goes_last() {
	local left
	wait_until lock_gone "$1"
	left=$(in_session "$2")
	[ -z "$left" ] || { echo "still running when the lock went: $left" >&2; return 1; }
}

# The error of the run log of run $2 of pipeline $1.
log_error() {
	bucket_cat ".dataspoc/logs/$1/$2.json" | jq -r '.status + ": " + .error'
}

# Lines "tap-talk: line N of what it said" for N from 1 to $1 (60 bytes each).
talk() {
	seq -f 'tap-talk: line %06g of what it said, and more of it........' 1 "$1"
}

# TMPDIR becomes a 1 MiB tmpfs (or the test is skipped).
small_tmpdir() {
	small_tmpfs "$TMPDIR" || skip "cannot mount a tmpfs here (needs root): no full-TMPDIR test"
}

# --- a tap that will not stop ----------------------------------------------------------

@test "a tap that ignores SIGTERM and prints an invalid line: the run fails in bounded time, naming the line; nothing left" {
	local rid
	echo 'this is not JSON' >"$S/out"
	: >"$S/flood"
	# (the old pipe-tap waited for it for good, with the lock held: a hang,
	# ended by timeout as status 124)
	run -1 --separate-stderr timeout 60 dataspoc-pipe run stub
	printf '%s\n' "$stderr" >err
	tail -n 1 err >last
	echo "dataspoc-pipe: run 'stub' failed: the tap's output, line 1, column 1: invalid JSON: unexpected character: 'this is not JSON'" |
		expect_file last
	# the tap was killed: nothing of the run is left, the lock is free
	run -0 pids_of_test
	assert_output ""
	lock_gone stub
	rid=$(run_ids stub)
	log_error stub "$rid" >log.got
	echo "failure: <stdin>:1:1: invalid JSON: unexpected character: 'this is not JSON'" | expect_file log.got
	run -0 bucket_files
	assert_output ""
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

# The private folder's lock and the stages' (on the plan) are taken by the
# programs the driver starts (DATASPOC_PIPE_RUN_DIR_FD,
# DATASPOC_PIPE_STAGES_FD): while the tap runs, another process can take
# neither.
@test "while the tap runs, the driver's private folder and the stages' file (the plan) are locked" {
	cat >"$BATS_TEST_TMPDIR/bin/tap-looks" <<SH
#!/bin/sh
d=\$DATASPOC_PIPE_RUN_DIR
{ flock -n "\$d" true && echo "folder free" || echo "folder held"
  flock -n "\$d/plan" true && echo "stages free" || echo "stages held"; } >"$BATS_TEST_TMPDIR/seen" 2>&1
echo '{"type":"RECORD","stream":"s","record":{"id":1}}'
SH
	chmod +x "$BATS_TEST_TMPDIR/bin/tap-looks"
	write_pipeline looks tap-looks false
	run -0 dataspoc-pipe run looks
	printf '%s\n' "folder held" "stages held" | expect_file "$BATS_TEST_TMPDIR/seen"
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

# A process the tap leaves behind holds the stages' lock (the first stage to
# start takes it, DATASPOC_PIPE_STAGES_FD): the run is committed only once
# it is gone, although the tap, pipe-tap and pipe-sink ended long before.
@test "a tap that leaves a child behind: the commit waits until the child is gone" {
	cat >"$BATS_TEST_TMPDIR/bin/tap-leaves" <<SH
#!/bin/sh
echo '{"type":"RECORD","stream":"s","record":{"id":1}}'
( sleep 1; : >"$BATS_TEST_TMPDIR/child-done" ) </dev/null >/dev/null 2>&1 &
SH
	chmod +x "$BATS_TEST_TMPDIR/bin/tap-leaves"
	write_pipeline leaves tap-leaves false
	run -0 dataspoc-pipe run leaves
	assert_line "Done! 1 record in 1 stream(s)"
	[ -e "$BATS_TEST_TMPDIR/child-done" ]
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

@test "SIGTERM to the driver, the tap ignoring it: 143; the lock goes only once the stages are gone" {
	local driver tap sid st=0 rid
	echo '{"type":"RECORD","stream":"s","record":{"n":1}}' >"$S/out"
	dataspoc-pipe run stub >run.out 2>run.err &
	driver=$!
	BG_PIDS="$BG_PIDS $driver"
	wait_for "$S/ready"
	read -r tap <"$S/pid"
	sid=$(session_of "$tap")
	pid_of pipe-tap >/dev/null
	wait_until pid_of pipe-sink >/dev/null
	rid=$(bucket_cat .dataspoc/state/stub/lock | jq -r .run_id)
	kill -TERM "$driver"
	# at the moment the lock goes, no process of the stages lives (the old
	# driver let go of it at once: pipe-tap and the tap lived on)
	lock_goes_last stub "$sid"
	wait "$driver" || st=$?
	assert_equal "$st" 143
	run -0 pids_of_test
	assert_output ""
	tail -n 1 run.err >last
	echo "dataspoc-pipe: run 'stub' failed: interrupted by SIGTERM" | expect_file last
	log_error stub "$rid" >log.got
	echo "failure: interrupted by SIGTERM" | expect_file log.got
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

# pipe-tap itself wedged (stopped): the driver waits the grace period and
# a little more, then kills the stages' group and session, the tap's group
# in it.
@test "SIGTERM to the driver, pipe-tap wedged: its stages and the tap are killed, then the lock goes" {
	local driver tap pt sid st=0
	echo '{"type":"RECORD","stream":"s","record":{"n":1}}' >"$S/out"
	dataspoc-pipe run stub >run.out 2>run.err &
	driver=$!
	BG_PIDS="$BG_PIDS $driver"
	wait_for "$S/ready"
	read -r tap <"$S/pid"
	sid=$(session_of "$tap")
	pt=$(pid_of pipe-tap)
	kill -STOP "$pt"
	kill -TERM "$driver"
	lock_goes_last stub "$sid"
	wait "$driver" || st=$?
	assert_equal "$st" 143
	tail -n 1 run.err >last
	echo "dataspoc-pipe: run 'stub' failed: interrupted by SIGTERM" | expect_file last
	run -0 pids_of_test
	assert_output ""
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

# --- the tap's stderr, and a full TMPDIR ---------------------------------------------------

@test "a tap that writes 5 MB on stderr: TMPDIR holds a bounded end of it; a failure shows and logs its last 20 lines" {
	local rid
	# the tap reports what TMPDIR holds once it has said everything (in
	# place of the link to tap-fake)
	rm -f "$BATS_TEST_TMPDIR/bin/tap-talk"
	cat >"$BATS_TEST_TMPDIR/bin/tap-talk" <<-'EOF'
	#!/bin/sh
	d=$FAKE_DIR/tap-talk
	cat -- "$d/stderr" >&2
	du -sk "$TMPDIR" | cut -f1 >"$d/tmpdir-kb"
	cat -- "$d/out"
	exit "$(cat -- "$d/exit" 2>/dev/null || echo 0)"
	EOF
	chmod +x "$BATS_TEST_TMPDIR/bin/tap-talk"
	talk 90000 >"$T/stderr"
	[ "$(wc -c <"$T/stderr")" -gt 5000000 ]
	printf '%s\n' '{"type":"RECORD","stream":"s","record":{"n":1}}' '{"type":"STATE","value":{"n":1}}' >"$T/out"
	run -0 --separate-stderr dataspoc-pipe run talk
	assert_stderr "  s: 1 record..."
	# (the old driver kept all of it: over 5,000 KiB)
	[ "$(cat "$T/tmpdir-kb")" -le 512 ] || { echo "TMPDIR held $(cat "$T/tmpdir-kb") KiB" >&2; return 1; }
	run -0 ls -A "$TMPDIR"
	assert_output ""

	echo 1 >"$T/exit"
	run -1 --separate-stderr dataspoc-pipe run talk
	[ "$(cat "$T/tmpdir-kb")" -le 512 ]
	printf '%s\n' "$stderr" >err
	{
		echo "dataspoc-pipe: the tap's last words:"
		talk 90000 | tail -n 20 | sed 's/^/  | /'
		echo "dataspoc-pipe: run 'talk' failed: tap-talk exited with status 1"
	} | expect_file err
	rid=$(run_ids talk | tail -n 1)
	bucket_cat ".dataspoc/logs/talk/$rid.json" | jq -r ".tap_stderr[]" >logged
	talk 90000 | tail -n 20 | expect_file logged

	# run -v: all of it shown as it comes, its end only kept
	talk 20000 >"$T/stderr"
	rm -f "$T/exit"
	dataspoc-pipe run -v talk >out 2>err
	[ "$(cat "$T/tmpdir-kb")" -le 512 ] || { echo "TMPDIR held $(cat "$T/tmpdir-kb") KiB" >&2; return 1; }
	grep '^tap-talk: ' err >shown
	talk 20000 | expect_file shown
}

@test "TMPDIR a 1 MiB tmpfs, a tap writing 5 MB on stderr: the run succeeds" {
	small_tmpdir
	talk 90000 >"$T/stderr"
	printf '%s\n' '{"type":"RECORD","stream":"s","record":{"n":1}}' '{"type":"STATE","value":{"n":1}}' >"$T/out"
	# (the old driver filled TMPDIR with it, then ran pipe-commit on a plan
	# cut short: "pipe-commit exited with status 1")
	run -0 --separate-stderr dataspoc-pipe run talk
	assert_stderr "  s: 1 record..."
	bucket_cat .dataspoc/state/talk/state.json | jq -c . >state.got
	echo '{"n":1}' | expect_file state.got
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

@test "TMPDIR full while the tap runs: the run fails with 'no space left in TMPDIR', publishes nothing" {
	local rid
	small_tmpdir
	printf '%s\n' '{"type":"RECORD","stream":"s","record":{"n":1}}' '{"type":"STATE","value":{"n":1}}' >"$T/out"
	: >"$T/block"
	dataspoc-pipe run talk >run.out 2>run.err &
	local driver=$! st=0
	BG_PIDS="$BG_PIDS $driver"
	wait_for "$T/ready"
	rid=$(bucket_cat .dataspoc/state/talk/lock | jq -r .run_id)
	fill_tmpdir
	: >"$T/release"
	wait "$driver" || st=$?
	assert_equal "$st" 1
	# the last line says why; no "Illegal number", no "I/O error" from the
	# driver, no pipe-commit run on a plan cut short
	tail -n 1 run.err >last
	echo "dataspoc-pipe: run 'talk' failed: no space left in TMPDIR ($TMPDIR)" | expect_file last
	run -1 grep -e 'Illegal number' -e 'I/O error' -e 'pipe-commit' run.err
	log_error talk "$rid" >log.got
	echo "failure: no space left in TMPDIR ($TMPDIR)" | expect_file log.got
	run -1 bucket_exists .dataspoc/state/talk/state.json
	run -0 bucket_files
	assert_output ""
	lock_gone talk
	tmpdir_emptied
}

@test "pipe-tap, TMPDIR full, an inline tap config: 'no space left in TMPDIR (...) for the tap's config'" {
	small_tmpdir
	PIPELINE_CONFIG='{password: secret}' write_pipeline talk tap-talk
	fill_tmpdir
	run -1 --separate-stderr pipe-tap -n talk
	assert_output ""
	assert_stderr "pipe-tap: no space left in TMPDIR ($TMPDIR) for the tap's config"
	run -1 --separate-stderr pipe-tap talk </dev/null
	assert_output '{"type":"DATASPOC_TAP_END","status":"failure","exit_status":1,"error":"no space left in TMPDIR ('"$TMPDIR"') for the tap'"'"'s config"}'
	assert_stderr "pipe-tap: no space left in TMPDIR ($TMPDIR) for the tap's config"
	[ ! -e "$T/runs" ]
	tmpdir_emptied
}

@test "TMPDIR full before the run: the saved state cannot be kept, 'no space left in TMPDIR'" {
	small_tmpdir
	fill_tmpdir
	run -1 --separate-stderr dataspoc-pipe run talk
	assert_output "Running: talk"
	assert_stderr "dataspoc-pipe: run 'talk' failed: no space left in TMPDIR ($TMPDIR)"
	[ ! -e "$T/runs" ]
	lock_gone talk
	tmpdir_emptied
}

@test "TMPDIR full before the checks, an inline tap config: the run says 'no space left in TMPDIR'" {
	small_tmpdir
	PIPELINE_CONFIG='{password: secret}' write_pipeline talk tap-talk
	fill_tmpdir
	run -1 --separate-stderr dataspoc-pipe run talk
	assert_stderr "dataspoc-pipe: run 'talk' failed: no space left in TMPDIR ($TMPDIR)"
	[ ! -e "$T/runs" ]
	lock_gone talk
	tmpdir_emptied
}
