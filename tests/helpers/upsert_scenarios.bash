# upsert_scenarios.bash: the scenarios of upsert by key (issue #27),
# destination.load_method: upsert, run through the driver and read back as
# DataSpoc Lens reads a table (read_parquet('<location>/**/*.parquet',
# hive_partitioning=true, union_by_name=true)), for tests/upsert.bats (a local
# bucket) and tests/upsert-s3.bats (s3rver).  Each bats file loads its
# bucket's helpers, tests/helpers/parquet.bash and tests/helpers/lake_scenarios.bash.

SCHEMA_ID='{"type":"SCHEMA","stream":"users","schema":{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":["null","string"]},"_sdc_deleted_at":{"type":["null","string"],"format":"date-time"}}},"key_properties":["id"]}'

# tap_sends TAP: the tap's output from stdin, SCHEMA first, a STATE last.
tap_sends() {
	{
		echo "$SCHEMA_ID"
		singer_records users
		echo '{"type":"STATE","value":{"n":1}}'
	} >"$FAKE_DIR/$1/out"
}

# lens_users PIPELINE: the rows of the users table, id and name only.
lens_rows() {
	lens "$1" | jq -c '{id, name}'
}

# distinct_ok KEY: count(*) = count(DISTINCT id) as Lens reads the table.
distinct_ok() {
	local root loc
	root=$(lens_root)
	loc=$(jq -r --arg k "$1" '.tables[$k].location' "$root/.dataspoc/manifest.json")
	# relative to the bucket (as pipe-commit writes it), or a full URI of the bucket's
	loc=${loc#"$(bucket_url)"}
	loc=/${loc#/}
	node -e '
		const { duckdb } = await import(process.argv[1]);
		const i = await duckdb().DuckDBInstance.create(":memory:", { threads: "1" });
		const c = await i.connect();
		const r = (await c.runAndReadAll(`SELECT count(*)::VARCHAR AS n, count(DISTINCT id)::VARCHAR AS d FROM read_parquet(${"\x27" + process.argv[2] + "/**/*.parquet\x27"}, hive_partitioning=true, union_by_name=true)`)).getRowObjectsJS()[0];
		console.log(r.n + " " + r.d);
	' --input-type=module "$PQ/deps.mjs" "$root$loc"
}









# replay TAP FILE: the tap's next run prints FILE.
replay() {
	cp "$2" "$FAKE_DIR/$1/out"
}



# batch SEED RUN: a random batch of 40 changes over 60 keys (upserts and
# deletes, keys repeated), as RECORD lines, on stdout.
batch() {
	awk -v seed="$1" -v run="$2" 'BEGIN {
		srand(seed * 1000 + run)
		for (i = 1; i <= 40; i++) {
			id = int(rand() * 60) + 1
			if (rand() < 0.2)
				printf "{\"id\":%d,\"_sdc_deleted_at\":\"2026-12-01T00:00:00+00:00\"}\n", id
			else
				printf "{\"id\":%d,\"name\":\"v%d_%d\",\"_sdc_deleted_at\":null}\n", id, run, i
		}
	}'
}

# apply MODEL < RECORDS: the oracle, "id name" lines, later records win.
apply() {
	awk '
		FILENAME == ARGV[1] { m[$1] = $2; next }
		{
			match($0, /"id":[0-9]+/); id = substr($0, RSTART + 5, RLENGTH - 5)
			if ($0 ~ /"_sdc_deleted_at":"/) delete m[id]
			else { match($0, /"name":"[^"]*"/); m[id] = substr($0, RSTART + 8, RLENGTH - 9) }
		}
		END { for (k in m) print k, m[k] }
	' "$1" - | sort -n >"$1.new"
	mv "$1.new" "$1"
}

lake_model() {
	lens "$1" | jq -r '"\(.id) \(.name)"' | sort -n
}

# upsert: updates replace, re-sent rows count once, later records win
scenario_upsert_updates() {
	use_tap tap-up
	lake_pipeline up tap-up true "load_method: upsert"
	tap_sends tap-up <<-'EOF'
	{"id":1,"name":"ana"}
	{"id":2,"name":"bo"}
	{"id":2,"name":"bo2"}
	{"id":3,"name":"cy"}
	EOF
	run -0 --separate-stderr dataspoc-pipe run up
	lens_rows up/users >rows
	expect_file rows <<-'EOF'
	{"id":"1","name":"ana"}
	{"id":"2","name":"bo2"}
	{"id":"3","name":"cy"}
	EOF
	tap_sends tap-up <<-'EOF'
	{"id":3,"name":"cy"}
	{"id":1,"name":"ana2"}
	{"id":4,"name":"di"}
	EOF
	run -0 --separate-stderr dataspoc-pipe run up
	lens_rows up/users >rows
	expect_file rows <<-'EOF'
	{"id":"1","name":"ana2"}
	{"id":"2","name":"bo2"}
	{"id":"3","name":"cy"}
	{"id":"4","name":"di"}
	EOF
	run -0 distinct_ok up/users
	assert_output "4 4"
	manifest_table up/users | jq -c '{load_method, key_properties, rows: .stats.total_rows}' >m
	expect_file m <<<'{"load_method":"upsert","key_properties":["id"],"rows":4}'
}

# upsert: _sdc_deleted_at removes the key (hard_delete, the default), or keeps the row with it set (hard_delete: false)
scenario_upsert_deletes() {
	use_tap tap-del
	use_tap tap-soft
	lake_pipeline del tap-del true "load_method: upsert"
	lake_pipeline soft tap-soft true "load_method: upsert" "hard_delete: false"
	tap_sends tap-del <<-'EOF'
	{"id":1,"name":"ana"}
	{"id":2,"name":"bo"}
	{"id":3,"name":"cy"}
	EOF
	cp "$FAKE_DIR/tap-del/out" "$FAKE_DIR/tap-soft/out"
	run -0 --separate-stderr dataspoc-pipe run del
	run -0 --separate-stderr dataspoc-pipe run soft
	tap_sends tap-del <<-'EOF'
	{"id":2,"_sdc_deleted_at":"2026-12-01T07:53:40.915873+00:00"}
	{"id":4,"name":"di","_sdc_deleted_at":null}
	{"id":5,"name":"ed"}
	{"id":5,"_sdc_deleted_at":"2026-12-01T07:53:41+00:00"}
	EOF
	cp "$FAKE_DIR/tap-del/out" "$FAKE_DIR/tap-soft/out"
	run -0 --separate-stderr dataspoc-pipe run del
	run -0 --separate-stderr dataspoc-pipe run soft
	lens_rows del/users >rows
	expect_file rows <<-'EOF'
	{"id":"1","name":"ana"}
	{"id":"3","name":"cy"}
	{"id":"4","name":"di"}
	EOF
	# a delete sends the key alone: what it leaves out keeps the row's values
	lens soft/users | jq -c '{id, name, d: (._sdc_deleted_at != null)}' >rows
	expect_file rows <<-'EOF'
	{"id":"1","name":"ana","d":false}
	{"id":"2","name":"bo","d":true}
	{"id":"3","name":"cy","d":false}
	{"id":"4","name":"di","d":false}
	{"id":"5","name":"ed","d":true}
	EOF
	# sent again without _sdc_deleted_at: no delete any more (metadata is never kept)
	tap_sends tap-soft <<<'{"id":2,"name":"bo3"}'
	run -0 --separate-stderr dataspoc-pipe run soft
	lens soft/users | jq -c 'select(.id == "2") | {id, name, d: (._sdc_deleted_at != null)}' >rows
	expect_file rows <<<'{"id":"2","name":"bo3","d":false}'
	manifest_table del/users | jq -c '.stats.total_rows' >m
	expect_file m <<<3
}

# upsert: a record without its key fails the run naming stream, record and property; nothing committed
scenario_upsert_missing_key() {
	use_tap tap-nokey
	lake_pipeline nk tap-nokey true "load_method: upsert"
	tap_sends tap-nokey <<-'EOF'
	{"id":1,"name":"ana"}
	EOF
	run -0 --separate-stderr dataspoc-pipe run nk
	bucket_snapshot >before
	tap_sends tap-nokey <<-'EOF'
	{"id":2,"name":"bo"}
	{"id":null,"name":"nobody"}
	EOF
	run -1 --separate-stderr dataspoc-pipe run nk
	[[ $stderr == *"run 'nk' failed: stream 'users': record 2 has no key property 'id' (missing or null)"* ]]
	lens_rows nokey/users >rows
	expect_file rows <<<'{"id":"1","name":"ana"}'
	run -0 bucket_files
	assert_output "$(grep -v '\.dataspoc/' before | awk '{print $2}')"
	last_log nk | jq -r .status >st
	expect_file st <<<failure
}

# upsert: the key comes from destination.key_properties when the tap sends none; a stream with no key at all is refused
scenario_upsert_key_fallback() {
	use_tap tap-k
	lake_pipeline kp tap-k true "load_method: upsert" "key_properties: [code]"
	{
		echo '{"type":"SCHEMA","stream":"items","schema":{"type":"object","properties":{"code":{"type":"string"},"v":{"type":"integer"}}},"key_properties":[]}'
		singer_records items <<-'EOF'
		{"code":"a","v":1}
		{"code":"b","v":1}
		{"code":"a","v":2}
		EOF
	} >"$FAKE_DIR/tap-k/out"
	run -0 --separate-stderr dataspoc-pipe run kp
	run -0 --separate-stderr dataspoc-pipe run kp
	lens k/items | jq -c '{code, v}' >rows
	expect_file rows <<-'EOF'
	{"code":"a","v":"2"}
	{"code":"b","v":"1"}
	EOF
	lake_pipeline nokey tap-k true "load_method: upsert" "path: other"
	run -1 --separate-stderr dataspoc-pipe run nokey
	[[ $stderr == *"stream 'items' has no key: its SCHEMA sends no key_properties; set destination.key_properties"* ]]
}

# upsert: a key that changed between runs is refused; --full rebuilds the table by the new key
scenario_upsert_key_changed() {
	use_tap tap-kc
	lake_pipeline kc tap-kc true "load_method: upsert"
	tap_sends tap-kc <<-'EOF'
	{"id":1,"name":"ana"}
	{"id":2,"name":"bo"}
	EOF
	run -0 --separate-stderr dataspoc-pipe run kc
	{
		echo '{"type":"SCHEMA","stream":"users","schema":{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":["null","string"]}}},"key_properties":["name"]}'
		singer_records users <<-'EOF'
		{"id":7,"name":"ana"}
		EOF
	} >"$FAKE_DIR/tap-kc/out"
	run -1 --separate-stderr dataspoc-pipe run kc
	[[ $stderr == *"stream 'users': its key changed from [\"id\"] to [\"name\"] since the table was merged: run once with --full to rebuild the table by the new key"* ]]
	run -0 --separate-stderr dataspoc-pipe run --full kc
	lens_rows kc/users >rows
	expect_file rows <<<'{"id":"7","name":"ana"}'
	manifest_table kc/users | jq -c '{key_properties, rows: .stats.total_rows}' >m
	expect_file m <<<'{"key_properties":["name"],"rows":1}'
}

# upsert: format jsonl is a config error naming the file and line; append-only stays the default
scenario_upsert_config_errors() {
	use_tap tap-cf
	lake_pipeline cj tap-cf true "format: jsonl" "load_method: upsert"
	run -2 --separate-stderr dataspoc-pipe run cj
	[[ $stderr == *"$DATASPOC_PIPE_HOME/pipelines/cj.yaml:6: load_method upsert needs format: parquet"* ]]
	lake_pipeline cb tap-cf true "load_method: upsert" "load_method: overwrite"
	run -2 --separate-stderr dataspoc-pipe run cb
	[[ $stderr == *"duplicate key 'load_method'"* ]]
	lake_pipeline cx tap-cf true "load_method: merge"
	run -2 --separate-stderr dataspoc-pipe run cx
	[[ $stderr == *"cx.yaml:5:16: destination.load_method must be append-only, upsert or overwrite, not 'merge'"* ]]
	# append-only by default: a re-sent row lands twice, as before
	lake_pipeline ap tap-cf true
	tap_sends tap-cf <<<'{"id":1,"name":"ana"}'
	run -0 --separate-stderr dataspoc-pipe run ap
	run -0 --separate-stderr dataspoc-pipe run ap
	run -0 distinct_ok cf/users
	assert_output "2 1"
}

# upsert: per-stream overrides: one stream upserts, another appends, in one pipeline
scenario_upsert_per_stream() {
	use_tap tap-mix
	lake_pipeline mix tap-mix true "streams:" "  users:" "    load_method: upsert"
	{
		echo "$SCHEMA_ID"
		singer_records users <<<'{"id":1,"name":"ana"}'
		singer_records events <<<'{"id":1,"what":"login"}'
	} >"$FAKE_DIR/tap-mix/out"
	run -0 --separate-stderr dataspoc-pipe run mix
	run -0 --separate-stderr dataspoc-pipe run mix
	run -0 distinct_ok mix/users
	assert_output "1 1"
	run -0 distinct_ok mix/events
	assert_output "2 1"
	manifest_table mix/events | jq -r .load_method >m
	expect_file m <<<append-only
}

# upsert: a table landed append-only is refused until --full rebuilds it
scenario_upsert_append_table() {
	use_tap tap-sw
	lake_pipeline sw tap-sw true
	tap_sends tap-sw <<-'EOF'
	{"id":1,"name":"ana"}
	{"id":1,"name":"ana2"}
	EOF
	run -0 --separate-stderr dataspoc-pipe run sw
	lake_pipeline sw tap-sw true "load_method: upsert"
	run -1 --separate-stderr dataspoc-pipe run sw
	[[ $stderr == *"stream 'users': its table 'raw/sw/users' holds 1 file(s) that are not merged by key"* ]]
	[[ $stderr == *"'dataspoc-pipe compact sw users' merges them by key once"* ]]
	run -0 --separate-stderr dataspoc-pipe run --full sw
	lens_rows sw/users >rows
	expect_file rows <<<'{"id":"1","name":"ana2"}'
}

# upsert: singer-io tap-postgres LOG_BASED (recorded) replayed run after run: deletes leave, re-sent changes count once
scenario_upsert_fixture_singer() {
	local fx=$BATS_TEST_DIRNAME/fixtures/tap-postgres-log-based
	use_tap tap-postgres-lb
	lake_pipeline lb tap-postgres-lb true "load_method: upsert"
	replay tap-postgres-lb "$fx/run-log1.jsonl"
	run -0 --separate-stderr dataspoc-pipe run lb
	lens postgres-lb/customers | jq -r .id | sort -n | paste -sd' ' >ids
	expect_file ids <<<'1 2 3 4 5 6 7 8 9 10'
	for r in 2 3 3; do
		replay tap-postgres-lb "$fx/run-log$r.jsonl"
		run -0 --separate-stderr dataspoc-pipe run lb
		lens postgres-lb/customers | jq -r .id | sort -n | paste -sd' ' >ids
		expect_file ids <<<'1 2 3 4 7 8 9 10 11 12'
		lens postgres-lb/customers | jq -c 'select(.id == "3" or .id == "4") | .name' >names
		expect_file names <<-'EOF'
		"customer-3-upd"
		"customer-4-upd"
		EOF
		run -0 distinct_ok postgres-lb/customers
		assert_output "10 10"
	done
	manifest_table postgres-lb/customers | jq -c '{load_method, key_properties, rows: .stats.total_rows}' >m
	expect_file m <<<'{"load_method":"upsert","key_properties":["id"],"rows":10}'
}

# upsert: pipelinewise-tap-postgres LOG_BASED (recorded): awkward values survive the merge, the delete leaves
scenario_upsert_fixture_pipelinewise() {
	local fx=$BATS_TEST_DIRNAME/fixtures/pipelinewise-tap-postgres
	use_tap tap-pwlb
	lake_pipeline pwlb tap-pwlb true "load_method: upsert"
	replay tap-pwlb "$fx/run-log1.jsonl"
	run -0 --separate-stderr dataspoc-pipe run pwlb
	lens pwlb/public-items >first
	for r in 2 2; do
		replay tap-pwlb "$fx/run-log$r.jsonl"
		run -0 --separate-stderr dataspoc-pipe run pwlb
		lens pwlb/public-items | jq -r .id | sort -n | paste -sd' ' >ids
		expect_file ids <<<'1 2 3 4 6 7 8 9 10 11'
		lens pwlb/public-items | jq -c 'select(.id == "2") | .note' >note
		expect_file note <<<'"point one v2"'
		run -0 distinct_ok pwlb/public-items
		assert_output "10 10"
	done
	# the rows run 2 did not touch read as run 1 landed them
	lens pwlb/public-items | jq -c 'select(.id != "2" and .id != "11") | del(.dt, ._sdc_deleted_at)' >now
	jq -c 'select(.id != "2" and .id != "5") | del(.dt, ._sdc_deleted_at)' first >was
	diff -u was now
}

# upsert: random inserts, updates, deletes and re-sent rows over many runs, tables split in many files, equal an oracle after every run
scenario_upsert_random() {
	export DATASPOC_PIPE_MERGE_ROWS=6
	use_tap tap-rnd
	lake_pipeline rnd tap-rnd true "load_method: upsert"
	: >model
	for run in 1 2 3 4 5 6 7 8 9 10; do
		batch 7 $run >b
		tap_sends tap-rnd <b
		run -0 --separate-stderr dataspoc-pipe run rnd
		apply model <b
		lake_model rnd/users >lake
		diff -u model lake
	done
	# the table is many files, each of at most 6 rows
	[ "$(bucket_files | wc -l)" -gt 4 ]
	run -0 distinct_ok rnd/users
	[ "$(manifest_table rnd/users | jq .stats.total_rows)" -eq "$(wc -l <model)" ]
}

# upsert: kill -9 at random moments of a run: the lake is the table before or after it, never a duplicate or a lost row, and the next run recovers
scenario_upsert_kill() {
	export DATASPOC_PIPE_MERGE_ROWS=6
	use_tap tap-kil
	lake_pipeline kil tap-kil true "load_method: upsert"
	: >model
	batch 11 0 >b
	tap_sends tap-kil <b
	run -0 --separate-stderr dataspoc-pipe run kil
	apply model <b
	for run in 1 2 3 4 5 6 7 8; do
		batch 11 $run >b
		tap_sends tap-kil <b
		cp model after
		apply after <b
		setsid dataspoc-pipe run kil >/dev/null 2>&1 &
		local pid=$!
		sleep "0.$(( (run * 37) % 10 ))$(( run % 7 ))"
		kill -9 -- "-$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		# recovery finishes a commit that began, or drops the run
		run -0 --separate-stderr pipe-state get -r "$(pipe-state new-run-id)" kil
		run -0 --separate-stderr pipe-state unlock kil
		lake_model kil/users >lake
		diff -q model lake >/dev/null || diff -u after lake
		# the tap sends the batch again (its state did not move, or it did)
		run -0 --separate-stderr dataspoc-pipe run kil
		cp after model
		lake_model kil/users >lake
		diff -u model lake
		run -0 distinct_ok kil/users
	done
}

# A property a record leaves out keeps the table's value (a LOG_BASED
# update of a row whose large TOASTed column did not change); one sent as
# null sets null; within a run, the record before fills what a later one
# leaves out; a key new to the table gets a null.
scenario_upsert_absent() {
	use_tap tap-ab
	lake_pipeline ab tap-ab true "load_method: upsert"
	local schema='{"type":"SCHEMA","stream":"users","schema":{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":["null","string"]},"big":{"type":["null","string"]},"_sdc_deleted_at":{"type":["null","string"],"format":"date-time"}}},"key_properties":["id"]}'
	{
		echo "$schema"
		singer_records users <<-'EOF'
		{"id":1,"name":"ana","big":"B1"}
		{"id":2,"name":"bo","big":"B2"}
		{"id":3,"name":"cy","big":"B3"}
		{"id":4,"name":"di","big":"B4"}
		EOF
	} >"$FAKE_DIR/tap-ab/out"
	run -0 --separate-stderr dataspoc-pipe run ab
	{
		echo "$schema"
		singer_records users <<-'EOF'
		{"id":1,"name":"ana2","_sdc_deleted_at":null}
		{"id":2,"name":"bo2","big":null}
		{"id":3,"name":"cy2"}
		{"id":3,"big":"B3b"}
		{"id":5,"name":"ed"}
		{"id":4,"_sdc_deleted_at":"2026-12-01T00:00:00+00:00"}
		{"id":4,"name":"di2"}
		EOF
	} >"$FAKE_DIR/tap-ab/out"
	run -0 --separate-stderr dataspoc-pipe run ab
	lens ab/users | jq -c '{id, name, big}' | sort >rows
	expect_file rows <<-'EOF'
	{"id":"1","name":"ana2","big":"B1"}
	{"id":"2","name":"bo2","big":null}
	{"id":"3","name":"cy2","big":"B3b"}
	{"id":"4","name":"di2","big":null}
	{"id":"5","name":"ed","big":null}
	EOF
	# the note never reaches the table
	[ "$(lens ab/users | jq -c 'select(._extra != null)' | wc -l)" -eq 0 ]
	run -0 distinct_ok ab/users
	assert_output "5 5"
}
