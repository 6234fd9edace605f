#!/usr/bin/env bats
# pipe-commit: publishes a run from pipe-sink's plan, or (-a) cleans up
# after a failed one.

load helpers/common

RID=20260102T030405Z-abc123
USAGE='usage: pipe-commit [-ahk] [-d DIR] [-e MESSAGE] [-r RUN_ID] [-t TAPLOG] [-w FILE] NAME | -c FILE.yaml'
END_OK='{"type":"DATASPOC_TAP_END","status":"success","exit_status":0}'

setup() {
	pipe_setup
	use_tap tap-shop
	write_pipeline shop tap-shop
	printf '%s\n' '{"id":1,"big":12345678901234567891}' '{"id":2,"s":"\u00e9"}' >orders.jsonl
	{
		echo '{"type":"SCHEMA","stream":"orders","schema":{"properties":{"id":{"type":"integer"}}},"key_properties":["id"]}'
		singer_records orders <orders.jsonl
		echo '{"type":"RECORD","stream":"users","record":{"id":"u1"}}'
		echo '{"type":"STATE","value":{"bookmarks":{"orders":{"id":2}}}}'
		echo "$END_OK"
	} >dump.jsonl
	OFILE=raw/shop/orders/dt=2026-01-02/orders_${RID}_0000.jsonl.zst
	UFILE=raw/shop/users/dt=2026-01-02/users_${RID}_0000.jsonl.zst
}

teardown() {
	pipe_teardown
}

# The plan of run RID, staged in the bucket.
make_plan() {
	pipe-sink -q -r "$RID" shop <dump.jsonl >plan.jsonl
}

expect_published() {
	bucket_files >keys
	printf '%s\n' "$OFILE" "$UFILE" | expect_file keys
	bucket_data "$OFILE" >got
	diff -u orders.jsonl got
}

@test "-h prints the help on stdout" {
	run -0 --separate-stderr pipe-commit -h
	assert_line --index 0 "usage: pipe-commit [-ahk] [-d DIR] [-e MESSAGE] [-r RUN_ID] [-t TAPLOG] [-w FILE] NAME"
	assert_stderr ""
}

@test "bad usage prints the usage on stderr and exits 2" {
	run -2 --separate-stderr pipe-commit -x shop </dev/null
	assert_equal "$output" ""
	assert_stderr "pipe-commit: invalid option -- 'x'
$USAGE"
	run -2 --separate-stderr pipe-commit shop extra </dev/null
	assert_stderr "$USAGE"
	run -2 --separate-stderr pipe-commit -r nope shop </dev/null
	assert_stderr "pipe-commit: invalid run id 'nope' (expected the shape 20261130T004809Z-3fa9c1)"
	bucket_untouched
}

# -w FILE: the driver's look at its stages' lock; -d DIR: its folder removed
# once the run is published, kept otherwise.
@test "-w: a process holding FILE's lock makes it exit 3 having done nothing; -d removes DIR only after a commit" {
	make_plan
	: >stages
	mkdir -p run-dir/sub
	cp plan.jsonl run-dir/plan
	bucket_snapshot >before.snap
	( exec 8>stages; flock 8; exec sleep 1000 ) &
	local holder=$!
	BG_PIDS="$BG_PIDS $holder"
	wait_until sh -c '! flock -n "$1" true' sh stages
	run -3 --separate-stderr pipe-commit -w stages -d run-dir shop <run-dir/plan
	assert_equal "$output" ""
	assert_stderr ""
	bucket_snapshot >after.snap
	diff -u before.snap after.snap
	[ -e run-dir/plan ]
	kill "$holder"
	wait "$holder" 2>/dev/null || true
	# a plan that fails: the folder stays
	printf '%s\n' '{"type":"end","status":"failure","records":0}' >bad-plan
	run -1 --separate-stderr pipe-commit -w stages -d run-dir shop <bad-plan
	[ -e run-dir/plan ]
	run -0 --separate-stderr pipe-commit -w stages -d run-dir shop <run-dir/plan
	assert_line "Done! 3 records in 2 stream(s)"
	assert_stderr ""
	[ ! -e run-dir ]
	expect_published
}

