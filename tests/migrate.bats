#!/usr/bin/env bats
# A user of the Python DataSpoc Pipe 0.2.0 switches (issue #28): its bucket,
# laid out as its engine.py, catalog.py and state.py leave it, its home
# folder and its crontab are taken over with no edit, and DataSpoc Lens
# (read_parquet(..., hive_partitioning=true, union_by_name=true) over each
# manifest table's location) reads every table right before and after.

load helpers/common
use_local_lake

# py_parquet KEY: the JSON lines on stdin as the Parquet object KEY of the
# bucket, as the Python tool writes a batch.
py_parquet() {
	mkdir -p "$BUCKET_DIR/$(dirname "$1")"
	node "$PQ/py-parquet.mjs" "$BUCKET_DIR/$1"
}

# py_run_log PIPELINE STAMP STREAM COUNT: the run log the Python tool writes
# for a successful run (catalog.py, save_execution_log()), STAMP as its
# started_at.strftime("%Y-%m-%dT%H-%M-%S").
py_run_log() {
	local d=$BUCKET_DIR/.dataspoc/logs/$1
	mkdir -p "$d"
	cat >"$d/$2.json" <<-JSON
	{
	  "pipeline": "$1",
	  "started_at": "2024-01-01T10:00:00.000000+00:00",
	  "finished_at": "2024-01-01T10:00:02.500000+00:00",
	  "duration_seconds": 2.5,
	  "status": "success",
	  "streams": {
	    "$3": {
	      "records": $4
	    }
	  },
	  "total_records": $4
	}
	JSON
}

# py_manifest SOURCE TABLE ROWS: the manifest the Python tool writes
# (catalog.py, update_manifest()): no location, no pipeline.
py_manifest() {
	mkdir -p "$BUCKET_DIR/.dataspoc"
	cat >"$BUCKET_DIR/.dataspoc/manifest.json" <<-JSON
	{
	  "version": "1.0",
	  "updated_at": "2024-01-01T10:00:02.500000+00:00",
	  "tables": {
	    "$1/$2": {
	      "source": "$1",
	      "table": "$2",
	      "stats": {
	        "total_rows": $3,
	        "extractions": 1,
	        "last_extraction": "2024-01-01T10:00:02.500000+00:00",
	        "last_extraction_rows": $3
	      },
	      "columns": [
	        {"name": "id", "type": "int64", "nullable": true},
	        {"name": "name", "type": "string", "nullable": true}
	      ]
	    }
	  }
	}
	JSON
}

# py_state PIPELINE JSON: the state file the Python tool writes (state.py,
# save_state(): json.dumps(state, indent=2), its default ensure_ascii, no
# newline at the end), by the same call.
py_state() {
	mkdir -p "$BUCKET_DIR/.dataspoc/state/$1"
	/usr/bin/python3 -c 'import json, sys
open(sys.argv[1], "w").write(json.dumps(json.loads(sys.argv[2]), indent=2))' \
		"$BUCKET_DIR/.dataspoc/state/$1/state.json" "$2"
}

@test "migrate: a record's own dt reads back in Lens as the tap sent it, not as the date folder's" {
	use_tap tap-d
	lake_pipeline d tap-d true
	{
		echo '{"type":"SCHEMA","stream":"t","schema":{"type":"object","properties":{"id":{"type":"integer"},"dt":{"type":"string","format":"date"}}}}'
		singer_records t <<-'EOF'
		{"id":1,"dt":"2020-01-01"}
		{"id":2,"dt":"2020-01-02"}
		EOF
	} >"$FAKE_DIR/tap-d/out"
	run -0 --separate-stderr dataspoc-pipe run d
	run -0 bucket_files
	assert_output --regexp '^raw/d/t/_dt=[0-9-]{10}/t_[0-9]{8}T[0-9]{6}Z-[0-9a-z]+_0000\.parquet$'
	lens d/t >rows
	expect_file rows <<-'EOF'
	{"id":"1","dt":18262,"_extra":null}
	{"id":"2","dt":18263,"_extra":null}
	EOF
	# a record before any SCHEMA: its columns are inferred, dt among them
	singer_records u <<<'{"id":1,"dt":"2020-01-01"}' >"$FAKE_DIR/tap-d/out"
	run -0 --separate-stderr dataspoc-pipe run d
	run -0 bucket_files
	assert_line --regexp '^raw/d/u/_dt=[0-9-]{10}/u_'
	lens d/u >rows
	expect_file rows <<<'{"id":"1","dt":"2020-01-01","_extra":null}'
	# a stream with no dt keeps the dt= folder (the Python tool's)
	singer_records v <<<'{"id":1}' >"$FAKE_DIR/tap-d/out"
	run -0 --separate-stderr dataspoc-pipe run d
	run -0 bucket_files
	assert_line --regexp '^raw/d/v/dt=[0-9-]{10}/v_'
}

