#!/usr/bin/env bats
# S3 under faults: tests/servers/s3_fault_proxy.js between the toolkit and s3rver
# answers 500, 503 and SlowDown, resets connections before or after the
# server did the work, stalls answers past the client's timeout and cuts
# answers short, on a seeded schedule.
#
#   - at 10%, several seeds: two incremental runs succeed, and the bucket
#     holds what a fault-free run of the same tap output holds;
#   - at 100%, each kind: exit 1, one line naming the operation, the key and
#     the last HTTP status (or curl's error), the bucket as it was;
#   - a fault from the second UploadPart on: the upload is aborted;
#   - one answer lost after the work was done, at each request that is not
#     idempotent by nature: the run succeeds all the same.
#
# What landed is read from s3rver's folder ($S3_DIR/BUCKET): an object KEY
# is the file KEY._S3rver_object, and an upload in progress is the folder
# ._S3rver_uploads/UPLOAD_ID (holding the key, then one file per part),
# removed when the upload completes.  s3rver has no AbortMultipartUpload
# (405) nor ListMultipartUploads (501): the proxy, given s3dir=, does them
# on that folder, so an abort the toolkit sends removes the upload and one
# it does not send leaves it there.  It also answers 412 to an If-None-Match
# PUT of an existing key, as S3 does and s3rver does not.
#
# Each fault is logged by the proxy ($PROXY_LOG), with the seed; a failing
# test prints the seed and the log.

load helpers/common
load helpers/pipeline_scenarios
load helpers/s3

# (its own setup and teardown follow)
use_s3_bucket

setup() {
	pipe_setup
	# small parts, a short timeout for stalls, quick lock reads
	export DATASPOC_PIPE_S3_PART_SIZE=5MiB DATASPOC_PIPE_S3_TIMEOUT=2 DATASPOC_PIPE_S3_SETTLE_MS=0
	unset DATASPOC_PIPE_S3_RETRIES
	use_tap tap-ev
	write_pipeline ev tap-ev true "compression: none"
}

# Only the proxy runs in the background here (the tap never blocks): it is
# stopped without pipe_teardown's look through /proc, seconds on a busy
# machine.  On a failure, the proxy's log, seed first, says what happened.
teardown() {
	local pid
	if [ -z "${BATS_TEST_COMPLETED:-}" ] && [ -n "${PROXY_LOG:-}" ]; then
		echo "# proxy log ($PROXY_LOG):" >&3
		sed 's/^/#   /' "$PROXY_LOG" >&3
	fi
	for pid in $BG_PIDS; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
}

# The bucket made with curl (signed as s3rver wants), quicker than awscli.
bucket_setup() {
	S3_BUCKET=t$BATS_TEST_NUMBER-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
	BUCKET_URL=s3://$S3_BUCKET
	s3_mb "$S3_BUCKET"
}

s3_mb() {
	curl -sSf -o /dev/null -X PUT --aws-sigv4 aws:amz:us-east-1:s3 -u S3RVER:S3RVER \
		-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$S3_ENDPOINT/$1"
}

# --- the pipeline: a stream of three 5 MiB parts, and a small one ---------------

# The pipeline ev (made by setup): tap-ev, uncompressed, so that the bytes of
# the stream are what goes up.
#
# ev_out 1|2: the tap's output for run 1, 58,000 events of 200 bytes (11.6
# MB: parts of 5, 5 and 1.1 MiB; EV_EVENTS=N: N events), or run 2, with run
# 1's state: 3,000 more events (one PutObject) and 2 users.
ev_out() {
	if [ "$1" = 1 ]; then
		awk -v n="${EV_EVENTS:-58000}" 'BEGIN {
			for (i = 1; i <= n; i++)
				printf "{\"type\":\"RECORD\",\"stream\":\"events\",\"record\":{\"i\":%d,\"pad\":\"%0178d\"}}\n", i, i
			printf "{\"type\":\"STATE\",\"value\":{\"bookmarks\":{\"events\":{\"i\":%d}}}}\n", n }'
	else
		awk 'BEGIN {
			for (i = 58001; i <= 61000; i++)
				printf "{\"type\":\"RECORD\",\"stream\":\"events\",\"record\":{\"i\":%d,\"pad\":\"%0178d\"}}\n", i, i
			print "{\"type\":\"RECORD\",\"stream\":\"users\",\"record\":{\"id\":\"u1\"}}"
			print "{\"type\":\"RECORD\",\"stream\":\"users\",\"record\":{\"id\":\"u2\"}}"
			print "{\"type\":\"STATE\",\"value\":{\"bookmarks\":{\"events\":{\"i\":61000},\"users\":{\"id\":\"u2\"}}}}" }'
	fi >"$FAKE_DIR/tap-ev/out"
}

