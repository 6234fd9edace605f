# compact_scenarios.bash: dataspoc-pipe compact NAME [STREAM] (issue #27),
# for tests/compact.bats (a local bucket), tests/compact-s3.bats (s3rver)
# and tests/azure.bats (Azurite).  Each bats file loads its bucket's
# helpers, tests/helpers/parquet.bash, lake_scenarios.bash and
# upsert_scenarios.bash.  A table is read back as DataSpoc Lens reads it.

# table_snapshot PREFIX: each file of the table folder PREFIX/ and its hash.
table_snapshot() {
	local k
	for k in $(bucket_files | grep -F "$1/"); do
		printf '%s %s\n' "$(bucket_cat "$k" | sha256sum | cut -c1-64)" "$k"
	done
}

# lens_all KEY: every row of table KEY as Lens reads it, whole, sorted.
lens_all() {
	lens "$1" | jq -cS . | LC_ALL=C sort
}

# runs_of_small_files PIPELINE TAP N: N runs of 10 records each (ids going
# on, names of hex that compresses badly, one null), each landing one small
# file of table PIPELINE/users.
runs_of_small_files() {
	local i j id
	for i in $(seq 1 "$3"); do
		for j in $(seq 1 10); do
			id=$(((i - 1) * 10 + j))
			if [ "$j" = 10 ]; then
				printf '{"id":%s,"name":null}\n' "$id"
			else
				printf '{"id":%s,"name":"%s"}\n' "$id" "$(printf '%s' "$1 $id" | sha256sum | cut -c1-64)"
			fi
		done | tap_sends "$2"
		dataspoc-pipe run "$1" >/dev/null 2>&1 || return 1
	done
}

# An append-only table of many small files: compact merges them into files
# of max_file_size, row for row; the state stays, a run log says so, and a
# second compact changes nothing; runs go on appending.
scenario_compact_append() {
	use_tap tap-cp
	lake_pipeline cp tap-cp true "max_file_size: 4KiB" "row_group_rows: 10"
	runs_of_small_files cp tap-cp 12
	run -0 bucket_files
	[ "${#lines[@]}" -eq 12 ]
	lens_all cp/users >rows.before
	[ "$(wc -l <rows.before)" -eq 120 ]
	bucket_cat .dataspoc/state/cp/state.json >state.before
	manifest_table cp/users | jq -c '{rows: .stats.total_rows, columns, extractions: .stats.extractions, last: .stats.last_extraction, n: .stats.last_extraction_rows}' >m.before
	run -0 --separate-stderr dataspoc-pipe compact cp
	assert_line --index 0 "Compacting: cp"
	# fewer files, each but the last of a folder at least max_file_size
	run -0 bucket_files
	[ "${#lines[@]}" -lt 12 ]
	[ "${#lines[@]}" -ge 2 ]
	local k n=0 last
	last=$(bucket_files | tail -n 1)
	for k in $(bucket_files); do
		[ "$k" = "$last" ] || [ "$(bucket_cat "$k" | wc -c)" -ge 4096 ]
		n=$((n + 1))
	done
	lens_all cp/users >rows.after
	diff -u rows.before rows.after
	bucket_cat .dataspoc/state/cp/state.json | diff -u state.before -
	# nothing extracted: the manifest's extraction stats stay; the log says compact
	manifest_table cp/users | jq -c '{rows: .stats.total_rows, columns, extractions: .stats.extractions, last: .stats.last_extraction, n: .stats.last_extraction_rows}' | diff -u m.before -
	last_log cp | jq -c '{status, command, records: .streams.users.records}' >log
	expect_file log <<<'{"status":"success","command":"compact","records":120}'
	run -1 bucket_exists .dataspoc/state/cp/lock
	no_pending cp
	# again: nothing to merge, nothing changes but the run log
	table_snapshot cp/users >snap.before
	run -0 --separate-stderr dataspoc-pipe compact cp
	table_snapshot cp/users | diff -u snap.before -
	last_log cp | jq -c '{status, records: .streams.users.records}' >log
	expect_file log <<<'{"status":"success","records":0}'
	# and runs go on appending beside the merged files
	runs_of_small_files cp tap-cp 1
	lens_all cp/users >rows.more
	[ "$(wc -l <rows.more)" -eq 130 ]
	run -0 distinct_ok cp/users
	assert_output "130 120"
}

