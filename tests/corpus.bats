#!/usr/bin/env bats
# corpus.bats: the bad-input corpus, tests/corpus/ (see its README.md).
#
#   singer/NAME.jsonl  a tap's output: pipe-sink reads it (pipe-tap's end line
#                      appended unless the case says "end none"), then
#                      pipe-commit publishes the plan or must refuse it
#   yaml/NAME.yaml     a pipeline file: `dataspoc-pipe run NAME`
#   state/NAME.json    a file in the bucket's .dataspoc/state/corpus/ (state.json
#                      unless the case says "key"): `dataspoc-pipe run corpus`
#
# and NAME.expect beside each: the exit status and the exact stderr lines
# ("stderr~" lines are globs), or, for what is accepted, what must land.
# A refused case must leave nothing in the bucket: no staged file, no
# published file, no state, no lock.  Big inputs (a 50 MB record, a 10 MB
# YAML file) are generated here, not kept.

load helpers/common

CORPUS=$BATS_TEST_DIRNAME/corpus
END_LINE='{"type":"DATASPOC_TAP_END","status":"success","exit_status":0}'

setup() {
	pipe_setup
	use_tap tap-corpus
	echo '{"type":"RECORD","stream":"s","record":{"n":1}}' >"$FAKE_DIR/tap-corpus/out"
	echo '{"type":"STATE","value":{"n":1}}' >>"$FAKE_DIR/tap-corpus/out"
}

# Nothing here runs in the background: no process to look for (pipe_teardown
# scans every process of the machine, which costs seconds per test).
teardown() {
	:
}

# --- expectations --------------------------------------------------------------

# Placeholders of .expect files: @BUCKET@ the bucket's directory, @URL@ its
# URL, @FILE@ the pipeline file.
subst() {
	local s=${1//@BUCKET@/$BUCKET_DIR}
	s=${s//@URL@/$BUCKET_URL}
	printf '%s\n' "${s//@FILE@/${PIPELINE_FILE:-}}"
}

# expect_load FILE: EXIT, END (0: no end line), KEY, STATE, TAP_STATE, PLAN
# (a glob for the error the plan ends with; default: the first stderr line); the
# stderr lines into want.err ("=" exact, "~" glob, then the line), landed
# records into want.land ("TABLE<TAB>RECORD"), columns into want.columns.
expect_load() {
	local line
	EXIT= END=1 KEY=state.json STATE=none TAP_STATE= PLAN=
	: >want.err
	: >want.land
	: >want.columns
	while IFS= read -r line; do
		case $line in
		'#'* | '') ;;
		'exit '*) EXIT=${line#exit } ;;
		'stderr '*) printf '=%s\n' "$(subst "${line#stderr }")" >>want.err ;;
		'stderr~ '*) printf '~%s\n' "$(subst "${line#stderr~ }")" >>want.err ;;
		'plan~ '*) PLAN=$(subst "${line#plan~ }") ;;
		'land '*) printf '%s\n' "${line#land }" >>want.land ;;
		'columns '*) printf '%s\n' "${line#columns }" >>want.columns ;;
		'state '*) STATE=${line#state } ;;
		'tap-state '*) TAP_STATE=${line#tap-state } ;;
		'key '*) KEY=${line#key } ;;
		'end none') END=0 ;;
		*) echo "$1: cannot read '$line'" >&2; return 1 ;;
		esac
	done <"$1"
	[ -n "$EXIT" ] || { echo "$1: no exit line" >&2; return 1; }
}

# expect_stderr FILE: FILE holds exactly the lines of want.err.
expect_stderr() {
	local i=0 kind want got n
	n=$(wc -l <want.err)
	if [ "$(wc -l <"$1")" -ne "$n" ]; then
		echo "stderr: $(wc -l <"$1") line(s), want $n:" >&2
		cat "$1" >&2
		return 1
	fi
	while IFS= read -r want; do
		i=$((i + 1))
		got=$(sed -n "${i}p" "$1")
		kind=${want:0:1}
		want=${want:1}
		# shellcheck disable=SC2053
		if { [ "$kind" = = ] && [ "$got" != "$want" ]; } ||
			{ [ "$kind" = '~' ] && [[ $got != $want ]]; }; then
			printf 'stderr line %d:\n  got  %s\n  want %s\n' "$i" "$got" "$want" >&2
			return 1
		fi
	done <want.err
}

