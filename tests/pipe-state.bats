#!/usr/bin/env bats
# pipe-state: the saved Singer state in the bucket, the run lock, and the
# recovery of what a dead run left.

load helpers/common

RID=20260102T030405Z-abc123
STATE_KEY=.dataspoc/state/shop/state.json
LOCK_KEY=.dataspoc/state/shop/lock

setup() {
	pipe_setup
	use_tap tap-shop
	write_pipeline shop tap-shop
}

teardown() {
	pipe_teardown
}

save_state() {	# JSON text
	printf '%s\n' "$1" | jq . | bucket_put "$STATE_KEY"
}

@test "-h prints the help on stdout" {
	run -0 --separate-stderr pipe-state -h
	assert_line --index 0 "usage: pipe-state COMMAND [options] NAME"
	assert_stderr ""
	local help=$output
	run -0 pipe-state --help
	assert_equal "$output" "$help"
	run -0 pipe-state get -h
	assert_equal "$output" "$help"
}

@test "bad usage prints the usage on stderr and exits 2" {
	run -2 --separate-stderr pipe-state
	assert_equal "$output" ""
	assert_equal "${stderr_lines[0]}" "usage: pipe-state get [-f] [-r RUN_ID | -i FILE] NAME | show NAME | set NAME < STATE | clear --force NAME |"
	local usage=$stderr
	run -2 --separate-stderr pipe-state frob shop
	assert_stderr "pipe-state: unknown command 'frob'
$usage"
	run -2 --separate-stderr pipe-state get -x shop
	assert_stderr "pipe-state: invalid option -- 'x'
$usage"
	run -2 --separate-stderr pipe-state get shop extra
	assert_stderr "$usage"
	run -2 --separate-stderr pipe-state get -r bad shop
	assert_stderr "pipe-state: invalid run id 'bad' (expected the shape 20261130T004809Z-3fa9c1)"
	run -2 --separate-stderr pipe-state get
	assert_stderr "pipe-state: no pipeline: give a NAME or -c FILE"
	bucket_untouched
}

@test "get: {} when nothing is saved" {
	run -0 --separate-stderr pipe-state get shop
	assert_output "{}"
	assert_stderr ""
	run -0 bucket_keys
	assert_output ""
}

@test "get: the saved state as one line, byte for byte" {
	printf '{\n  "bookmarks": {"s": {"id": 12345678901234567891, "u": "\\u00e9 日本"}},\n  "x": [1, 2.50]\n}\n' |
		bucket_put "$STATE_KEY"
	pipe-state get shop >got
	echo '{"bookmarks":{"s":{"id":12345678901234567891,"u":"\u00e9 日本"}},"x":[1,2.50]}' | expect_file got
	pipe-state get -c "$DATASPOC_PIPE_HOME/pipelines/shop.yaml" >got
	echo '{"bookmarks":{"s":{"id":12345678901234567891,"u":"\u00e9 日本"}},"x":[1,2.50]}' | expect_file got
}

@test "get: {} with -f, and for a pipeline that is not incremental" {
	save_state '{"bookmarks":{"s":1}}'
	run -0 pipe-state get -f shop
	assert_output "{}"
	run -0 pipe-state get --full shop
	assert_output "{}"
	write_pipeline shop tap-shop false
	run -0 pipe-state get shop
	assert_output "{}"
	# -f ignores the state; it does not delete it
	bucket_exists "$STATE_KEY"
}

@test "get: a saved state that is not a JSON object is an error" {
	echo '{"bookmarks":' | bucket_put "$STATE_KEY"
	run -1 --separate-stderr pipe-state get shop
	assert_equal "$output" ""
	assert_stderr "pipe-state: $BUCKET_URL/$STATE_KEY:2:1: not valid JSON: unexpected end of input"
	echo '[1]' | bucket_put "$STATE_KEY"
	run -1 --separate-stderr pipe-state get shop
	assert_stderr "pipe-state: $BUCKET_URL/$STATE_KEY: a Singer state must be a JSON object"
}

@test "get -r: takes the run lock, naming run, host, pid and times" {
	save_state '{"a":1}'
	run -0 --separate-stderr env DATASPOC_PIPE_PID=4242 DATASPOC_PIPE_LOCK_TTL=60 pipe-state get -r "$RID" shop
	assert_output '{"a":1}'
	bucket_cat "$LOCK_KEY" >lock.json
	run -0 jq -r '"\(.run_id) \(.host) \(.pid)"' lock.json
	assert_output "$RID $(hostname) 4242"
	run -0 jq -r '[.started_at, .expires_at] | map(fromdateiso8601) | .[1] - .[0]' lock.json
	assert_output 60
	# the same run may ask again
	run -0 pipe-state get -r "$RID" shop
	assert_output '{"a":1}'
	# DATASPOC_RUN_ID is the default run id
	bucket_rm "$LOCK_KEY"
	DATASPOC_RUN_ID=$RID pipe-state get shop >/dev/null
	run -0 jq -r .run_id <(bucket_cat "$LOCK_KEY")
	assert_output "$RID"
}