@test "a plan is published: files, state, manifest, run log; summary on stdout" {
	make_plan
	run -0 --separate-stderr pipe-commit shop <plan.jsonl
	assert_equal "$output" "Done! 3 records in 2 stream(s)
  orders: 2
  users: 1"
	assert_stderr ""
	bucket_keys >keys
	expect_file keys <<-EOF
	.dataspoc/logs/shop/$RID.json
	.dataspoc/manifest.json
	.dataspoc/state/shop/state.json
	$OFILE
	$UFILE
	EOF
	expect_published
	bucket_cat .dataspoc/state/shop/state.json >state.got
	jq . <<<'{"bookmarks":{"orders":{"id":2}}}' | expect_file state.got
	bucket_cat ".dataspoc/logs/shop/$RID.json" >log.json
	jq -c '{pipeline, run_id, started_at, status, streams, total_records, error}' log.json >got
	expect_file got <<-EOF
	{"pipeline":"shop","run_id":"$RID","started_at":"2026-01-02T03:04:05Z","status":"success","streams":{"orders":{"records":2},"users":{"records":1}},"total_records":3,"error":null}
	EOF
	run -0 jq -r '.finished_at, (.duration_seconds | type)' log.json
	assert_line --index 0 --regexp '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$'
	assert_line --index 1 number
	bucket_cat .dataspoc/manifest.json >manifest.json
	run -0 jq -r '.tables | keys[]' manifest.json
	assert_output "shop/orders
shop/users"
}

@test "-c FILE.yaml instead of a name" {
	make_plan
	cp "$DATASPOC_PIPE_HOME/pipelines/shop.yaml" shop.yaml
	run -0 --separate-stderr pipe-commit -c shop.yaml <plan.jsonl
	assert_equal "${lines[0]}" "Done! 3 records in 2 stream(s)"
	expect_published
}

@test "publishing the same plan twice changes nothing more" {
	make_plan
	pipe-commit shop <plan.jsonl >/dev/null
	bucket_snapshot >once.snap
	run -0 --separate-stderr pipe-commit shop <plan.jsonl
	assert_equal "${lines[0]}" "Done! 3 records in 2 stream(s)"
	bucket_snapshot >twice.snap
	diff -u once.snap twice.snap
}

@test "a plan without its end line is refused, nothing published" {
	make_plan
	head -n -1 plan.jsonl >cut.jsonl
	bucket_snapshot >before.snap
	run -1 --separate-stderr pipe-commit shop <cut.jsonl
	assert_equal "$output" ""
	assert_stderr "pipe-commit: the plan ends without its end line: pipe-sink did not finish; nothing published"
	bucket_snapshot >after.snap
	diff -u before.snap after.snap
	run -1 --separate-stderr pipe-commit shop </dev/null
	assert_equal "$output" ""
	assert_stderr "pipe-commit: the plan ends without its end line: pipe-sink did not finish; nothing published"
	diff -u before.snap <(bucket_snapshot)
	# nor is a bucket made for a refused plan
	rm -rf "$BUCKET_DIR"
	run -1 --separate-stderr pipe-commit shop <cut.jsonl
	bucket_untouched
}

@test "a plan that ends in failure is refused, nothing published" {
	head -n -1 dump.jsonl >cut.jsonl
	run -1 --separate-stderr pipe-sink -q -r "$RID" shop <cut.jsonl
	printf '%s\n' "$output" >plan.jsonl
	run -1 --separate-stderr pipe-commit shop <plan.jsonl
	assert_equal "$output" ""
	assert_stderr "pipe-commit: the plan ends in failure (input ended without pipe-tap's end line: the tap or pipe-tap did not finish); nothing published"
	run -0 bucket_files
	assert_output ""
	run -1 bucket_exists .dataspoc/state/shop/state.json
}

@test "a plan of another run, or of another pipeline, is refused" {
	make_plan
	bucket_snapshot >before.snap
	run -1 --separate-stderr pipe-commit -r 20260102T030405Z-ffffff shop <plan.jsonl
	assert_stderr "pipe-commit: the plan is of run $RID, not 20260102T030405Z-ffffff; nothing published"
	write_pipeline other tap-shop
	run -1 --separate-stderr pipe-commit other <plan.jsonl
	assert_stderr "pipe-commit: the plan is for pipeline 'shop', not 'other'"
	bucket_snapshot >after.snap
	diff -u before.snap after.snap
}

@test "a pipeline locked by another live run: refused, nothing published" {
	make_plan
	sleep 1000 &
	local holder=$!
	BG_PIDS="$BG_PIDS $holder"
	printf '{"run_id": "20260101T000000Z-0000aa", "host": "%s", "pid": %d, "started_at": "2026-01-01T00:00:00Z", "expires_at": "'"$LIVE_UNTIL"'"}\n' \
		"$(hostname)" "$holder" | bucket_put .dataspoc/state/shop/lock
	bucket_snapshot >before.snap
	run -1 --separate-stderr pipe-commit shop <plan.jsonl
	assert_equal "$output" ""
	assert_stderr "pipe-commit: pipeline 'shop' is locked by run 20260101T000000Z-0000aa (pid $holder on $(hostname), since 2026-01-01T00:00:00Z, until ${LIVE_UNTIL}); if that run is gone, use 'pipe-state unlock shop'"
	bucket_snapshot >after.snap
	diff -u before.snap after.snap
}