# The first expected stderr line without its program name.
first_error() {
	sed -n '1{s/^.//;s/^[a-z-]*: //;p;}' want.err
}

# Every file of the bucket, staging and .dataspoc included.
no_files() {
	run -0 bucket_keys
	assert_output ""
}

# "TABLE<TAB>RECORD" for every record landed under raw/corpus/, tables in
# byte order, records in file order.
landed() {
	local dir=$BUCKET_DIR/raw/corpus t k rec
	[ -d "$dir" ] || return 0
	find "$dir" -mindepth 1 -maxdepth 1 -printf '%f\n' | LC_ALL=C sort | while IFS= read -r t; do
		find "$dir/$t" -type f -printf '%P\n' | LC_ALL=C sort | while IFS= read -r k; do
			zstd -qdc -- "$dir/$t/$k" | while IFS= read -r rec || [ -n "$rec" ]; do
				printf '%s\t%s\n' "$t" "$rec"
			done
		done
	done
}

# What landed, the manifest's columns and the saved state are as expected;
# nothing is left staged, pending or locked.
expect_accepted() {
	local t cols
	landed >got.land
	LC_ALL=C sort -s -t "$(printf '\t')" -k1,1 want.land >want.sorted
	diff -u want.sorted got.land
	while IFS="$(printf '\t')" read -r t cols; do
		jq -c --arg t "corpus/$t" '.tables[$t].columns | map(.name)' "$BUCKET_DIR/.dataspoc/manifest.json" >cols.got
		echo "$cols" | expect_file cols.got
	done <want.columns
	if [ "$STATE" = none ]; then
		run -1 bucket_exists ".dataspoc/state/$1/state.json"
	else
		# (no corpus state holds blanks inside a string: they go too)
		{ bucket_cat ".dataspoc/state/$1/state.json" | tr -d ' \n'; echo; } >state.got
		echo "$STATE" | expect_file state.got
	fi
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	run -1 bucket_exists ".dataspoc/state/$1/lock"
	no_pending "$1"
}

# --- the runners -------------------------------------------------------------------

# corpus_singer NAME: singer/NAME.jsonl through pipe-sink, then pipe-commit.
corpus_singer() {
	local case=$CORPUS/singer/$1 rid status=0
	expect_load "$case.expect"
	write_pipeline corpus tap-corpus
	rid=$(new_run_id)
	cp "$case.jsonl" in.jsonl
	[ "$END" = 0 ] || printf '%s\n' "$END_LINE" >>in.jsonl
	pipe-sink -q -r "$rid" corpus <in.jsonl >plan.jsonl 2>err || status=$?
	assert_equal "$status" "$EXIT"
	expect_stderr err
	if [ "$EXIT" -ne 0 ]; then
		# the plan ends in failure, in the same words; nothing is staged
		[ -n "$PLAN" ] || PLAN=$(first_error | sed 's/[][*?\\]/\\&/g')
		[ -n "$PLAN" ]
		tail -n 1 plan.jsonl | jq -r '"\(.type) \(.status): \(.error)"' >end.got
		# shellcheck disable=SC2053
		[[ $(cat end.got) == "end failure: "$PLAN ]] ||
			{ echo "the plan ends: $(cat end.got)" >&2; return 1; }
		no_files
		run -1 --separate-stderr pipe-commit -r "$rid" corpus <plan.jsonl
		assert_output ""
		# shellcheck disable=SC2053
		[[ $stderr == "pipe-commit: the plan ends in failure ("$PLAN"); nothing published" ]] ||
			{ echo "pipe-commit said: $stderr" >&2; return 1; }
		no_files
		return
	fi
	run -0 --separate-stderr pipe-commit -r "$rid" corpus <plan.jsonl
	expect_accepted corpus
}