@test "migrate: a snapshot run takes over the Python tool's table: its source folder, its files replaced at once" {
	# the Python tool ran "python mock_tap.py" (tests/mock_tap.py of its own suite)
	py_parquet raw/mock_tap/users/users_0000.parquet <<-'EOF'
	{"id":1,"name":"old-ana"}
	{"id":2,"name":"old-bo"}
	EOF
	py_run_log mock 2024-01-01T10-00-00 users 2
	py_manifest mock_tap users 2
	# another pipeline's Python-era file in the folder stays
	py_parquet raw/mock_tap/users/users_0000.parquet.bak </dev/null
	lens mock_tap/users >rows
	expect_file rows <<-'EOF'
	{"id":"1","name":"old-ana"}
	{"id":"2","name":"old-bo"}
	EOF
	use_tap python
	lake_pipeline mock 'python mock_tap.py' false
	{
		echo '{"type":"SCHEMA","stream":"users","schema":{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":["null","string"]}}},"key_properties":["id"]}'
		singer_records users <<<'{"id":1,"name":"ana"}'
	} >"$FAKE_DIR/python/out"
	run -0 --separate-stderr dataspoc-pipe run mock
	run -0 bucket_files
	assert_output --regexp '^raw/mock_tap/users/dt=[0-9-]{10}/users_[0-9]{8}T[0-9]{6}Z-[0-9a-z]+_0000\.parquet
raw/mock_tap/users/users_0000.parquet.bak$'
	lens mock_tap/users >rows
	expect_file rows <<<'{"id":"1","name":"ana","_extra":null}'
	manifest_table mock_tap/users | jq -c '[.source, .table, .pipeline, .stats.total_rows, .stats.extractions]' >m
	expect_file m <<<'["mock_tap","users","mock",1,2]'
	# the Python run log is kept, and read as it is
	run -0 bucket_exists .dataspoc/logs/mock/2024-01-01T10-00-00.json
}

@test "migrate: files of the Python tool's shape that no Python run of the pipeline names stay, with a warning" {
	py_parquet raw/mock_tap/users/users_0000.parquet <<<'{"id":9,"name":"theirs"}'
	py_run_log other 2024-01-01T10-00-00 users 1
	use_tap python
	lake_pipeline mock 'python mock_tap.py' false
	singer_records users <<<'{"id":1,"name":"ana"}' >"$FAKE_DIR/python/out"
	run -0 --separate-stderr dataspoc-pipe run mock
	[[ $stderr == *"kept 1 file(s) in 'raw/mock_tap/users' that pipeline 'mock' did not land"* ]]
	run -0 bucket_exists raw/mock_tap/users/users_0000.parquet
}

@test "migrate: a bucket copied elsewhere reads: locations are the bucket's, for Lens, scripts/lake, manifest and the Parquet tap" {
	use_tap tap-cp
	lake_pipeline cp tap-cp false
	{
		echo '{"type":"SCHEMA","stream":"t","schema":{"type":"object","properties":{"id":{"type":"integer"}}}}'
		singer_records t <<<'{"id":7}'
	} >"$FAKE_DIR/tap-cp/out"
	run -0 --separate-stderr dataspoc-pipe run cp
	manifest_table cp/t | jq -r .location >loc
	expect_file loc <<<'raw/cp/t'
	# synced down, or mounted elsewhere: the first folder is gone
	cp -a "$BUCKET_DIR" moved
	rm -rf "$BUCKET_DIR"
	node "$PQ/lens-rows.mjs" moved/.dataspoc/manifest.json cp/t >rows
	expect_file rows <<<'{"id":"7","_extra":null}'
	run -0 --separate-stderr "$BATS_TEST_DIRNAME/../scripts/lake" moved cp/t --json
	jq -c '{id, _extra}' <<<"$output" >rows
	expect_file rows <<<'{"id":"7","_extra":null}'
	run -0 --separate-stderr dataspoc-pipe manifest --output json moved
	jq -r '.tables["cp/t"].location' <<<"$output" >loc
	expect_file loc <<<'raw/cp/t'
	printf '{"path": "%s", "stream_name": "t"}\n' "$PWD/moved/raw/cp/t" >tap.json
	run -0 --separate-stderr dataspoc-tap-parquet -c tap.json
	assert_line '{"type":"RECORD","stream":"t","record":{"id":7}}'
}