EV_DONE_1="Running: ev
Done! 58,000 records in 1 stream(s)
  events: 58,000"
EV_DONE_2="Running: ev
  Incremental mode (using previous checkpoint)
Done! 3,002 records in 2 stream(s)
  events: 3,000
  users: 2"

# --- s3rver's folder ----------------------------------------------------------------

# store_keys [BUCKET]: every object's key, sorted bytewise.
store_keys() {
	(cd "$S3_DIR/${1:-$S3_BUCKET}" && find . -name '*._S3rver_object' -printf '%P\n') |
		sed 's/\._S3rver_object$//' | LC_ALL=C sort
}

# store_snapshot [BUCKET]: every file of the bucket's folder and its SHA-256:
# objects, their metadata, uploads in progress.
store_snapshot() {
	(cd "$S3_DIR/${1:-$S3_BUCKET}" && find . -type f -printf '%P\n' | LC_ALL=C sort |
		while IFS= read -r f; do printf '%s %s\n' "$(sha256sum <"$f" | cut -c1-64)" "$f"; done)
}

# store_cat KEY: an object's bytes, from s3rver's folder.
store_cat() {
	cat -- "$S3_DIR/$S3_BUCKET/$1._S3rver_object"
}

# store_uploads [BUCKET]: the multipart uploads in progress, one id a line.
store_uploads() {
	ls -A "$S3_DIR/${1:-$S3_BUCKET}/._S3rver_uploads" 2>/dev/null || true
}

# store_norm [BUCKET]: the bucket as a run of this tap output leaves it,
# whatever the run ids and times: each key, with run ids (RUN1, RUN2 in
# start order), days and times replaced; the SHA-256 of each data file;
# the documents under .dataspoc/ in full, with the same replacements.
store_norm() {
	local b=${1:-$S3_BUCKET} k i=0 id ed
	ed='s/dt=[0-9]\{4\}-[0-9][0-9]-[0-9][0-9]/dt=DAY/g'
	ed="$ed;"'s/"[0-9]\{4\}-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]Z"/"TIME"/g'
	ed="$ed;"'s/"duration_seconds": [0-9]*/"duration_seconds": N/'
	for id in $(store_keys "$b" | sed -n 's|^\.dataspoc/logs/ev/\(.*\)\.json$|\1|p'); do
		i=$((i + 1))
		ed="$ed;s/$id/RUN$i/g"
	done
	store_keys "$b" | while IFS= read -r k; do
		printf '%s' "$k" | sed "$ed"
		case $k in
		.dataspoc/*)
			echo
			sed "$ed; s/^/    /" "$S3_DIR/$b/$k._S3rver_object"
			;;
		*) echo " $(sha256sum <"$S3_DIR/$b/$k._S3rver_object" | cut -c1-64)" ;;
		esac
	done
}

# The fault-free reference, made once for the file (by the first test that
# needs it): runs 1 and 2 straight to s3rver, normalised into
# $BATS_FILE_TMPDIR/ref-1 (after run 1) and ref-2 (after run 2).
reference() {
	[ -s "$BATS_FILE_TMPDIR/ref-2" ] && return 0
	local b=ref-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n') home=$BATS_TEST_TMPDIR/refhome
	s3_mb "$b"
	mkdir -p "$home/pipelines"
	sed "s|s3://$S3_BUCKET\$|s3://$b|" "$DATASPOC_PIPE_HOME/pipelines/ev.yaml" >"$home/pipelines/ev.yaml"
	ev_out 1
	DATASPOC_PIPE_HOME=$home dataspoc-pipe run ev >ref.out 2>ref.err || { cat ref.err; return 1; }
	store_norm "$b" >ref-1
	ev_out 2
	DATASPOC_PIPE_HOME=$home dataspoc-pipe run ev >>ref.out 2>>ref.err || { cat ref.err; return 1; }
	store_norm "$b" >ref-2
	# whole, even if tests run in parallel (bats --jobs)
	mv ref-1 "$BATS_FILE_TMPDIR/ref-1"
	mv ref-2 "$BATS_FILE_TMPDIR/ref-2"
}

# same_as_reference 1|2: the bucket holds what the fault-free run 1 (or 1
# and 2) left, nothing staged, no upload in progress.
same_as_reference() {
	store_norm >"norm-$1"
	diff -u "$BATS_FILE_TMPDIR/ref-$1" "norm-$1"
	run -0 store_uploads
	assert_output ""
	run -0 store_keys
	refute_output --partial .dataspoc/staging/
	refute_output --partial /lock
	refute_output --partial manifest.lock
	refute_output --partial pending
}

# with_faults RULE...: the proxy in front of s3rver, with s3rver's folder.
with_faults() {
	s3_proxy s3dir="$S3_DIR" conditional "$@"
	export AWS_ENDPOINT_URL=$PROXY_ENDPOINT
}

# counts: "requests N, faults N (KIND N ...), retried ok" from the proxy log,
# for the test's output (and RELIABILITY.md).
fault_counts() {
	awk '!/^#/ { n++ } /^fault-/ { f++; k = $1; sub(/^fault-/, "", k); sub(/\/.*/, "", k); c[k]++ }
		END { printf "%d requests, %d faults", n, f; for (k in c) printf " %s=%d", k, c[k]; print "" }' "$PROXY_LOG"
}