# corpus_yaml NAME: yaml/NAME.yaml as pipelines/NAME.yaml, run by the driver.
corpus_yaml() {
	local case=$CORPUS/yaml/$1 status=0
	PIPELINE_FILE=$DATASPOC_PIPE_HOME/pipelines/$1.yaml
	expect_load "$case.expect"
	LC_ALL=C sed "s#@BUCKET@#$BUCKET_DIR#g" "$case.yaml" >"$PIPELINE_FILE"
	dataspoc-pipe run "$1" >out 2>err || status=$?
	assert_equal "$status" "$EXIT"
	expect_stderr err
	if [ "$EXIT" -ne 0 ]; then
		expect_file_empty out
		# nothing ran, nothing was written anywhere
		bucket_untouched
		[ ! -e "$FAKE_DIR/tap-corpus/runs" ]
		run -0 ls -A "$TMPDIR"
		assert_output ""
		return
	fi
	STATE='{"n":1}'
	expect_accepted "$1"
}

# corpus_state NAME: state/NAME.json in the bucket, then a run of an
# incremental pipeline.
corpus_state() {
	local case=$CORPUS/state/$1 status=0
	expect_load "$case.expect"
	write_pipeline corpus tap-corpus
	bucket_put ".dataspoc/state/corpus/$KEY" <"$case.json"
	bucket_snapshot >before.snap
	dataspoc-pipe run corpus >out 2>err || status=$?
	assert_equal "$status" "$EXIT"
	expect_stderr err
	if [ "$EXIT" -ne 0 ]; then
		echo "Running: corpus" | expect_file out
		# the tap never ran; the bucket is exactly as it was but for the
		# failed run's log (status shows a scheduled run's failure), which
		# a run refused by a lock it cannot read does not write
		[ ! -e "$FAKE_DIR/tap-corpus/runs" ]
		bucket_snapshot >after.snap
		grep -v ' \.dataspoc/logs/' after.snap | diff -u before.snap -
		if [ "$KEY" = lock ]; then
			diff -u before.snap after.snap
		else
			run -0 grep -c ' \.dataspoc/logs/corpus/' after.snap
			assert_output 1
			jq -e '.status == "failure" and .total_records == 0' \
				"$BUCKET_DIR/$(grep ' \.dataspoc/logs/corpus/' after.snap | cut -d' ' -f2)"
		fi
		run -0 ls -A "$TMPDIR"
		assert_output ""
		return
	fi
	if [ "$TAP_STATE" = none ]; then
		[ ! -e "$FAKE_DIR/tap-corpus/state-in" ]
	else
		echo "$TAP_STATE" | expect_file "$FAKE_DIR/tap-corpus/state-in"
	fi
	expect_accepted corpus
}

# --- the corpus keeps what the tests below say --------------------------------------

@test "corpus: every case has its test here, and its expectation" {
	local kind f n
	for kind in singer:jsonl yaml:yaml state:json; do
		for f in "$CORPUS/${kind%%:*}"/*."${kind#*:}"; do
			n=${f##*/}
			n=${n%.*}
			[ -f "${f%.*}.expect" ] || { echo "$f has no .expect" >&2; return 1; }
			grep -qx "@test \"${kind%%:*}: $n\" { corpus_${kind%%:*} $n; }" "$BATS_TEST_FILENAME" ||
				{ echo "no test for ${kind%%:*}/$n" >&2; return 1; }
		done
	done
	run -0 sh -c "ls '$CORPUS'/*/*.expect | wc -l"
	[ "$output" -ge 40 ]
}

# --- Singer streams ---------------------------------------------------------------------