@test "migrate: keys the Python tool ignores are a warning from run and validate, said once; a typo of a known key is an error" {
	use_tap tap-x
	# as a Python user's file: notes and a region pydantic never read
	cat >"$DATASPOC_PIPE_HOME/pipelines/ex.yaml" <<-EOF
	# synced from the wiki
	source:
	  tap: tap-x
	  config: {}
	  owner: data-team
	destination:
	$(bucket_yaml)
	  path: raw
	  partition_by: _extraction_date
	  compression: zstd
	  region: us-east-1
	incremental:
	  enabled: false
	EOF
	singer_records t <<<'{"id":1}' >"$FAKE_DIR/tap-x/out"
	run -0 --separate-stderr dataspoc-pipe run ex
	assert_output --partial "Done! 1 record in 1 stream(s)"
	printf '%s\n' "$stderr" | grep -F 'unknown key' | cut -c1-120 >w
	expect_file w <<-EOF
	$(printf '%.120s' "dataspoc-pipe: warning: $DATASPOC_PIPE_HOME/pipelines/ex.yaml:5:3: unknown key 'owner' in source ignored (known: tap, config, streams, catalog, metadata, catalog_flag)")
	$(printf '%.120s' "dataspoc-pipe: warning: $DATASPOC_PIPE_HOME/pipelines/ex.yaml:11:3: unknown key 'region' in destination ignored (known: bucket, path, compression")
	EOF
	run -0 --separate-stderr dataspoc-pipe validate ex
	assert_line --partial "ex: config: WARN: $DATASPOC_PIPE_HOME/pipelines/ex.yaml:5:3: unknown key 'owner' in source ignored"
	# a typo of a known key stops it before anything runs
	sed -i 's/^  compression: zstd/  compresion: zstd/' "$DATASPOC_PIPE_HOME/pipelines/ex.yaml"
	run -2 --separate-stderr dataspoc-pipe run ex
	[[ $stderr == *"ex.yaml:10:3: unknown key 'compresion' in destination: did you mean 'compression'?"* ]]
}

@test "migrate: schedule install and remove know the Python tool's crontab lines (python-crontab's '# dataspoc-pipe:NAME')" {
	export FAKE_CRONTAB=$BATS_TEST_TMPDIR/crontab
	cat >"$BATS_TEST_TMPDIR/bin/crontab" <<-'EOF'
	#!/bin/sh
	case $* in
	-l) [ -e "$FAKE_CRONTAB" ] || { echo "no crontab for tester" >&2; exit 1; }; cat "$FAKE_CRONTAB" ;;
	-) cat >"$FAKE_CRONTAB" ;;
	*) exit 2 ;;
	esac
	EOF
	chmod +x "$BATS_TEST_TMPDIR/bin/crontab"
	use_tap tap-x
	lake_pipeline alpha "$BATS_TEST_TMPDIR/bin/tap-x" false
	printf 'schedule:\n  cron: "0 * * * *"\n' >>"$DATASPOC_PIPE_HOME/pipelines/alpha.yaml"
	# as cli.py's schedule install leaves it (CronTab.new(command, comment).setall(cron))
	cat >"$FAKE_CRONTAB" <<-'EOF'
	0 0 * * * someone else
	0 * * * * flock -n /tmp/dataspoc-pipe-alpha.lock /usr/local/bin/dataspoc-pipe run alpha # dataspoc-pipe:alpha
	30 1 * * * flock -n /tmp/dataspoc-pipe-old.lock /usr/local/bin/dataspoc-pipe run old # dataspoc-pipe:old
	EOF
	run -0 --separate-stderr dataspoc-pipe schedule list
	[ "${#lines[@]}" -eq 2 ]
	run -0 --separate-stderr dataspoc-pipe schedule install alpha
	grep -c 'dataspoc-pipe:alpha$' "$FAKE_CRONTAB" >n
	expect_file n <<<1
	run -0 grep -F 'run --timestamps alpha' "$FAKE_CRONTAB"
	refute_output --partial /usr/local/bin/dataspoc-pipe
	run -0 --separate-stderr dataspoc-pipe schedule remove
	expect_file "$FAKE_CRONTAB" <<<'0 0 * * * someone else'
}