# --- 10%: the runs succeed, the bucket as without faults -------------------------

# at_ten_percent SEED: run 1 and run 2 through a 10% schedule seeded SEED.
at_ten_percent() {
	reference
	ev_out 1
	with_faults rate=0.1 seed="$1"
	run -0 --separate-stderr dataspoc-pipe run ev
	assert_equal "$output" "$EV_DONE_1"
	export AWS_ENDPOINT_URL=$S3_ENDPOINT
	same_as_reference 1
	ev_out 2
	export AWS_ENDPOINT_URL=$PROXY_ENDPOINT
	run -0 --separate-stderr dataspoc-pipe run ev
	assert_equal "$output" "$EV_DONE_2"
	# the second run got the first one's state
	expect_file "$FAKE_DIR/tap-ev/state-in" <<-'EOF'
	{"bookmarks":{"events":{"i":58000}}}
	EOF
	export AWS_ENDPOINT_URL=$S3_ENDPOINT
	same_as_reference 2
	# the schedule did fault: at least one request in the two runs
	run -0 grep -c '^fault-' "$PROXY_LOG"
	[ "$output" -ge 1 ]
	echo "# seed $1: $(fault_counts)" >&3
}

@test "s3 faults: 10% of requests faulted (seed 1): two runs succeed, the bucket as without faults" {
	at_ten_percent 1
}

@test "s3 faults: 10% of requests faulted (seed 2): two runs succeed, the bucket as without faults" {
	at_ten_percent 2
}

@test "s3 faults: 10% of requests faulted (seed 3): two runs succeed, the bucket as without faults" {
	at_ten_percent 3
}


# --- 100%: the run fails cleanly -------------------------------------------------