@test "singer: activate-version" { corpus_singer activate-version; }
@test "singer: after-end-line" { corpus_singer after-end-line; }
@test "singer: selected-forged" { corpus_singer selected-forged; }
@test "singer: selected-first-unselecting" { corpus_singer selected-first-unselecting; }
@test "singer: bare-string" { corpus_singer bare-string; }
@test "singer: blank-lines" { corpus_singer blank-lines; }
@test "singer: bom" { corpus_singer bom; }
@test "singer: comment-line" { corpus_singer comment-line; }
@test "singer: crlf" { corpus_singer crlf; }
@test "singer: duplicate-keys" { corpus_singer duplicate-keys; }
@test "singer: escaped-type" { corpus_singer escaped-type; }
@test "singer: exact-bytes" { corpus_singer exact-bytes; }
@test "singer: invalid-escape" { corpus_singer invalid-escape; }
@test "singer: invalid-json-unterminated" { corpus_singer invalid-json-unterminated; }
@test "singer: last-state-wins" { corpus_singer last-state-wins; }
@test "singer: leading-zero" { corpus_singer leading-zero; }
@test "singer: lone-surrogate-escape" { corpus_singer lone-surrogate-escape; }
@test "singer: lowercase-types" { corpus_singer lowercase-types; }
@test "singer: nan" { corpus_singer nan; }
@test "singer: nesting-deep-ok" { corpus_singer nesting-deep-ok; }
@test "singer: nesting-too-deep" { corpus_singer nesting-too-deep; }
@test "singer: no-end-line" { corpus_singer no-end-line; }
@test "singer: no-type" { corpus_singer no-type; }
@test "singer: not-an-object" { corpus_singer not-an-object; }
@test "singer: nul-after-value" { corpus_singer nul-after-value; }
@test "singer: nul-in-string" { corpus_singer nul-in-string; }
@test "singer: nul-line" { corpus_singer nul-line; }
@test "singer: null-key-properties" { corpus_singer null-key-properties; }
@test "singer: record-before-schema" { corpus_singer record-before-schema; }
@test "singer: record-not-object" { corpus_singer record-not-object; }
@test "singer: record-stream-not-string" { corpus_singer record-stream-not-string; }
@test "singer: record-without-record" { corpus_singer record-without-record; }
@test "singer: record-without-schema" { corpus_singer record-without-schema; }
@test "singer: record-without-stream" { corpus_singer record-without-stream; }
@test "singer: schema-changes" { corpus_singer schema-changes; }
@test "singer: schema-key-properties-string" { corpus_singer schema-key-properties-string; }
@test "singer: schema-not-object" { corpus_singer schema-not-object; }
@test "singer: schema-stream-empty" { corpus_singer schema-stream-empty; }
@test "singer: schema-without-schema" { corpus_singer schema-without-schema; }
@test "singer: short-unicode-escape" { corpus_singer short-unicode-escape; }
@test "singer: single-quotes" { corpus_singer single-quotes; }
@test "singer: state-only" { corpus_singer state-only; }
@test "singer: state-value-array" { corpus_singer state-value-array; }
@test "singer: state-value-null" { corpus_singer state-value-null; }
@test "singer: state-without-value" { corpus_singer state-without-value; }
@test "singer: stream-case-clash" { corpus_singer stream-case-clash; }
@test "singer: stream-control-char" { corpus_singer stream-control-char; }
@test "singer: stream-dot-clash" { corpus_singer stream-dot-clash; }
@test "singer: stream-empty" { corpus_singer stream-empty; }
@test "singer: stream-name-too-long" { corpus_singer stream-name-too-long; }
@test "singer: stream-names-escape" { corpus_singer stream-names-escape; }
@test "singer: stream-names-odd" { corpus_singer stream-names-odd; }
@test "singer: stream-newline" { corpus_singer stream-newline; }
@test "singer: stream-nul" { corpus_singer stream-nul; }
@test "singer: stream-slash-clash" { corpus_singer stream-slash-clash; }
@test "singer: tap-failed" { corpus_singer tap-failed; }
@test "singer: time-extracted" { corpus_singer time-extracted; }
@test "singer: trailing-comma" { corpus_singer trailing-comma; }
@test "singer: truncated-last-line" { corpus_singer truncated-last-line; }
@test "singer: two-messages-one-line" { corpus_singer two-messages-one-line; }
@test "singer: type-not-string" { corpus_singer type-not-string; }
@test "singer: unknown-types" { corpus_singer unknown-types; }
@test "singer: utf8-beyond-max" { corpus_singer utf8-beyond-max; }
@test "singer: utf8-cut-sequence" { corpus_singer utf8-cut-sequence; }
@test "singer: utf8-in-stream-name" { corpus_singer utf8-in-stream-name; }
@test "singer: utf8-invalid-byte" { corpus_singer utf8-invalid-byte; }
@test "singer: utf8-overlong" { corpus_singer utf8-overlong; }
@test "singer: utf8-surrogate" { corpus_singer utf8-surrogate; }
@test "singer: whitespace-only-line" { corpus_singer whitespace-only-line; }