@test "migrate: the Python tool's state.json is read as it is: the tap is given it, a run that sends no STATE keeps it, the next STATE replaces it" {
	use_tap tap-inc
	lake_pipeline inc tap-inc true
	# a tap-postgres bookmark, a number, a stream's name out of ASCII (\u00e9)
	py_state inc '{"currently_syncing": null, "bookmarks": {"public-caf\u00e9": {"replication_key": "updated_at", "replication_key_value": "2024-01-31T10:00:00+00:00", "version": 1706695200000, "ratio": 0.5}}}'
	run -0 bucket_cat .dataspoc/state/inc/state.json
	assert_line --index 3 '    "public-caf\u00e9": {'
	want='{"bookmarks":{"public-café":{"ratio":0.5,"replication_key":"updated_at","replication_key_value":"2024-01-31T10:00:00+00:00","version":1706695200000}},"currently_syncing":null}'
	run -0 --separate-stderr pipe-state get inc
	jq -S -c . <<<"$output" >got
	expect_file got <<<"$want"
	run -0 --separate-stderr pipe-state unlock inc
	singer_records 'public-café' <<<'{"id":1}' >"$FAKE_DIR/tap-inc/out"
	run -0 --separate-stderr dataspoc-pipe run inc
	jq -S -c . "$FAKE_DIR/tap-inc/state-in" >got
	expect_file got <<<"$want"
	bucket_cat .dataspoc/state/inc/state.json | jq -S -c . >got
	expect_file got <<<"$want"
	{
		singer_records 'public-café' <<<'{"id":2}'
		echo '{"type":"STATE","value":{"currently_syncing":null,"bookmarks":{"public-café":{"replication_key":"updated_at","replication_key_value":"2024-02-01T00:00:00+00:00","version":1706695200000}}}}'
	} >"$FAKE_DIR/tap-inc/out"
	run -0 --separate-stderr dataspoc-pipe run inc
	jq -S -c . "$FAKE_DIR/tap-inc/state-in" >got
	expect_file got <<<"$want"
	bucket_cat .dataspoc/state/inc/state.json | jq -c '.bookmarks["public-café"].replication_key_value' >got
	expect_file got <<<'"2024-02-01T00:00:00+00:00"'
}

@test "migrate: a switcher's scripts: manifest of a bucket with none, status, logs and validate --output json with the Python tool's keys and exit codes" {
	# init on a home the Python tool made: 0, its config.yaml kept
	mkdir -p "$DATASPOC_PIPE_HOME"
	printf 'defaults:\n  compression: zstd\n  partition_by: _extraction_date\n' >"$DATASPOC_PIPE_HOME/config.yaml"
	run -0 --separate-stderr dataspoc-pipe init
	run -0 grep -c partition_by "$DATASPOC_PIPE_HOME/config.yaml"
	# manifest of a bucket no run landed in: catalog.py's empty manifest, 0
	run -0 --separate-stderr dataspoc-pipe manifest --output json "$(bucket_url)"
	assert_output '{"version":"1.0","updated_at":null,"tables":{}}'
	run -0 --separate-stderr dataspoc-pipe manifest "$(bucket_url)"
	use_tap tap-s
	lake_pipeline s tap-s false
	# a pipeline that never ran: 0, status "no runs", no log (logs: 0)
	run -0 --separate-stderr dataspoc-pipe status --output json
	jq -c '.[] | [keys_unsorted[0:5], .status]' <<<"$output" >got
	expect_file got <<<'[["name","last_run","status","duration","records"],"no runs"]'
	run -0 --separate-stderr dataspoc-pipe logs s
	run -0 --separate-stderr dataspoc-pipe logs --output json s
	assert_output null
	# a log the Python tool wrote, read as it wrote it
	py_run_log s 2024-01-01T10-00-00 t 2
	run -0 --separate-stderr dataspoc-pipe logs --output json s
	jq -S -c . <<<"$output" >got
	jq -S -c . "$BUCKET_DIR/.dataspoc/logs/s/2024-01-01T10-00-00.json" >want
	diff -u want got
	run -0 --separate-stderr dataspoc-pipe status --output json s
	jq -c '.[0] | [.name, .last_run, .status, .duration, .records]' <<<"$output" >got
	expect_file got <<<'["s","2024-01-01T10:00:00.000000+00:00","success",2.5,2]'
	# our run: its log has the Python tool's keys, with their meanings
	singer_records t <<<'{"id":1}' >"$FAKE_DIR/tap-s/out"
	run -0 --separate-stderr dataspoc-pipe run s
	run -0 --separate-stderr dataspoc-pipe logs --output json s
	jq -c '[.pipeline, .status, .streams.t.records, .total_records, (.started_at | type), (.finished_at | type), (.duration_seconds | type)]' <<<"$output" >got
	expect_file got <<<'["s","success",1,1,"string","string","number"]'
	# validate: an object a pipeline, cli.py's keys first
	run -0 --separate-stderr dataspoc-pipe validate --output json s
	jq -c '.[] | [keys_unsorted[0:3], .pipeline, .bucket_ok, .tap_ok]' <<<"$output" >got
	expect_file got <<<'[["pipeline","bucket_ok","tap_ok"],"s",true,true]'
	run -2 --separate-stderr dataspoc-pipe validate --output json gone
	jq -c '.[] | [.pipeline, .bucket_ok, .tap_ok, .error]' <<<"$output" >got
	expect_file got <<<'["gone",false,false,"not found"]'
}

