#!/usr/bin/env bats
# status, logs, manifest, validate and pipe-state probe on an s3:// bucket
# (s3rver on 127.0.0.1, started here): they read the bucket only through
# pipe-state, so they must show what they show on a local one.

load helpers/common
load helpers/s3

# (its own setup and teardown follow)
use_s3_bucket

setup() {
	pipe_setup
	HOMEDIR=$DATASPOC_PIPE_HOME
}

teardown() {
	pipe_teardown
}

out_file() {
	printf '%s\n' "$output" >"$1"
}

@test "s3: status, logs and manifest after two runs" {
	write_pipeline alpha cmdtap-ok
	write_pipeline newbie cmdtap-ok
	run -0 dataspoc-pipe run alpha
	run -0 dataspoc-pipe run alpha
	bucket_cat ".dataspoc/logs/alpha/$(run_ids alpha | tail -n 1).json" >last.json
	bucket_cat .dataspoc/manifest.json >manifest.json

	run -0 --separate-stderr dataspoc-pipe status
	assert_equal "$stderr" ""
	{
		printf '%-8s  %-20s  %-7s  %8s  %7s\n' PIPELINE "LAST RUN" STATUS DURATION RECORDS
		printf '%-8s  %-20s  %-7s  %8s  %7s\n' alpha "$(jq -r .started_at last.json)" success \
			"$(jq -r .duration_seconds last.json)s" 3
		printf '%-8s  %-20s  %-7s  %8s  %7s\n' newbie never - - -
	} >want
	out_file got
	diff -u want got

	run -0 --separate-stderr dataspoc-pipe logs -n 5 --output json alpha
	out_file got.json
	run -0 jq -r '.[].run_id' got.json
	assert_equal "$output" "$(run_ids alpha | tac)"
	run -0 jq -c '.[0]' got.json
	assert_equal "$output" "$(jq -c . last.json)"

	run -0 --separate-stderr dataspoc-pipe manifest "$(bucket_url)"
	assert_equal "$stderr" ""
	out_file got
	{
		printf '%-11s  %4s  %11s  %-20s  %7s\n' TABLE ROWS EXTRACTIONS "LAST EXTRACTION" COLUMNS
		printf '%-11s  %4s  %11s  %-20s  %7s\n' cmdok/items 6 2 \
			"$(jq -r '.tables["cmdok/items"].stats.last_extraction' manifest.json)" 2
	} >want
	diff -u want got
	run -0 dataspoc-pipe manifest --output json "$(bucket_url)"
	out_file got.json
	diff -u manifest.json got.json
}

@test "s3: validate probes the bucket and leaves nothing behind; s3rver does not honour conditional creates" {
	write_pipeline alpha cmdtap-ok
	run -0 --separate-stderr dataspoc-pipe validate alpha
	assert_equal "$stderr" ""
	assert_equal "$output" "alpha: config: ok
alpha: tap: ok
alpha: source: ok
alpha: bucket: ok (conditional create: not honoured)
alpha: secrets: ok
alpha: placeholders: ok"
	run -0 --separate-stderr pipe-state probe -b "$(bucket_url)"
	assert_output "write, read back, list, delete: ok
conditional create: not honoured"
	assert_equal "$stderr" "pipe-state: warning: $(bucket_url) does not itself refuse to create an object that exists: run locks look before they write, which leaves a short window to two runs of one pipeline started at the same moment"
	run -0 bucket_keys
	assert_output ""
}

@test "s3: a bucket that does not exist fails the probe, status and manifest" {
	write_pipeline alpha cmdtap-ok
	sed -i "s|^  bucket: .*|  bucket: s3://no-such-bucket-$BATS_TEST_NUMBER|" "$HOMEDIR/pipelines/alpha.yaml"
	run -1 --separate-stderr dataspoc-pipe validate alpha
	assert_line --index 3 --regexp "^alpha: bucket: FAIL: .*no-such-bucket-$BATS_TEST_NUMBER"
	run -1 --separate-stderr dataspoc-pipe status
	assert_output "PIPELINE  LAST RUN  STATUS  DURATION  RECORDS
alpha     -         error          -        -"
	# the one line on stderr names the pipeline whose bucket could not be read
	assert_regex "$stderr" "^dataspoc-pipe: pipeline 'alpha': .*no-such-bucket-$BATS_TEST_NUMBER"
	[ "${#stderr_lines[@]}" -eq 1 ]
	run -1 --separate-stderr dataspoc-pipe manifest "s3://no-such-bucket-$BATS_TEST_NUMBER"
	assert_output ""
	assert_regex "$stderr" "no-such-bucket-$BATS_TEST_NUMBER"
}