# A 50 MB record (generated): it lands byte for byte, and pipe-sink's memory
# stays within a few times the longest line.
@test "singer: a 50 MB single record lands byte for byte" {
	local rid kb
	write_pipeline corpus tap-corpus
	{
		printf '{"blob":"'
		head -c 37500000 /dev/urandom | base64 -w 0
		printf '","n":1}'
	} >big.record
	run -0 wc -c <big.record
	[ "$output" -gt 50000000 ]
	{ printf '{"type":"RECORD","stream":"big","record":'; cat big.record; echo "}"; echo "$END_LINE"; } >in.jsonl
	rid=$(new_run_id)
	command time -f %M -o rss pipe-sink -q -r "$rid" corpus <in.jsonl >plan.jsonl
	kb=$(cat rss)
	[ "$kb" -lt 400000 ] || { echo "pipe-sink peaked at $kb KiB" >&2; return 1; }
	run -0 --separate-stderr pipe-commit -r "$rid" corpus <plan.jsonl
	bucket_files >keys
	[ "$(wc -l <keys)" -eq 1 ]
	bucket_data "$(cat keys)" >got
	echo >>big.record
	cmp big.record got
}

# The same record cut short 10 bytes before its end: the error's column is
# past the 50 millionth byte, and nothing is staged.
@test "singer: a 50 MB record cut short names its line and column" {
	local size
	write_pipeline corpus tap-corpus
	{
		printf '{"type":"RECORD","stream":"big","record":{"blob":"'
		head -c 37500000 /dev/urandom | base64 -w 0
		printf '"\n'
		echo "$END_LINE"
	} >in.jsonl
	size=$(head -n 1 in.jsonl | wc -c)
	run -1 --separate-stderr pipe-sink -q corpus <in.jsonl
	assert_stderr "pipe-sink: <stdin>:1:$size: invalid JSON: unexpected end of input: '$(head -c 60 in.jsonl)...'"
	no_files
}

# --- pipeline files ------------------------------------------------------------------------

@test "yaml: alias-only" { corpus_yaml alias-only; }
@test "yaml: anchor" { corpus_yaml anchor; }
@test "yaml: bad-indent" { corpus_yaml bad-indent; }
@test "yaml: bom-crlf" { corpus_yaml bom-crlf; }
@test "yaml: bucket-ftp" { corpus_yaml bucket-ftp; }
@test "yaml: bucket-s3-empty" { corpus_yaml bucket-s3-empty; }
@test "yaml: bucket-relative" { corpus_yaml bucket-relative; }
@test "yaml: bucket-s3-one-slash" { corpus_yaml bucket-s3-one-slash; }
@test "yaml: bucket-tilde-user" { corpus_yaml bucket-tilde-user; }
@test "yaml: comments-only" { corpus_yaml comments-only; }
@test "yaml: compression-number" { corpus_yaml compression-number; }
@test "yaml: compression-uppercase" { corpus_yaml compression-uppercase; }
@test "yaml: config-inf" { corpus_yaml config-inf; }
@test "yaml: config-list" { corpus_yaml config-list; }
@test "yaml: config-octal" { corpus_yaml config-octal; }
@test "yaml: config-yes" { corpus_yaml config-yes; }
@test "yaml: cron-out-of-range" { corpus_yaml cron-out-of-range; }
@test "yaml: document-markers" { corpus_yaml document-markers; }
@test "yaml: duplicate-key" { corpus_yaml duplicate-key; }
@test "yaml: duplicate-key-inline-config" { corpus_yaml duplicate-key-inline-config; }
@test "yaml: duplicate-key-top" { corpus_yaml duplicate-key-top; }
@test "yaml: empty-file" { corpus_yaml empty-file; }
@test "yaml: enabled-list" { corpus_yaml enabled-list; }
@test "yaml: enabled-not-bool" { corpus_yaml enabled-not-bool; }
@test "yaml: endpoint-ftp" { corpus_yaml endpoint-ftp; }
@test "yaml: incremental-scalar" { corpus_yaml incremental-scalar; }
@test "yaml: inline-config" { corpus_yaml inline-config; }
@test "yaml: invalid-utf8" { corpus_yaml invalid-utf8; }
@test "yaml: level-out-of-range" { corpus_yaml level-out-of-range; }
@test "yaml: max-size-huge" { corpus_yaml max-size-huge; }
@test "yaml: max-size-negative" { corpus_yaml max-size-negative; }
@test "yaml: max-size-small" { corpus_yaml max-size-small; }
@test "yaml: merge-key" { corpus_yaml merge-key; }
@test "yaml: missing-destination" { corpus_yaml missing-destination; }
@test "yaml: non-string-key" { corpus_yaml non-string-key; }
@test "yaml: nul-byte" { corpus_yaml nul-byte; }
@test "yaml: path-absolute" { corpus_yaml path-absolute; }
@test "yaml: path-dotdot" { corpus_yaml path-dotdot; }
@test "yaml: quoted-keys" { corpus_yaml quoted-keys; }
@test "yaml: source-scalar" { corpus_yaml source-scalar; }
@test "yaml: streams-duplicate" { corpus_yaml streams-duplicate; }
@test "yaml: streams-empty" { corpus_yaml streams-empty; }
@test "yaml: streams-string" { corpus_yaml streams-string; }
@test "yaml: tab-indent" { corpus_yaml tab-indent; }
@test "yaml: tag" { corpus_yaml tag; }
@test "yaml: tap-list-nested" { corpus_yaml tap-list-nested; }
@test "yaml: tap-mapping" { corpus_yaml tap-mapping; }
@test "yaml: tap-null" { corpus_yaml tap-null; }
@test "yaml: tap-shell" { corpus_yaml tap-shell; }
@test "yaml: top-level-list" { corpus_yaml top-level-list; }
@test "yaml: top-level-scalar" { corpus_yaml top-level-scalar; }
@test "yaml: two-documents" { corpus_yaml two-documents; }
@test "yaml: unknown-key" { corpus_yaml unknown-key; }
@test "yaml: unterminated-quote" { corpus_yaml unterminated-quote; }

