#!/usr/bin/env bats
# load.bats: the load suite of issue #6 on a local bucket — 20 pipelines
# at once into one bucket, one stream of ten million records, one run of
# 1,000 streams.  Run by `make test-load`; the scale knobs are in
# helpers/load.bash.  Figures go to the output (and $LOAD_REPORT).

load ../helpers/load

setup_file() {
	load_build
}

setup() {
	load_setup
}

teardown() {
	pipe_teardown
}

@test "run --all -j 8: 20 pipelines into one bucket, twice, every state and table right" {
	scenario_concurrent "${LOAD_PIPE_RECORDS:-2000}"
}

# hammer_setup WORKERS: the input and the pipelines of sink_hammer, in
# hammer/ (not in pipelines/, which run --all runs).
hammer_setup() {
	local w
	printf '%s\n' '{"type":"RECORD","stream":"s","record":{"id":1}}' \
		'{"type":"DATASPOC_TAP_END","status":"failure","exit_status":1,"error":"tap-race failed"}' >hammer.jsonl
	mkdir -p hammer
	for w in $(seq 1 $((($1 + 1) / 2))); do
		write_pipeline "w$w" tap-race
		mv "$DATASPOC_PIPE_HOME/pipelines/w$w.yaml" hammer/
	done
}

# sink_hammer WORKERS RUNS: WORKERS loops at once into the bucket, each
# running pipe-sink RUNS times on a stream whose tap failed: each run
# stages a file (making .dataspoc/staging/NAME/RUN/...) and removes it
# (pruning the folders it emptied).  Two workers share a pipeline (each
# its own run id), so staging/NAME is made and pruned by two processes at
# once, and .dataspoc/staging by all.  Their stderr goes to hammer.err.N,
# their statuses to hammer.status.N.
sink_hammer() {
	local workers=$1 runs=$2 w p st pids=
	for w in $(seq 1 "$workers"); do
		p=w$(((w + 1) / 2))
		(
			for _ in $(seq 1 "$runs"); do
				st=0
				pipe-sink -q -r "20260102T030405Z-abc$(printf %03d "$w")" -c "hammer/$p.yaml" \
					<hammer.jsonl >/dev/null 2>>"hammer.err.$w" || st=$?
				echo "$st" >>"hammer.status.$w"
			done
		) &
		pids="$pids $!"
	done
	for w in $pids; do
		wait "$w"
	done
}

# Every run of sink_hammer WORKERS RUNS failed as its tap did, and only so.
hammer_check() {
	cat hammer.err.* | LC_ALL=C sort | uniq -c | sed 's/^ *//' >hammer.err
	echo "$(($1 * $2)) pipe-sink: tap-race failed" | expect_file hammer.err
	cat hammer.status.* | LC_ALL=C sort | uniq -c | sed 's/^ *//' >hammer.status
	echo "$(($1 * $2)) 1" | expect_file hammer.status
}

@test "run --all -j 4 round after round, pipe-sink runs beside it: no run trips on a folder another pruned" {
	# Small pipelines: each run makes and prunes its staging folders within
	# milliseconds, beside the others' (issue #12, item 9: one pruned the
	# shared .dataspoc/staging while another made its folder in it).  The
	# hammer beside them does the same hundreds of times, so that the
	# race, rare between whole runs, is met for sure.
	local LOAD_PIPELINES=${LOAD_RACE_PIPELINES:-12} LOAD_STREAMS=2
	local rounds=${LOAD_RACE_ROUNDS:-10} jobs=${LOAD_RACE_JOBS:-4}
	local workers=${LOAD_RACE_WORKERS:-4} runs=${LOAD_RACE_RUNS:-150} i r name failed=0 hammer
	for i in $(seq 1 "$LOAD_PIPELINES"); do
		name=$(printf 'p%02d' "$i")
		load_pipeline "$name" "{\"pipeline\":\"$name\",\"streams\":$LOAD_STREAMS,\"records\":2,\"block\":1}"
	done
	hammer_setup "$workers"
	sink_hammer "$workers" "$runs" &
	hammer=$!
	BG_PIDS="$BG_PIDS $hammer"
	for r in $(seq 1 "$rounds"); do
		status=0
		dataspoc-pipe run --all -j "$jobs" >out 2>err || status=$?
		if [ "$status" -ne 0 ] || [ "$(tail -n 1 out)" != "Summary: $LOAD_PIPELINES success, 0 failure(s)" ]; then
			echo "round $r: exit $status, $(tail -n 1 out)" >&2
			grep -h 'pipe-\|failed' out err | LC_ALL=C sort | uniq -c | head -n 5 >&2
			failed=$((failed + 1))
		fi
	done
	wait "$hammer"
	hammer_check "$workers" "$runs"
	[ "$failed" -eq 0 ] || { echo "$failed of $rounds rounds failed" >&2; false; }
	pipelines_check "$rounds" 2
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	figure "$rounds rounds of $LOAD_PIPELINES pipelines x $LOAD_STREAMS streams x 2 records, -j $jobs," \
		"beside $workers x $runs pipe-sink runs staging and removing a file: none failed"
}