@test "the run's own lock is released after publishing" {
	make_plan
	pipe-state get -r "$RID" shop >/dev/null
	bucket_exists .dataspoc/state/shop/lock
	pipe-commit shop <plan.jsonl >/dev/null
	run -1 bucket_exists .dataspoc/state/shop/lock
	expect_published
}

@test "-a: the run's staging goes, a failure log with the plan's error, the lock is released" {
	make_plan
	pipe-commit shop <plan.jsonl >/dev/null
	bucket_snapshot >before.snap
	local r2=20260102T040000Z-222222
	pipe-state get -r "$r2" shop >/dev/null
	head -n 3 dump.jsonl | pipe-sink -q -r "$r2" shop >plan2.jsonl || true
	run -0 bucket_keys ".dataspoc/staging/shop/$r2/"
	assert_output ""
	# what a pipe-sink killed halfway leaves: staged files and no plan
	printf 'partial' | bucket_put ".dataspoc/staging/shop/$r2/raw/shop/orders/x.jsonl.zst"
	run -0 --separate-stderr pipe-commit -a -r "$r2" -e "pipe-sink exited with status 137" shop </dev/null
	assert_equal "$output" ""
	assert_stderr ""
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	bucket_cat ".dataspoc/logs/shop/$r2.json" >log.json
	jq -c '{pipeline, run_id, status, total_records, error}' log.json >got
	expect_file got <<-EOF
	{"pipeline":"shop","run_id":"$r2","status":"failure","total_records":0,"error":"pipe-sink exited with status 137"}
	EOF
	grep -v " .dataspoc/logs/shop/$r2.json\$" <(bucket_snapshot) >after.snap
	diff -u before.snap after.snap

	# without -e, the plan's own error; with it, the driver's words (what
	# the terminal said, #29 item 5) over the plan's
	local r3=20260102T050000Z-333333 r4=20260102T060000Z-444444
	pipe-state get -r "$r3" shop >/dev/null
	run -1 --separate-stderr pipe-sink -q -r "$r3" shop < <(head -n 3 dump.jsonl)
	printf '%s\n' "$output" >plan3.jsonl
	pipe-commit -a shop <plan3.jsonl
	bucket_cat ".dataspoc/logs/shop/$r3.json" >log3.json
	run -0 jq -r '.status + ": " + .error' log3.json
	assert_output "failure: input ended without pipe-tap's end line: the tap or pipe-tap did not finish"
	pipe-state get -r "$r4" shop >/dev/null
	run -1 --separate-stderr pipe-sink -q -r "$r4" shop < <(head -n 3 dump.jsonl)
	printf '%s\n' "$output" >plan4.jsonl
	pipe-commit -a -e "interrupted by SIGINT" shop <plan4.jsonl
	bucket_cat ".dataspoc/logs/shop/$r4.json" >log4.json
	run -0 jq -r '.status + ": " + .error' log4.json
	assert_output "failure: interrupted by SIGINT"
	run -1 bucket_exists .dataspoc/state/shop/lock
}

@test "-a with no run id at all: usage error" {
	run -2 --separate-stderr pipe-commit -a shop </dev/null
	assert_stderr "pipe-commit: abort: no run id (give -r RUN_ID)"
	bucket_untouched
}

@test "-a leaves a commit that began for the next run to finish" {
	make_plan
	pipe-state get -r "$RID" shop >/dev/null
	bucket_put .dataspoc/state/shop/pending.json <plan.jsonl
	bucket_snapshot >before.snap
	run -0 --separate-stderr pipe-commit -a -r "$RID" -e "pipe-commit exited with status 137" shop <plan.jsonl
	assert_stderr "pipe-commit: the commit of run $RID is pending; the next run of 'shop' finishes it"
	bucket_snapshot | grep -v ' \.dataspoc/state/shop/lock$' >after.snap
	grep -v ' \.dataspoc/state/shop/lock$' before.snap >before.rest
	diff -u before.rest after.snap
	run -1 bucket_exists .dataspoc/state/shop/lock
	# and the next run does
	run -0 --separate-stderr pipe-state get -r 20260102T060000Z-444444 shop
	assert_output '{"bookmarks":{"orders":{"id":2}}}'
	assert_stderr "pipe-state: warning: finishing the commit of run $RID, which was interrupted"
	expect_published
}

@test "stdout on a full device: published, but exit 1 with a write error" {
	make_plan
	run -1 --separate-stderr sh -c 'pipe-commit shop <plan.jsonl >/dev/full'
	assert_stderr "pipe-commit: write error: No space left on device"
	expect_published
}