@test "get -i FILE: a new run id, written to FILE first, and the lock taken for it" {
	save_state '{"a":1}'
	sleep 1000 &
	local holder=$!
	BG_PIDS="$BG_PIDS $holder"
	# (the id is new: DATASPOC_RUN_ID does not count)
	run -0 --separate-stderr env DATASPOC_RUN_ID=bad DATASPOC_PIPE_PID=$holder pipe-state get -i run-id shop
	assert_output '{"a":1}'
	run -0 cat run-id
	assert_output --regexp '^[0-9]{8}T[0-9]{6}Z-[0-9]{3}[0-9a-f]{6}$'
	local id=$output
	run -0 jq -r .run_id <(bucket_cat "$LOCK_KEY")
	assert_output "$id"
	# refused by the lock: the id is still said, nothing else changes
	bucket_snapshot >before.snap
	run -75 --separate-stderr pipe-state get -i again shop
	assert_equal "$output" ""
	[[ $stderr == "pipe-state: pipeline 'shop' is locked by run $id "* ]]
	run -0 cat again
	assert_output --regexp '^[0-9]{8}T[0-9]{6}Z-[0-9]{3}[0-9a-f]{6}$'
	bucket_snapshot >after.snap
	diff -u before.snap after.snap
	# with -r, or for another command, it is bad usage; a file that cannot be written fails
	run -2 --separate-stderr pipe-state get -r "$RID" -i x shop
	run -2 --separate-stderr pipe-state show -i x shop
	[ ! -e x ]
	bucket_rm "$LOCK_KEY"
	run -1 --separate-stderr pipe-state get -i no/such/dir/id shop
	assert_stderr "pipe-state: cannot write the run id to 'no/such/dir/id': No such file or directory"
	run -1 bucket_exists "$LOCK_KEY"
}

@test "get -r: refused while another live run holds the lock" {
	sleep 1000 &
	local holder=$!
	BG_PIDS="$BG_PIDS $holder"
	printf '{"run_id": "20260101T000000Z-0000aa", "host": "%s", "pid": %d, "started_at": "2026-01-01T00:00:00Z", "expires_at": "'"$LIVE_UNTIL"'"}\n' \
		"$(hostname)" "$holder" | bucket_put "$LOCK_KEY"
	bucket_snapshot >before.snap
	run -75 --separate-stderr pipe-state get -r "$RID" shop
	assert_equal "$output" ""
	assert_stderr "pipe-state: pipeline 'shop' is locked by run 20260101T000000Z-0000aa (pid $holder on $(hostname), since 2026-01-01T00:00:00Z, until ${LIVE_UNTIL}); if that run is gone, use 'pipe-state unlock shop'"
	bucket_snapshot >after.snap
	diff -u before.snap after.snap
	# an unreadable lock is not taken over either
	echo 'garbage' | bucket_put "$LOCK_KEY"
	run -1 --separate-stderr pipe-state get -r "$RID" shop
	assert_stderr "pipe-state: pipeline 'shop': the lock '$LOCK_KEY' in $BUCKET_URL is unreadable; if no run is going on, remove it with 'pipe-state unlock shop'"
}

@test "get -r: cleans the staging of runs that died, keeps its own" {
	local dead=20260101T000000Z-dead00
	echo x | bucket_put ".dataspoc/staging/shop/$dead/raw/shop/s/a.jsonl.zst"
	echo x | bucket_put ".dataspoc/staging/shop/$RID/raw/shop/s/b.jsonl.zst"
	echo x | bucket_put ".dataspoc/staging/other/$dead/raw/shop/s/c.jsonl.zst"
	run -0 --separate-stderr pipe-state get -r "$RID" shop
	assert_stderr ""
	run -0 bucket_keys .dataspoc/staging/
	assert_output ".dataspoc/staging/other/$dead/raw/shop/s/c.jsonl.zst
.dataspoc/staging/shop/$RID/raw/shop/s/b.jsonl.zst"
	# without a run id, get only reads
	echo x | bucket_put ".dataspoc/staging/shop/$dead/raw/shop/s/a.jsonl.zst"
	bucket_rm "$LOCK_KEY"
	bucket_snapshot >before.snap
	pipe-state get shop >/dev/null
	bucket_snapshot >after.snap
	diff -u before.snap after.snap
}