@test "migrate: a Google Sheets pipeline as the Python howto writes it runs as it is, its table taken over" {
	load helpers/gsheets
	gsheets_start "$BATS_TEST_TMPDIR/sheets" "$BATS_TEST_TMPDIR/requests"
	BG_PIDS="$BG_PIDS $SHEETS_PID"
	mkdir -p "$BATS_TEST_TMPDIR/sheets/1AbC-x_9"
	printf 'id,name\n1,ana\n2,bo\n' >"$BATS_TEST_TMPDIR/sheets/1AbC-x_9/7.csv"
	# its howto's two files (docs/howto-google-sheets-s3.md), its table and run log;
	# the source file as its add wrote it from tap_templates.py, with a _comment
	mkdir -p "$DATASPOC_PIPE_HOME/sources"
	cat >"$DATASPOC_PIPE_HOME/sources/my-sheet.json" <<-'EOF2'
	{
	  "_comment": "a public sheet: paste its address",
	  "url": "https://docs.google.com/spreadsheets/d/1AbC-x_9/edit?gid=7#gid=7",
	  "sheet_name": "orders"
	}
	EOF2
	cat >"$DATASPOC_PIPE_HOME/pipelines/my-sheet.yaml" <<-EOF2
	source:
	  tap: google-sheets-public
	  config: $DATASPOC_PIPE_HOME/sources/my-sheet.json
	destination:
	$(bucket_yaml)
	  path: raw
	  compression: zstd
	incremental:
	  enabled: false
	EOF2
	py_parquet raw/google-sheets-public/orders/orders_0000.parquet <<<'{"id":1,"name":"old"}'
	py_run_log my-sheet 2024-01-01T10-00-00 orders 1
	run -0 --separate-stderr dataspoc-pipe validate my-sheet
	run -0 --separate-stderr dataspoc-pipe run my-sheet
	[[ $stderr != *warning* ]]
	assert_output "Running: my-sheet
Done! 2 records in 1 stream(s)
  orders: 2"
	run -0 bucket_files
	assert_output --regexp '^raw/google-sheets-public/orders/dt=[0-9-]{10}/orders_[0-9]{8}T[0-9]{6}Z-[0-9a-z]+_0000\.parquet$'
	lens google-sheets-public/orders >rows
	expect_file rows <<-'EOF2'
	{"id":"1","name":"ana","_extra":null}
	{"id":"2","name":"bo","_extra":null}
	EOF2
	run -0 cat "$BATS_TEST_TMPDIR/requests"
	assert_line "/spreadsheets/d/1AbC-x_9/export?format=csv&gid=7"
}

@test "migrate: the _comment the Python tool's templates put in a tap's config is a comment, not a key to warn about" {
	py_parquet raw/t/t_0000.parquet <<<'{"id":1,"name":"a"}'
	printf '{"_comment": "read the Parquet files of a table", "path": "%s", "stream_name": "t"}\n' \
		"$BUCKET_DIR/raw/t" >pq.json
	run -0 --separate-stderr "$PIPE_BIN/dataspoc-tap-parquet" --config pq.json --discover
	assert_equal "$stderr" ""
	# a key of ours misspelt is still said
	printf '{"_comment": "x", "path": "%s", "stream_nam": "t"}\n' "$BUCKET_DIR/raw/t" >pq2.json
	run -0 --separate-stderr "$PIPE_BIN/dataspoc-tap-parquet" --config pq2.json --discover
	assert_equal "$stderr" "dataspoc-tap-parquet: warning: config 'pq2.json': key 'stream_nam' ignored"
}