# every_request KIND WHY: after a fault-free run (of 1,000 events: what
# matters is what is in the bucket), a run whose every request meets KIND
# exits 1 with one line whose end is WHY (a regex), and the bucket is as it
# was, file for file.
every_request() {
	EV_EVENTS=1000 ev_out 1
	run -0 --separate-stderr dataspoc-pipe run ev
	store_snapshot >before.snap
	ev_out 2
	with_faults rate=1 kinds="$1"
	export DATASPOC_PIPE_S3_RETRIES=1
	run -1 --separate-stderr dataspoc-pipe run ev
	assert_equal "$output" "Running: ev"
	# the first request: HeadObject of the run lock, tried twice
	assert_regex "${stderr_lines[0]}" "^dataspoc-pipe: run 'ev' failed: cannot create 's3://$S3_BUCKET/\\.dataspoc/state/ev/lock': HeadObject: $2 \\(gave up after 2 attempts\\)\$"
	assert_equal "${#stderr_lines[@]}" 1
	store_snapshot >after.snap
	diff -u before.snap after.snap
	run -0 store_uploads
	assert_output ""
	# every request met the fault, none got through unharmed
	run -0 awk '!/^#/ && !/^fault-/' "$PROXY_LOG"
	assert_output ""
}

@test "s3 faults: 100% 500 InternalError: exit 1, the status named, the bucket as it was" {
	# HEAD has no body: the store's words come from a GET of one byte, faulted too
	every_request 500 "HTTP 500 InternalError: We encountered an internal error\\. Please try again\\."
}

@test "s3 faults: 100% 503 ServiceUnavailable: exit 1, the status named, the bucket as it was" {
	every_request 503 "HTTP 503 ServiceUnavailable: Service is unable to handle request\\."
}

@test "s3 faults: 100% 503 SlowDown: exit 1, the status named, the bucket as it was" {
	every_request slowdown "HTTP 503 SlowDown: Please reduce your request rate\\."
}

@test "s3 faults: 100% connections reset before the request reaches the server: exit 1, curl's error named" {
	every_request reset "(Recv failure: Connection reset by peer|Empty reply from server)"
}

@test "s3 faults: 100% connections reset after the server answered: exit 1, curl's error named" {
	every_request resetafter "(Recv failure: Connection reset by peer|Empty reply from server)"
}

@test "s3 faults: 100% answers stalled past DATASPOC_PIPE_S3_TIMEOUT: exit 1, the timeout named" {
	local t0=$SECONDS
	every_request stall "Operation too slow\\. Less than 1 bytes/sec transferred the last 2 seconds"
	# two attempts of two seconds, and the fault-free run
	[ $((SECONDS - t0)) -lt 60 ]
}

@test "s3 faults: 100% answers cut short: exit 1, the cut named" {
	every_request truncate "the connection closed inside the answer's headers"
}

# --- a failed multipart upload is aborted ----------------------------------------

@test "s3 faults: UploadPart fails from part 2 on: exit 1, the upload aborted, nothing orphaned or staged" {
	EV_EVENTS=1000 ev_out 1
	run -0 --separate-stderr dataspoc-pipe run ev
	store_snapshot | grep -v ' \.dataspoc/logs/' >before.snap
	ev_out 1
	with_faults rate=1 kinds=500 only='^PUT [^ ]*[?&]partNumber=' after=1
	export DATASPOC_PIPE_S3_RETRIES=2
	run -1 --separate-stderr dataspoc-pipe run ev
	# nothing landed; what it read before the failure, apart (#29 item 5)
	assert_regex "$output" $'^Running: ev\n  Incremental mode \\(using previous checkpoint\\)\nRecords: 0 landed, [0-9,]+ read$'
	local rid staged
	rid=$(sed -n 's|^forwarded 200 POST /[^/]*/\.dataspoc/staging/ev/\([^/]*\)/.*?uploads=$|\1|p' "$PROXY_LOG")
	staged=".dataspoc/staging/ev/$rid/events_${rid}_0000.jsonl"
	assert_regex "${stderr_lines[0]}" "^dataspoc-pipe: cannot write 's3://$S3_BUCKET/$staged': UploadPart: HTTP 500 InternalError: We encountered an internal error\\. Please try again\\. \\(gave up after 3 attempts\\)\$"
	# (pipe-tap stopping the tap when pipe-sink is gone is a consequence:
	# the driver does not repeat it)
	assert_equal "${#stderr_lines[@]}" 2
	local cause="UploadPart: HTTP 500 InternalError: We encountered an internal error. Please try again. (gave up after 3 attempts)"
	assert_equal "${stderr_lines[-1]}" "dataspoc-pipe: run 'ev' failed: cannot write '$staged' in s3://$S3_BUCKET: $cause"
	# part 1 went up; part 2 three times, refused; then the upload aborted
	run -0 grep -c '^forwarded 200 PUT .*?partNumber=1&' "$PROXY_LOG"
	assert_output 1
	run -0 grep -c '^fault-500 PUT .*?partNumber=2&' "$PROXY_LOG"
	assert_output 3
	local id
	id=$(sed -n 's|^forwarded 200 PUT .*?partNumber=1&uploadId=||p' "$PROXY_LOG")
	[ -n "$id" ]
	run -0 grep -c "^abort 204 DELETE .*?uploadId=$id\$" "$PROXY_LOG"
	assert_output 1
	run -0 store_uploads
	assert_output ""
	# nothing staged, nothing published, the state as it was; a failure log
	run -0 store_keys
	refute_output --partial .dataspoc/staging/
	store_snapshot | grep -v ' \.dataspoc/logs/' >after.snap
	diff -u before.snap after.snap
	jq -r '.status + " " + .error' "$S3_DIR/$S3_BUCKET/.dataspoc/logs/ev/$rid.json._S3rver_object" >log.got
	expect_file log.got <<<"failure cannot write '$staged' in s3://$S3_BUCKET: $cause"
}