@test "get -r: sweeps the temporary files dead writers left beside the state, the logs and the manifest" {
	save_state '{"a":1}'
	local dead live=$$ d=$BUCKET_DIR/.dataspoc
	sleep 60 & dead=$!
	kill "$dead"
	wait "$dead" 2>/dev/null || true
	mkdir -p "$d/logs/shop" "$d/logs/other"
	echo x >"$d/state/shop/.state.json.tmp-$dead-0123456789abcdef"
	echo x >"$d/logs/shop/.$RID.json.tmp-$dead-0123456789abcdef"
	echo x >"$d/.manifest.json.tmp-$dead-0123456789abcdef"
	touch -d '-1 minute' "$d/state/shop/.state.json.tmp-$dead-0123456789abcdef" \
		"$d/logs/shop/.$RID.json.tmp-$dead-0123456789abcdef" "$d/.manifest.json.tmp-$dead-0123456789abcdef"
	# kept: a writer that runs; one that died a moment ago (maybe another
	# host's); another pipeline's folder
	echo x >"$d/state/shop/.lock.tmp-$live-0123456789abcdef"
	touch -d '-1 minute' "$d/state/shop/.lock.tmp-$live-0123456789abcdef"
	echo x >"$d/logs/shop/.new.json.tmp-$dead-0123456789abcdef"
	echo x >"$d/logs/other/.$RID.json.tmp-$dead-0123456789abcdef"
	touch -d '-1 minute' "$d/logs/other/.$RID.json.tmp-$dead-0123456789abcdef"
	# removed whoever wrote it: older than an hour
	echo x >"$d/logs/shop/.old.json.tmp-$live-0123456789abcdef"
	touch -d '-2 hours' "$d/logs/shop/.old.json.tmp-$live-0123456789abcdef"
	run -0 --separate-stderr pipe-state get -r "$RID" shop
	assert_output '{"a":1}'
	run -0 sh -c "cd '$d' && find . -name '.*.tmp-*' | LC_ALL=C sort"
	assert_output "./logs/other/.$RID.json.tmp-$dead-0123456789abcdef
./logs/shop/.new.json.tmp-$dead-0123456789abcdef
./state/shop/.lock.tmp-$live-0123456789abcdef"
}

@test "get -r: a pending.json that is not a successful plan stops the run" {
	local dead=20260101T000000Z-dead00
	run -1 --separate-stderr pipe-sink -q -r "$dead" shop <<<'{"type":"RECORD","stream":"s","record":{}}'
	printf '%s\n' "$output" | bucket_put .dataspoc/state/shop/pending.json
	run -1 --separate-stderr pipe-state get -r "$RID" shop
	assert_equal "$output" ""
	assert_stderr "pipe-state: .dataspoc/state/shop/pending.json: pending commit is not a successful plan of pipeline 'shop'; inspect and remove it by hand"
	run -1 bucket_exists "$LOCK_KEY"
	echo '{"type":"run","pipeline":"shop"}' | bucket_put .dataspoc/state/shop/pending.json
	run -1 --separate-stderr pipe-state get -r "$RID" shop
	assert_stderr "pipe-state: $BUCKET_URL/.dataspoc/state/shop/pending.json:1: run line lacks pipeline, run_id, started_at or source"
	run -1 bucket_exists "$LOCK_KEY"
}

@test "get on a full device: exit 1, write error, no lock kept" {
	save_state '{"a":1}'
	run -1 --separate-stderr sh -c 'pipe-state get shop >/dev/full'
	assert_stderr "pipe-state: write error: No space left on device"
	run -1 --separate-stderr sh -c 'pipe-state get -r "$1" shop >/dev/full' sh "$RID"
	assert_stderr "pipe-state: write error: No space left on device"
	run -1 bucket_exists "$LOCK_KEY"
}

@test "show: the state as saved, and who holds the lock" {
	run -0 --separate-stderr pipe-state show shop
	assert_output "no saved state for pipeline 'shop' ($BUCKET_URL/$STATE_KEY)"
	save_state '{"bookmarks":{"s":{"id":7}}}'
	run -0 --separate-stderr pipe-state show shop
	assert_output '{
  "bookmarks": {
    "s": {
      "id": 7
    }
  }
}'
	assert_stderr ""
	pipe-state get -r "$RID" shop >/dev/null
	run -0 --separate-stderr pipe-state show shop
	assert_stderr "locked: $(bucket_cat "$LOCK_KEY")"
}