@test "s3: logs skip a log that is not JSON, with a warning" {
	write_pipeline alpha cmdtap-ok
	run -0 dataspoc-pipe run alpha
	printf '{"status": ' | bucket_put .dataspoc/logs/alpha/29990101T000000Z-ffffff.json
	run -0 --separate-stderr pipe-state logs alpha
	assert_equal "$output" "$(bucket_cat ".dataspoc/logs/alpha/$(run_ids alpha | head -n 1).json" | jq -c .)"
	assert_equal "$stderr" "pipe-state: warning: skipping run log $(bucket_url)/.dataspoc/logs/alpha/29990101T000000Z-ffffff.json: unexpected end of input"
}

@test "s3: a failure kept in the home that is not a run log (cut short, no run id) is skipped with a warning, not silently (#29 item 9)" {
	write_pipeline alpha cmdtap-ok
	run -0 dataspoc-pipe run alpha
	mkdir -p "$HOMEDIR/logs"
	printf '{"run_id": "2' >"$HOMEDIR/logs/alpha.failure.json"
	run -0 --separate-stderr dataspoc-pipe status alpha
	assert_line --index 1 --regexp '^alpha +[0-9T:Z-]+ +success '
	assert_equal "$stderr" "dataspoc-pipe: pipeline 'alpha': warning: skipping the failure kept in $HOMEDIR/logs/alpha.failure.json: unterminated string"
	run -0 --separate-stderr dataspoc-pipe logs -o jsonl alpha
	assert_equal "$stderr" "dataspoc-pipe: warning: skipping the failure kept in $HOMEDIR/logs/alpha.failure.json: unterminated string"
	assert_equal "$(jq -r .status <<<"$output")" success
	printf '{"status": "failure", "error": "x"}\n' >"$HOMEDIR/logs/alpha.failure.json"
	run -0 --separate-stderr dataspoc-pipe logs -o jsonl alpha
	assert_equal "$stderr" "dataspoc-pipe: warning: skipping the failure kept in $HOMEDIR/logs/alpha.failure.json: no run_id of a run"
}

@test "s3: a scheduled run without the shell's credentials fails; its failure shows in status and logs, kept in the home (#29 item 9)" {
	write_pipeline alpha cmdtap-ok
	run -0 dataspoc-pipe run alpha
	# as cron runs it: none of the shell's AWS_* keys
	run -1 --separate-stderr env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY dataspoc-pipe run alpha
	local why=${stderr_lines[-1]#"dataspoc-pipe: run 'alpha' failed: "}
	[ "$why" != "${stderr_lines[-1]}" ]
	run -0 jq -r '.status + ": " + .error' "$HOMEDIR/logs/alpha.failure.json"
	assert_output "failure: $why"
	# status, with the credentials the bucket wants: the failure, newer than the bucket's log
	run -0 --separate-stderr dataspoc-pipe status -o json alpha
	run -0 jq -r '.[0] | .status + ": " + .error' <<<"$output"
	assert_output "failure: $why"
	run -0 --separate-stderr dataspoc-pipe status alpha
	assert_line --index 1 --regexp '^alpha +[0-9T:Z-]+ +failure '
	# logs shows it too, newest, before the bucket's: text, json, jsonl
	local failed ok
	failed=$(jq -r .run_id "$HOMEDIR/logs/alpha.failure.json")
	ok=$(run_ids alpha | tail -n 1)
	run -0 --separate-stderr dataspoc-pipe logs alpha
	assert_line --index 0 "Run $failed: failure"
	assert_line "  error     $why"
	assert_line "  logged    on this machine only, in $HOMEDIR/logs/alpha.failure.json (the bucket did not take it)"
	run -0 --separate-stderr dataspoc-pipe logs -o json alpha
	run -0 jq -r '.run_id + " " + .status + " " + .logged + ": " + .error' <<<"$output"
	assert_output "$failed failure locally: $why"
	run -0 --separate-stderr dataspoc-pipe logs -n 5 -o jsonl alpha
	run -0 jq -r '.run_id + " " + .status' <<<"$output"
	assert_output "$failed failure
$ok success"
	# a later run that the bucket logs is the newest again
	run -0 dataspoc-pipe run alpha
	run -0 dataspoc-pipe status -o json alpha
	run -0 jq -r '.[0].status' <<<"$output"
	assert_output success
	# and logs lists the kept failure in its place, between the two runs
	run -0 --separate-stderr dataspoc-pipe logs -n 5 -o jsonl alpha
	run -0 jq -r .status <<<"$output"
	assert_output "success
failure
success"
	run -0 --separate-stderr dataspoc-pipe logs -n 1 -o jsonl alpha
	run -0 jq -r .status <<<"$output"
	assert_output success
}