@test "s3 faults: UploadPart fails, then its abort: the run log's cause is the root one, UploadPart's, as the terminal's first line says it, not the abort's after it (#29)" {
	EV_EVENTS=1000 ev_out 1
	run -0 --separate-stderr dataspoc-pipe run ev
	ev_out 1
	with_faults rate=1 kinds=500 only='^(PUT [^ ]*[?&]partNumber=|DELETE [^ ]*[?&]uploadId=)' after=1
	export DATASPOC_PIPE_S3_RETRIES=2
	run -1 --separate-stderr dataspoc-pipe run ev
	local rid staged cause="UploadPart: HTTP 500 InternalError: We encountered an internal error. Please try again. (gave up after 3 attempts)"
	rid=$(sed -n 's|^forwarded 200 POST /[^/]*/\.dataspoc/staging/ev/\([^/]*\)/.*?uploads=$|\1|p' "$PROXY_LOG")
	staged=".dataspoc/staging/ev/$rid/events_${rid}_0000.jsonl"
	assert_equal "${stderr_lines[0]}" "dataspoc-pipe: cannot write 's3://$S3_BUCKET/$staged': $cause"
	# the abort failed too, and said so after it
	assert_regex "${stderr_lines[1]}" "^dataspoc-pipe: cannot abort the upload of 's3://$S3_BUCKET/$staged': AbortMultipartUpload: HTTP 500 "
	assert_equal "${stderr_lines[-1]}" "dataspoc-pipe: run 'ev' failed: cannot write '$staged' in s3://$S3_BUCKET: $cause"
	jq -r '.status + " " + .error' "$S3_DIR/$S3_BUCKET/.dataspoc/logs/ev/$rid.json._S3rver_object" >log.got
	expect_file log.got <<<"failure cannot write '$staged' in s3://$S3_BUCKET: $cause"
}

# --- one answer lost after the work was done --------------------------------------

# lost_answer KIND REGEX: the first request matching REGEX ("METHOD URL")
# meets KIND once; run 1 succeeds and leaves what a fault-free run leaves.
lost_answer() {
	reference
	ev_out 1
	with_faults rate=1 count=1 kinds="$1" only="$2"
	run -0 --separate-stderr dataspoc-pipe run ev
	assert_equal "$output" "$EV_DONE_1"
	run -0 grep -c "^fault-$1" "$PROXY_LOG"
	assert_output 1
	export AWS_ENDPOINT_URL=$S3_ENDPOINT
	same_as_reference 1
}