@test "set: a state or a STATE message from stdin, pretty-printed, numbers kept" {
	run -0 --separate-stderr pipe-state set shop <<<'{"bookmarks":{"s":{"id":12345678901234567891}}}'
	assert_output ""
	assert_stderr ""
	bucket_cat "$STATE_KEY" >got
	expect_file got <<-'EOF'
	{
	  "bookmarks": {
	    "s": {
	      "id": 12345678901234567891
	    }
	  }
	}
	EOF
	pipe-state set shop <<<'{"type":"STATE","value":{"b":[1,{"c":null}]}}'
	bucket_cat "$STATE_KEY" >got
	jq . <<<'{"b":[1,{"c":null}]}' | expect_file got
	run -0 pipe-state get shop
	assert_output '{"b":[1,{"c":null}]}'
	run -1 bucket_exists "$LOCK_KEY"
}

@test "set: what is not a state is refused, the saved one kept" {
	save_state '{"keep":1}'
	bucket_snapshot >before.snap
	run -2 --separate-stderr pipe-state set shop <<<'{"a":'
	assert_stderr "pipe-state: <stdin>:2:1: not valid JSON: unexpected end of input"
	run -2 --separate-stderr pipe-state set shop <<<'[1]'
	assert_stderr "pipe-state: <stdin>: a Singer state must be a JSON object"
	run -2 --separate-stderr pipe-state set shop <<<'{"type":"RECORD","stream":"s","record":{}}'
	assert_stderr "pipe-state: <stdin>: a RECORD message is not a state"
	run -2 --separate-stderr pipe-state set shop <<<'{"type":"STATE","value":7}'
	assert_stderr "pipe-state: <stdin>: STATE message without an object \"value\""
	bucket_snapshot >after.snap
	diff -u before.snap after.snap
}

@test "set and clear wait for no run: refused while a live run holds the lock" {
	save_state '{"keep":1}'
	sleep 1000 &
	local holder=$!
	BG_PIDS="$BG_PIDS $holder"
	printf '{"run_id": "20260101T000000Z-0000aa", "host": "%s", "pid": %d, "started_at": "2026-01-01T00:00:00Z", "expires_at": "'"$LIVE_UNTIL"'"}\n' \
		"$(hostname)" "$holder" | bucket_put "$LOCK_KEY"
	bucket_snapshot >before.snap
	run -1 --separate-stderr pipe-state set shop <<<'{"new":1}'
	local msg="pipe-state: pipeline 'shop' is locked by run 20260101T000000Z-0000aa (pid $holder on $(hostname), since 2026-01-01T00:00:00Z, until ${LIVE_UNTIL}); if that run is gone, use 'pipe-state unlock shop'"
	assert_stderr "$msg"
	run -1 --separate-stderr pipe-state clear --force shop
	assert_stderr "$msg"
	bucket_snapshot >after.snap
	diff -u before.snap after.snap
}

@test "clear: needs --force, then deletes the state" {
	save_state '{"a":1}'
	run -2 --separate-stderr pipe-state clear shop
	assert_stderr "pipe-state: clear deletes the saved state: add --force to do it"
	bucket_exists "$STATE_KEY"
	run -0 --separate-stderr pipe-state clear --force shop
	assert_output ""
	run -1 bucket_exists "$STATE_KEY"
	run -0 pipe-state get shop
	assert_output "{}"
}

@test "list: the pipelines with a saved state in the pipeline's bucket" {
	save_state '{"a":1}'
	echo '{}' | bucket_put .dataspoc/state/other/state.json
	echo '{}' | bucket_put .dataspoc/state/nostate/lock
	run -0 --separate-stderr pipe-state list shop
	assert_output "other
shop"
}

@test "unlock: removes the lock, whoever holds it" {
	run -0 --separate-stderr pipe-state unlock shop
	assert_stderr "pipeline 'shop' is not locked"
	pipe-state get -r "$RID" shop >/dev/null
	local lock
	lock=$(bucket_cat "$LOCK_KEY")
	run -0 --separate-stderr pipe-state unlock shop
	# (the run it held, with no log of its own, is logged as failed: d363e3a)
	assert_stderr "removed the lock of pipeline 'shop': $lock
pipe-state: warning: run $RID ended without its log (stopped: its lock was removed by hand (pipe-state unlock)): logged as failed"
	run -1 bucket_exists "$LOCK_KEY"
	bucket_cat ".dataspoc/logs/shop/$RID.json" | jq -r '.status' >st
	echo failure | expect_file st
}