# A 10 MB pipeline file (generated): refused before it is parsed.
@test "yaml: a 10 MB pipeline file is refused" {
	local f=$DATASPOC_PIPE_HOME/pipelines/big.yaml status=0
	{
		printf 'source:\n  tap: tap-corpus\n  config:\n'
		seq 1 400000 | sed 's/.*/    key&: "a value of twenty"/'
		printf 'destination:\n  bucket: %s\n' "$BUCKET_DIR"
	} >"$f"
	run -0 wc -c <"$f"
	[ "$output" -gt 10000000 ]
	dataspoc-pipe run big >out 2>err || status=$?
	assert_equal "$status" 2
	echo "dataspoc-pipe: $f: pipeline file too large (more than 1 MiB)" | expect_file err
	expect_file_empty out
	bucket_untouched
}

# The same size as the home's config.yaml, which every pipeline reads.
@test "yaml: a 10 MB config.yaml is refused" {
	local status=0
	write_pipeline corpus tap-corpus
	{
		echo "destination:"
		seq 1 500000 | sed 's/.*/# comment line &/'
	} >"$DATASPOC_PIPE_HOME/config.yaml"
	dataspoc-pipe run corpus >out 2>err || status=$?
	assert_equal "$status" 2
	run -0 cat err
	assert_output --regexp "^dataspoc-pipe: $DATASPOC_PIPE_HOME/config.yaml: [a-z. ]+ too large \\(more than 1 MiB\\)\$"
	bucket_untouched
}

# --- state files in the bucket ---------------------------------------------------------------

@test "state: array" { corpus_state array; }
@test "state: empty" { corpus_state empty; }
@test "state: empty-object" { corpus_state empty-object; }
@test "state: invalid-utf8" { corpus_state invalid-utf8; }
@test "state: lock-garbage" { corpus_state lock-garbage; }
@test "state: lock-no-expiry" { corpus_state lock-no-expiry; }
@test "state: not-json" { corpus_state not-json; }
@test "state: nul-byte" { corpus_state nul-byte; }
@test "state: null" { corpus_state null; }
@test "state: number" { corpus_state number; }
@test "state: pending-garbage" { corpus_state pending-garbage; }
@test "state: pending-incomplete" { corpus_state pending-incomplete; }
@test "state: pretty" { corpus_state pretty; }
@test "state: state-message" { corpus_state state-message; }
@test "state: string" { corpus_state string; }
@test "state: trailing-garbage" { corpus_state trailing-garbage; }
@test "state: truncated" { corpus_state truncated; }