@test "s3 faults: CreateMultipartUpload done, its answer lost: the stray upload found and aborted" {
	lost_answer resetafter '^POST [^ ]*[?]uploads='
	# two uploads began; the one the answer of which was lost was aborted
	run -0 grep -c '^forwarded 200 POST .*?uploads=$' "$PROXY_LOG"
	assert_output 1
	run -0 grep -c '^uploads 200 GET .*[?&]uploads=' "$PROXY_LOG"
	assert_output 1
	run -0 grep -c '^abort 204 DELETE .*?uploadId=' "$PROXY_LOG"
	assert_output 1
}

@test "s3 faults: CompleteMultipartUpload done, its answer lost: the object is found, the run goes on" {
	lost_answer resetafter '^POST [^ ]*[?]uploadId='
}

@test "s3 faults: UploadPart's answer cut after its status line (no ETag): the part is sent again" {
	lost_answer truncate '^PUT [^ ]*[?]partNumber=2&'
	run -0 grep -c '^forwarded 200 PUT .*?partNumber=2&' "$PROXY_LOG"
	assert_output 1
}

@test "s3 faults: the run lock written, its answer lost: the retry's 412 is read back as our own lock" {
	lost_answer resetafter '^PUT [^ ?]*/\.dataspoc/state/ev/lock$'
	run -0 grep -c '^conditional 412 PUT .*/\.dataspoc/state/ev/lock$' "$PROXY_LOG"
	assert_output 1
}

@test "s3 faults: CopyObject (publish) and DeleteObject done, their answers lost: the run goes on" {
	reference
	ev_out 1
	with_faults rate=1 count=2 kinds=resetafter only='^(PUT [^ ?]*/raw/|DELETE [^ ?]*/\.dataspoc/staging/)'
	run -0 --separate-stderr dataspoc-pipe run ev
	assert_equal "$output" "$EV_DONE_1"
	run -0 grep -c '^fault-resetafter' "$PROXY_LOG"
	assert_output 2
	export AWS_ENDPOINT_URL=$S3_ENDPOINT
	same_as_reference 1
}

# --- a commit that lost its lock, and wakes up late (issue #12) ----------------------

@test "s3 faults: a commit held up after its lock check, its lock taken over meanwhile: its late state write loses (If-Match), the state is the new run's" {
	local ra=20261201T000000Z-0000aa dead
	sh -c 'exit 0' &
	dead=$!
	wait "$dead" || true
	EV_EVENTS=100 ev_out 1
	# run A's write of state.json is held by the proxy until release exists
	with_faults hold='^PUT [^ ?]*/\.dataspoc/state/ev/state\.json$' release="$BATS_TEST_TMPDIR/release"
	# run A by hand, its lock naming a process already gone
	DATASPOC_PIPE_PID=$dead pipe-state get -r "$ra" ev >state.a
	pipe-tap ev <state.a | pipe-sink -q -r "$ra" ev >plan.a
	pipe-commit ev <plan.a >commit.out 2>commit.err &
	local commit=$! st=0
	BG_PIDS="$BG_PIDS $commit"
	held() { grep -q '^held PUT .*/state/ev/state\.json$' "$PROXY_LOG"; }
	wait_until held
	# run B takes the lock over, finishes A's commit, lands its own
	ev_out 2
	run -0 --separate-stderr dataspoc-pipe run ev
	grep -qxF "dataspoc-pipe: warning: pipeline 'ev': taking over the lock of run $ra (pid $dead on $(hostname)), which is no longer running" <<<"$stderr"
	store_cat .dataspoc/state/ev/state.json | jq -c . >state.b
	# A's held write goes on now, and must lose
	: >"$BATS_TEST_TMPDIR/release"
	wait "$commit" || st=$?
	assert_equal "$st" 1
	grep -qxF "pipe-commit: pipeline 'ev': '.dataspoc/state/ev/state.json' changed while run $ra was saving its own: another run has committed; this run's state is not saved" commit.err
	store_cat .dataspoc/state/ev/state.json | jq -c . >state.now
	diff -u state.b state.now
	echo '{"bookmarks":{"events":{"i":61000},"users":{"id":"u2"}}}' | expect_file state.now
	run -0 grep -c '^conditional 412 PUT .*/\.dataspoc/state/ev/state\.json$' "$PROXY_LOG"
	assert_output 1
}