@test "one stream of 10,000,000 records: every record once, memory and files bounded" {
	local n=$LOAD_RECORDS files first last
	load_pipeline big "{\"pipeline\":\"big\",\"streams\":1,\"records\":$n,\"block\":$n,\"state_every\":1000000,\"prefix\":\"big\"}" \
		"max_file_size: 16MiB"
	watched dataspoc-pipe run big
	[ "$status" -eq 0 ] || watched_failed
	assert_equal "$(sed -n 2p out)" "Done! $(thousands "$n") records in 1 stream(s)"
	run -0 bucket_cat .dataspoc/state/big/state.json
	assert_equal "$(jq -c . <<<"$output")" "{\"pipeline\":\"big\",\"seq\":$n}"
	# every record once, in order (read through a pipe: no copy of GBs);
	# and by lines, the first and the last
	cd "$BUCKET_DIR/raw/load/big0000"
	find . -type f | LC_ALL=C sort >"$BATS_TEST_TMPDIR/files"
	files=$(wc -l <"$BATS_TEST_TMPDIR/files")
	xargs zstd -qdc <"$BATS_TEST_TMPDIR/files" | awk '
		substr($0, 1, 6) != "{\"id\":" || substr($0, 7) + 0 != NR { print "line " NR ": " $0; bad = 1; exit }
		END { exit bad }' >&2
	assert_equal "$(xargs zstd -qdc <"$BATS_TEST_TMPDIR/files" | wc -l)" "$n"
	first=$("$LOAD_GEN" -n 1 -p big -r 1 | jq -c 'select(.type == "RECORD") | .record')
	last=$("$LOAD_GEN" -n 1 -p big -r 1 -f $((n - 1)) | jq -c 'select(.type == "RECORD") | .record')
	assert_equal "$(zstd -qdc "$(head -n 1 "$BATS_TEST_TMPDIR/files")" | head -n 1)" "$first"
	assert_equal "$(zstd -qdc "$(tail -n 1 "$BATS_TEST_TMPDIR/files")" | tail -n 1)" "$last"
	cd "$BATS_TEST_TMPDIR"
	assert_equal "$(bucket_cat .dataspoc/manifest.json | jq '.tables["load/big0000"].stats.total_rows')" "$n"
	bucket_clean
	# bounded: one file open at a time, memory independent of the volume
	[ "$samples" -gt 0 ]
	[ "$max_files" -eq 1 ] || { echo "pipe-sink had $max_files data files open" >&2; false; }
	[ "$max_fds" -le $((1 + load_fd_slack)) ] || { echo "pipe-sink had $max_fds descriptors open" >&2; false; }
	[ "$max_rss_mib" -le "$LOAD_RSS_MAX_MIB" ] || { echo "pipe-sink peaked at $max_rss_mib MiB" >&2; false; }
	figure "$n records: ${elapsed} s, $files files (max_file_size 16MiB), pipe-sink peak RSS ${max_rss_mib} MiB, most fds $max_fds ($max_files data files)"
}

@test "one run of 1,000 interleaved streams: fds and memory bounded, files of idle streams closed and rolled" {
	local w=$LOAD_WIDE turns=$LOAD_WIDE_TURNS block=25 per s nfiles
	per=$((turns * block))
	load_pipeline wide "{\"pipeline\":\"wide\",\"streams\":$w,\"records\":$per,\"block\":$block,\"state_every\":10000}"
	# Streams beyond the open files wait in pipe-sink's spill file; past
	# this budget the stream with the most waiting takes the slot of the
	# one idle the longest, whose file is closed and rolled.  1 MiB, so
	# that it happens here (the default is 256).
	export DATASPOC_PIPE_SPILL_MB=${LOAD_SPILL_MB:-1}
	watched dataspoc-pipe run wide
	[ "$status" -eq 0 ] || watched_failed
	assert_equal "$(sed -n 2p out)" "Done! $(thousands $((w * per))) records in $w stream(s)"
	run -0 bucket_cat .dataspoc/state/wide/state.json
	assert_equal "$(jq -c . <<<"$output")" "{\"pipeline\":\"wide\",\"seq\":$per}"
	# each stream: its records once, in order, in its own folder
	for s in $(seq 0 $((w - 1))); do
		printf 'raw/load/wide-s%04d\n' "$s"
	done >tables
	tables_check 1 "$per" $(cat tables) >files
	nfiles=$(awk '{ n += $2 } END { print n }' files)
	# files were rolled: more files than streams (several for some)
	if [ "$w" -gt "$SINK_MAX_OPEN" ]; then
		[ "$nfiles" -gt "$w" ] || { echo "$nfiles files for $w streams: none rolled" >&2; false; }
	fi
	bucket_cat .dataspoc/manifest.json >manifest.json
	assert_equal "$(jq '.tables | length' manifest.json)" "$w"
	assert_equal "$(jq "[.tables[] | select(.stats.total_rows == $per)] | length" manifest.json)" "$w"
	bucket_clean
	[ "$samples" -gt 0 ]
	[ "$max_files" -ge 1 ]	# the sampling sees the files
	[ "$max_files" -le "$SINK_MAX_OPEN" ] || { echo "pipe-sink had $max_files data files open" >&2; false; }
	[ "$max_fds" -le $((SINK_MAX_OPEN + load_fd_slack)) ] || { echo "pipe-sink had $max_fds descriptors open" >&2; false; }
	[ "$max_rss_mib" -le "$LOAD_RSS_MAX_MIB" ] || { echo "pipe-sink peaked at $max_rss_mib MiB" >&2; false; }
	figure "$w streams x $per records in turns of $block, spill budget ${DATASPOC_PIPE_SPILL_MB} MiB:" \
		"${elapsed} s, $nfiles files (most per stream: $(sort -k2 -n files | tail -n 1 | cut -d' ' -f2))," \
		"pipe-sink peak RSS ${max_rss_mib} MiB, most fds $max_fds ($max_files data files)"
}