# An append-only table, then upsert: compact keeps each key's last version
# (the files read oldest first, small files merged by an earlier compact
# too), once; a second compact changes nothing; upsert runs go on from there.
scenario_compact_to_upsert() {
	use_tap tap-cu
	lake_pipeline cu tap-cu true "max_file_size: 4KiB"
	tap_sends tap-cu <<-'EOF'
	{"id":1,"name":"ana"}
	{"id":2,"name":"bo"}
	EOF
	dataspoc-pipe run cu >/dev/null
	tap_sends tap-cu <<-'EOF'
	{"id":2,"name":"bo2"}
	{"id":3,"name":"cy"}
	EOF
	dataspoc-pipe run cu >/dev/null
	# merged as an append-only table first: the order of versions stays
	run -0 --separate-stderr dataspoc-pipe compact cu
	tap_sends tap-cu <<-'EOF'
	{"id":3,"name":"cy2"}
	{"id":1,"_sdc_deleted_at":"2026-12-01T00:00:00+00:00"}
	EOF
	dataspoc-pipe run cu >/dev/null
	run -0 distinct_ok cu/users
	assert_output "6 3"
	lake_pipeline cu tap-cu true "load_method: upsert" "max_file_size: 4KiB"
	bucket_cat .dataspoc/state/cu/state.json >state.before
	run -0 --separate-stderr dataspoc-pipe compact cu users
	lens_rows cu/users >rows
	expect_file rows <<-'EOF'
	{"id":"2","name":"bo2"}
	{"id":"3","name":"cy2"}
	EOF
	bucket_cat .dataspoc/state/cu/state.json | diff -u state.before -
	manifest_table cu/users | jq -c '{load_method, rows: .stats.total_rows}' >m
	expect_file m <<<'{"load_method":"upsert","rows":2}'
	table_snapshot cu/users >snap.before
	run -0 --separate-stderr dataspoc-pipe compact cu
	table_snapshot cu/users | diff -u snap.before -
	tap_sends tap-cu <<<'{"id":4,"name":"di"}'
	dataspoc-pipe run cu >/dev/null
	lens_rows cu/users >rows
	expect_file rows <<-'EOF'
	{"id":"2","name":"bo2"}
	{"id":"3","name":"cy2"}
	{"id":"4","name":"di"}
	EOF
}

# compact is locked like a run: a live run's lock refuses it (75), the
# bucket as it was; errors are one line under dataspoc-pipe's name, logged.
scenario_compact_refusals() {
	use_tap tap-cr
	lake_pipeline cr tap-cr true "max_file_size: 4KiB"
	runs_of_small_files cr tap-cr 3
	local holder
	sleep 1000 &
	holder=$!
	BG_PIDS="${BG_PIDS:-} $holder"
	lock_json 20260101T000000Z-a1b2c3 "$(hostname)" "$holder" 2026-01-01T00:00:00Z "$LIVE_UNTIL" |
		bucket_put .dataspoc/state/cr/lock
	bucket_snapshot >before.snap
	run -75 --separate-stderr dataspoc-pipe compact cr
	assert_output "Compacting: cr"
	assert_stderr "dataspoc-pipe: compact 'cr' failed: pipeline 'cr' is locked by run 20260101T000000Z-a1b2c3 (pid $holder on $(hostname), since 2026-01-01T00:00:00Z, until ${LIVE_UNTIL}); if that run is gone, use 'pipe-state unlock cr'"
	bucket_snapshot | diff -u before.snap -
	kill "$holder"
	bucket_rm .dataspoc/state/cr/lock
	# a stream the pipeline never landed: refused, logged, the lock let go
	run -1 --separate-stderr dataspoc-pipe compact cr orders
	assert_stderr "dataspoc-pipe: compact 'cr' failed: pipeline 'cr' landed no table of stream 'orders'"
	last_log cr | jq -c '{status, error}' >log
	expect_file log <<<'{"status":"failure","error":"pipeline '"'cr'"' landed no table of stream '"'orders'"'"}'
	run -1 bucket_exists .dataspoc/state/cr/lock
	run -2 --separate-stderr dataspoc-pipe compact
	run -2 --separate-stderr dataspoc-pipe compact cr users extra
	run -2 --separate-stderr dataspoc-pipe compact nosuch
}

# A compact killed in its commit (pipe-commit held up by a manifest lock
# the test holds, after the merged files are published): the table's rows
# are what they were, the commit is pending, and the next compact finishes
# it, then merges nothing more.
scenario_compact_killed() {
	use_tap tap-ck
	lake_pipeline ck tap-ck true "max_file_size: 4KiB" "row_group_rows: 10"
	runs_of_small_files ck tap-ck 6
	lens_all ck/users >rows.before
	local holder commit driver st=0
	sleep 1000 &
	holder=$!
	BG_PIDS="${BG_PIDS:-} $holder"
	printf '{"run_id": "20000101T000000Z-aaaaaa", "host": "%s", "pid": %d, "started_at": "2000-01-01T00:00:00Z", "expires_at": "'"$LIVE_UNTIL"'"}\n' \
		"$(hostname)" "$holder" | bucket_put .dataspoc/manifest.lock
	dataspoc-pipe compact ck >compact.out 2>compact.err &
	driver=$!
	BG_PIDS="$BG_PIDS $driver"
	wait_until pid_of pipe-commit >/dev/null
	wait_until bucket_keys .dataspoc/state/ck/pending/
	[ -n "$(bucket_keys .dataspoc/state/ck/pending/)" ]
	commit=$(pid_of pipe-commit)
	kill -9 "$commit"
	wait "$driver" || st=$?
	assert_equal "$st" 1
	grep -q "dataspoc-pipe: compact 'ck' failed: the commit did not finish" compact.err
	kill "$holder"
	bucket_rm .dataspoc/manifest.lock
	lens_all ck/users | diff -u rows.before -
	run -0 --separate-stderr dataspoc-pipe compact ck
	[[ $stderr == *"finishing the commit of run"* ]]
	no_pending ck
	lens_all ck/users | diff -u rows.before -
	run -0 distinct_ok ck/users
	assert_output "60 60"
	table_snapshot ck/users >snap
	run -0 --separate-stderr dataspoc-pipe compact ck
	table_snapshot ck/users | diff -u snap -
}
