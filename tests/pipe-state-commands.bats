#!/usr/bin/env bats
# pipe-state: logs, status, manifest, check, probe, validate and list -b —
# what the driver's status, logs, manifest, validate and schedule read
# through it.
# Run logs and manifests are put in the bucket as fixtures, so every byte
# printed is known.

load helpers/common

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

# Line INDEX (from 0) of the last run's stderr.
err_line() {
	printf '%s\n' "$stderr" | sed -n "$(($1 + 1))p"
}

# put_log PIPELINE RUN_ID STATUS RECORDS [ERROR]: a run log as pipe-commit writes it.
put_log() {
	local error=null
	[ $# -lt 5 ] || error="\"$5\""
	bucket_put ".dataspoc/logs/$1/$2.json" <<-EOF
	{
	  "pipeline": "$1",
	  "run_id": "$2",
	  "started_at": "2026-01-0${2:7:1}T10:00:00Z",
	  "finished_at": "2026-01-0${2:7:1}T10:02:05Z",
	  "duration_seconds": 125,
	  "status": "$3",
	  "streams": {
	    "orders": {"records": $4},
	    "users": {"records": 0}
	  },
	  "total_records": $4,
	  "error": $error
	}
	EOF
}

compact() {	# PIPELINE RUN_ID STATUS RECORDS [ERROR]
	local error=null
	[ $# -lt 5 ] || error="\"$5\""
	printf '{"pipeline":"%s","run_id":"%s","started_at":"2026-01-0%sT10:00:00Z","finished_at":"2026-01-0%sT10:02:05Z","duration_seconds":125,"status":"%s","streams":{"orders":{"records":%s},"users":{"records":0}},"total_records":%s,"error":%s}\n' \
		"$1" "$2" "${2:7:1}" "${2:7:1}" "$3" "$4" "$4" "$error"
}

three_logs() {
	write_pipeline shop tap-shop
	put_log shop 20260101T100000Z-aaaaaa success 1200
	put_log shop 20260102T100000Z-bbbbbb failure 7 "tap-shop exited with status 1"
	put_log shop 20260103T100000Z-cccccc success 1234567
}

put_manifest() {
	bucket_put .dataspoc/manifest.json <<-'EOF'
	{
	  "version": "1.0",
	  "updated_at": "2026-01-03T10:02:05Z",
	  "tables": {
	    "shop/users": {
	      "source": "shop", "table": "users",
	      "columns": [{"name": "id", "type": "string", "nullable": false}],
	      "key_properties": ["id"], "format": "jsonl",
	      "stats": {"total_rows": 12, "extractions": 1, "last_extraction": "2026-01-01T10:02:05Z", "last_extraction_rows": 12}
	    },
	    "shop/orders": {
	      "source": "shop", "table": "orders",
	      "columns": [{"name": "id", "type": "integer", "nullable": false}, {"name": "total", "type": "number", "nullable": true}, {"name": "at", "type": "string", "nullable": true, "format": "date-time"}],
	      "key_properties": ["id"], "format": "jsonl",
	      "stats": {"total_rows": 1235767, "extractions": 3, "last_extraction": "2026-01-03T10:02:05Z", "last_extraction_rows": 1234567}
	    },
	    "legacy/odd": {"source": "legacy"}
	  }
	}
	EOF
}

# --- usage ----------------------------------------------------------------------

@test "help lists the new commands; options that do not fit a command are usage errors" {
	run -0 --separate-stderr pipe-state --help
	assert_line "  logs      print the pipeline's last run logs, newest first"
	assert_line "  probe     write, read back, list and delete a probe object in the bucket,"
	assert_line "  -b BUCKET    list, manifest, probe, objects, fetch: this bucket, instead of"
	assert_line "               a pipeline's;"
	assert_line "  fetch     write the object -p KEY to standard output"
	assert_line "               check: the bucket to check"
	write_pipeline shop tap-shop
	local usage
	run -2 --separate-stderr pipe-state get -b "$(bucket_url)"
	usage=$stderr
	assert_equal "$(err_line 0)" "usage: pipe-state get [-f] [-r RUN_ID | -i FILE] NAME | show NAME | set NAME < STATE | clear --force NAME |"
	run -2 --separate-stderr pipe-state show -n 2 shop
	assert_equal "$stderr" "$usage"
	run -2 --separate-stderr pipe-state logs -p cron shop
	assert_equal "$stderr" "$usage"
	run -2 --separate-stderr pipe-state manifest -b "$(bucket_url)" shop
	assert_equal "$stderr" "$usage"
	# (status -c FILE is one pipeline by its file: with NAMEs too, no)
	run -2 --separate-stderr pipe-state status -c "$HOMEDIR/pipelines/shop.yaml" shop
	assert_equal "$stderr" "$usage"
	run -2 --separate-stderr pipe-state logs shop other
	assert_equal "$stderr" "$usage"
	run -2 --separate-stderr pipe-state logs -o csv shop
	assert_equal "$stderr" "pipe-state: logs: unknown output format 'csv' (use text json jsonl)"
	run -2 --separate-stderr pipe-state status -o xml
	assert_equal "$stderr" "pipe-state: status: unknown output format 'xml' (use text json)"
	run -2 --separate-stderr pipe-state manifest -o jsonl shop
	assert_equal "$stderr" "pipe-state: manifest: unknown output format 'jsonl' (use text json)"
	run -2 --separate-stderr pipe-state logs -n -1 shop
	assert_equal "$stderr" "pipe-state: -n wants a number of run logs (1 or more), not '-1'"
	run -2 --separate-stderr pipe-state logs -n 3x shop
	assert_equal "$stderr" "pipe-state: -n wants a number of run logs (1 or more), not '3x'"
	run -2 --separate-stderr pipe-state frob shop
	assert_equal "$(err_line 0)" "pipe-state: unknown command 'frob'"
	assert_equal "$(err_line 1)" "$(printf '%s\n' "$usage" | head -n 1)"
	# none of that touched the bucket
	bucket_untouched
}

# --- objects, fetch: scripts/lake's door ------------------------------------------

@test "objects lists the keys under a prefix with their versions; fetch writes one object; -p with -b" {
	mkdir -p b/raw/t/dt=2026-01-01 b/.dataspoc
	printf 'one' >b/raw/t/dt=2026-01-01/a.parquet
	printf 'two\n' >b/raw/t/b.parquet
	printf '{}' >b/.dataspoc/manifest.json
	run -0 --separate-stderr pipe-state objects -p raw/ -b b
	assert_equal "${#lines[@]}" 2
	assert_line --index 0 --regexp $'^4\\.[0-9]+\\.[0-9]{9}\traw/t/b\\.parquet$'
	assert_line --index 1 --regexp $'^3\\.[0-9]+\\.[0-9]{9}\traw/t/dt=2026-01-01/a\\.parquet$'
	local before=${lines[1]}
	run -0 --separate-stderr pipe-state objects -b b
	assert_equal "${#lines[@]}" 3
	assert_line --index 0 --regexp $'\t\\.dataspoc/manifest\\.json$'
	# a changed object has another version
	printf 'uno' >b/raw/t/dt=2026-01-01/a.parquet
	touch -d '2001-01-01' b/raw/t/dt=2026-01-01/a.parquet
	run -0 --separate-stderr pipe-state objects -p raw/t/dt= -b b
	assert_equal "${#lines[@]}" 1
	[ "${lines[0]}" != "$before" ]
	run -0 --separate-stderr pipe-state fetch -p raw/t/b.parquet -b b
	assert_equal "$output" "two"
	pipe-state fetch -p raw/t/b.parquet -b b | cmp - b/raw/t/b.parquet
	run -1 --separate-stderr pipe-state fetch -p raw/nope -b "$PWD/b"
	assert_equal "$stderr" "pipe-state: no object 'raw/nope' in $PWD/b"
	run -2 --separate-stderr pipe-state fetch -b b
	assert_equal "$stderr" "pipe-state: fetch: give the object's key with -p KEY"
	run -1 --separate-stderr pipe-state fetch -p ../x -b b
	[ "${#stderr_lines[@]}" -eq 1 ]
	# the one bucket rule
	run -2 --separate-stderr pipe-state objects -b s3:/b
	assert_equal "$stderr" "pipe-state: bucket 's3:/b' is not a valid URL (expected a directory, file:///abs/dir, s3://bucket[/prefix], gs://bucket[/prefix] or az://container[/prefix])"
	# -p is a key of the bucket only for these two
	run -2 --separate-stderr pipe-state check -p bucket -b b
	assert_equal "$(err_line 0)" "usage: pipe-state get [-f] [-r RUN_ID | -i FILE] NAME | show NAME | set NAME < STATE | clear --force NAME |"
}

# --- logs -----------------------------------------------------------------------

@test "logs: the newest run log as one compact line, -n K newest first" {
	three_logs
	run -0 --separate-stderr pipe-state logs shop
	assert_equal "$stderr" ""
	assert_output "$(compact shop 20260103T100000Z-cccccc success 1234567)"
	run -0 --separate-stderr pipe-state logs -n 2 shop
	assert_output "$(compact shop 20260103T100000Z-cccccc success 1234567)
$(compact shop 20260102T100000Z-bbbbbb failure 7 "tap-shop exited with status 1")"
	run -0 --separate-stderr pipe-state logs -n 9 -o jsonl -c "$HOMEDIR/pipelines/shop.yaml"
	assert_equal "${#lines[@]}" 3
	assert_line --index 2 "$(compact shop 20260101T100000Z-aaaaaa success 1200)"
}

@test "logs -o json: a JSON array; -o text: for people" {
	three_logs
	run -0 --separate-stderr pipe-state logs -n 2 -o json shop
	assert_output "[
  $(compact shop 20260103T100000Z-cccccc success 1234567),
  $(compact shop 20260102T100000Z-bbbbbb failure 7 "tap-shop exited with status 1")
]"
	run -0 jq -r '.[1].error' <<<"$output"
	assert_output "tap-shop exited with status 1"
	run -0 --separate-stderr pipe-state logs -n 2 --output text shop
	assert_output "Run 20260103T100000Z-cccccc: success
  started   2026-01-03T10:00:00Z
  finished  2026-01-03T10:02:05Z
  duration  2m05s
  records   1,234,567
    orders: 1,234,567
    users: 0

Run 20260102T100000Z-bbbbbb: failure
  started   2026-01-02T10:00:00Z
  finished  2026-01-02T10:02:05Z
  duration  2m05s
  records   7
    orders: 7
    users: 0
  error     tap-shop exited with status 1"
}

@test "logs: none yet, a log that is not JSON, other files and a Python-style log" {
	write_pipeline shop tap-shop
	run -0 --separate-stderr pipe-state logs shop
	assert_output ""
	assert_equal "$stderr" ""
	# -o json: the newest log, an object as the Python tool prints it (none:
	# null); -n K: a list
	run -0 pipe-state logs -o json shop
	assert_output "null"
	run -0 pipe-state logs -n 1 -o json shop
	assert_output "[]"
	run -0 --separate-stderr pipe-state logs -o text shop
	assert_output ""
	assert_equal "$stderr" "pipeline 'shop' has no run logs in $(bucket_url)"
	put_log shop 20260101T100000Z-aaaaaa success 5
	echo '{"pipeline": "shop", "status": "succ' | bucket_put .dataspoc/logs/shop/20260102T100000Z-bbbbbb.json
	echo '{}' | bucket_put .dataspoc/logs/shop/zz-notes.txt
	echo '{}' | bucket_put .dataspoc/logs/shop/sub/20260109T100000Z-dddddd.json
	echo '{}' | bucket_put .dataspoc/logs/shop-other/20260109T100000Z-dddddd.json
	run -0 --separate-stderr pipe-state logs shop
	assert_output "$(compact shop 20260101T100000Z-aaaaaa success 5)"
	run -0 --separate-stderr pipe-state logs -o json shop
	assert_output "$(compact shop 20260101T100000Z-aaaaaa success 5)"
	assert_equal "$stderr" "pipe-state: warning: skipping run log $(bucket_url)/.dataspoc/logs/shop/20260102T100000Z-bbbbbb.json: control character in string"
	# the Python DataSpoc Pipe's logs: a timestamp name, no run_id, a float duration
	write_pipeline legacy tap-shop
	echo '{"pipeline":"legacy","started_at":"2026-02-01T00:00:00","finished_at":"2026-02-01T01:01:00","duration_seconds":3660.4,"status":"success","streams":{},"total_records":0,"error":null}' |
		bucket_put .dataspoc/logs/legacy/2026-02-01T00-00-00.json
	run -0 --separate-stderr pipe-state logs -o text legacy
	assert_output "Run 2026-02-01T00:00:00: success
  started   2026-02-01T00:00:00
  finished  2026-02-01T01:01:00
  duration  1h01m
  records   0"
}

# --- status ---------------------------------------------------------------------

@test "status: every pipeline of the home, a table and JSON" {
	three_logs
	write_pipeline fresh tap-shop
	write_pipeline alpha tap-shop
	put_log alpha 20260104T100000Z-eeeeee success 3
	run -0 --separate-stderr pipe-state status
	assert_equal "$stderr" ""
	assert_output "PIPELINE  LAST RUN              STATUS   DURATION    RECORDS
alpha     2026-01-04T10:00:00Z  success     2m05s          3
fresh     never                 -               -          -
shop      2026-01-03T10:00:00Z  success     2m05s  1,234,567"
	run -0 --separate-stderr pipe-state status -o json
	assert_output '[
  {"name":"alpha","last_run":"2026-01-04T10:00:00Z","status":"success","duration":125,"records":3,"records_read":null,"error":null},
  {"name":"fresh","last_run":null,"status":"no runs","duration":null,"records":null,"records_read":null,"error":null},
  {"name":"shop","last_run":"2026-01-03T10:00:00Z","status":"success","duration":125,"records":1234567,"records_read":null,"error":null}
]'
	run -0 jq -e 'length == 3' <<<"$output"
	run -0 pipe-state status -o json shop fresh
	run -0 jq -c 'map(.name)' <<<"$output"
	assert_output '["shop","fresh"]'
}

@test "status: unreadable pipelines are error rows and exit 1; odd file names are skipped" {
	write_pipeline good tap-shop
	echo 'source: [' >"$HOMEDIR/pipelines/broken.yaml"
	echo 'x' >"$HOMEDIR/pipelines/.hidden.yaml"
	echo 'x' >"$HOMEDIR/pipelines/notes.txt"
	write_pipeline nobucket tap-shop
	echo file >afile
	sed -i "s|^  bucket: .*|  bucket: $BATS_TEST_TMPDIR/afile/x|" "$HOMEDIR/pipelines/nobucket.yaml"
	run -1 --separate-stderr pipe-state status
	assert_output "PIPELINE  LAST RUN  STATUS  DURATION  RECORDS
broken    -         error          -        -
good      never     -              -        -
nobucket  -         error          -        -"
	assert_equal "$(err_line 0)" "pipe-state: warning: skipping '$HOMEDIR/pipelines/.hidden.yaml': not a valid pipeline name"
	assert_regex "$(err_line 1)" "^pipe-state: $HOMEDIR/pipelines/broken.yaml:2:1: "
	assert_regex "$(err_line 2)" "afile/x.*Not a directory\$"
	# the reason in the JSON too (MCP's pipeline_status gives no stderr)
	run -1 --separate-stderr pipe-state status -o json broken
	assert_output '[
  {"name":"broken","last_run":null,"status":"error","duration":null,"records":null,"records_read":null,"error":"'"$HOMEDIR/pipelines/broken.yaml:2:1: did not find expected node content"'"}
]'
	run -1 --separate-stderr pipe-state status -o json nobucket
	run -0 jq -r '.[0] | .status + ": " + .error' <<<"$output"
	assert_regex "$output" "^error: .*afile/x.*Not a directory\$"
	# an unknown pipeline is a usage error, as for logs
	run -2 --separate-stderr pipe-state status ghost
	assert_equal "$stderr" "pipe-state: no pipeline 'ghost' (looked for $HOMEDIR/pipelines/ghost.yaml)"
	rm -r "$HOMEDIR/pipelines"
	run -0 pipe-state status -o json
	assert_output "[]"
}

# --- manifest -------------------------------------------------------------------

@test "manifest: as stored by NAME, -c FILE or -b BUCKET; -o table for people" {
	write_pipeline shop tap-shop
	put_manifest
	bucket_cat .dataspoc/manifest.json >want.json
	run -0 --separate-stderr pipe-state manifest shop
	out_file got.json
	diff -u want.json got.json
	run -0 --separate-stderr pipe-state manifest -c "$HOMEDIR/pipelines/shop.yaml"
	out_file got.json
	diff -u want.json got.json
	run -0 --separate-stderr pipe-state manifest -o json -b "$(bucket_url)"
	out_file got.json
	diff -u want.json got.json
	run -0 --separate-stderr pipe-state manifest --output table -b "$(bucket_url)"
	assert_equal "$stderr" ""
	assert_output "TABLE             ROWS  EXTRACTIONS  LAST EXTRACTION       COLUMNS
legacy/odd           -            -  -                           -
shop/orders  1,235,767            3  2026-01-03T10:02:05Z        3
shop/users          12            1  2026-01-01T10:02:05Z        1"
}

@test "manifest: none in the bucket (an empty one, as the Python tool reads it), not JSON, not an object" {
	write_pipeline shop tap-shop
	run -0 --separate-stderr pipe-state manifest shop
	assert_output '{"version":"1.0","updated_at":null,"tables":{}}'
	assert_equal "$stderr" "no manifest in bucket '$(bucket_url)' (.dataspoc/manifest.json): no pipeline has landed data there yet"
	run -0 --separate-stderr pipe-state manifest -o table shop
	assert_output ""
	assert_equal "$stderr" "no manifest in bucket '$(bucket_url)' (.dataspoc/manifest.json): no pipeline has landed data there yet"
	echo '{"tables": {' | bucket_put .dataspoc/manifest.json
	run -1 --separate-stderr pipe-state manifest -o table shop
	assert_output ""
	assert_equal "$stderr" "pipe-state: $(bucket_url)/.dataspoc/manifest.json: byte 14: unexpected end of input"
	echo '[1]' | bucket_put .dataspoc/manifest.json
	run -1 --separate-stderr pipe-state manifest shop
	assert_equal "$stderr" "pipe-state: $(bucket_url)/.dataspoc/manifest.json: not a JSON object"
}

# --- check ----------------------------------------------------------------------

@test "check: a valid pipeline, and -p KEY prints one setting; the bucket is not touched" {
	write_pipeline shop tap-shop true "compression: gzip"
	printf 'schedule:\n  cron: "*/15 6-18 * jan-jun mon-fri"\n' >>"$HOMEDIR/pipelines/shop.yaml"
	run -0 --separate-stderr pipe-state check shop
	assert_output "pipeline 'shop': ok"
	assert_equal "$stderr" ""
	local k want
	for k in cron bucket path compression incremental tap name file; do
		case $k in
		cron) want="*/15 6-18 * jan-jun mon-fri" ;;
		bucket) want=$(bucket_url) ;;
		path) want=raw ;;
		compression) want=gzip ;;
		incremental) want=true ;;
		tap) want=tap-shop ;;
		name) want=shop ;;
		file) want=$HOMEDIR/pipelines/shop.yaml ;;
		esac
		run -0 --separate-stderr pipe-state check -p "$k" shop
		assert_output "$want"
		assert_equal "$stderr" ""
	done
	write_pipeline plain tap-shop false
	run -0 --separate-stderr pipe-state check -p cron plain
	assert_output ""
	run -0 pipe-state check -p incremental -c "$HOMEDIR/pipelines/plain.yaml"
	assert_output false
	run -2 --separate-stderr pipe-state check -p secret shop
	assert_equal "$stderr" "pipe-state: check -p: unknown key 'secret' (bucket, path, compression, incremental, cron, tap, name, file, shard-split)"
	bucket_untouched
}

@test "check: config errors exit 2 naming the file; invalid cron fields are named" {
	write_pipeline shop tap-shop
	printf 'schedule:\n  cron: "0 0 32 * *"\n' >>"$HOMEDIR/pipelines/shop.yaml"
	run -2 --separate-stderr pipe-state check shop
	assert_output ""
	assert_equal "$stderr" "pipe-state: $HOMEDIR/pipelines/shop.yaml:9:9: schedule.cron '0 0 32 * *': day of month 32 is out of range 1-31"
	run -2 --separate-stderr pipe-state check -p cron shop
	assert_equal "$stderr" "pipe-state: $HOMEDIR/pipelines/shop.yaml:9:9: schedule.cron '0 0 32 * *': day of month 32 is out of range 1-31"
	write_pipeline shop tap-shop
	printf 'schedule:\n  cron: "0 0 * * *; rm -rf /"\n' >>"$HOMEDIR/pipelines/shop.yaml"
	run -2 --separate-stderr pipe-state check shop
	assert_equal "$stderr" "pipe-state: $HOMEDIR/pipelines/shop.yaml:9:9: schedule.cron must be five crontab fields (as in \"0 */2 * * *\") or @hourly, @daily, ..., not '0 0 * * *; rm -rf /'"
	run -2 --separate-stderr pipe-state check ghost
	assert_equal "$stderr" "pipe-state: no pipeline 'ghost' (looked for $HOMEDIR/pipelines/ghost.yaml)"
	bucket_untouched
}

@test "check -b: a bucket checked and resolved as a pipeline's; -b '' is config.yaml's" {
	mkdir sub
	cd sub
	run -0 --separate-stderr pipe-state check -b lake
	assert_output "$BATS_TEST_TMPDIR/sub/lake"
	run -0 pipe-state check -b ../lake
	assert_output "$BATS_TEST_TMPDIR/lake"
	run -0 pipe-state check -b '~/lake'
	assert_output "$HOME/lake"
	run -0 pipe-state check -b s3://b/p
	assert_output "s3://b/p"
	run -2 --separate-stderr pipe-state check -b s3:/mybucket
	assert_equal "$stderr" "pipe-state: destination.bucket 's3:/mybucket' is not a valid URL (expected a directory, file:///abs/dir, s3://bucket[/prefix], gs://bucket[/prefix] or az://container[/prefix])"
	run -2 --separate-stderr pipe-state check -b ''
	assert_equal "$stderr" "pipe-state: no bucket: $HOMEDIR/config.yaml gives no destination.bucket"
	printf 'destination:\n  bucket: dflt\n' >"$HOMEDIR/config.yaml"
	run -0 pipe-state check -b ''
	assert_output "$HOMEDIR/dflt"
	run -2 pipe-state check -b lake -p bucket
	run -2 pipe-state check -b lake shop
	[ ! -e lake ] && [ ! -e "$HOMEDIR/dflt" ]
}

@test "check: the tap's config file must be a readable JSON object" {
	write_pipeline shop tap-shop
	sed -i '/^  tap: /a\  config: ../sources/shop.json' "$HOMEDIR/pipelines/shop.yaml"
	run -2 --separate-stderr pipe-state check shop
	assert_equal "$stderr" "pipe-state: $HOMEDIR/pipelines/shop.yaml:3:11: source.config: cannot read '$HOMEDIR/sources/shop.json': No such file or directory"
	mkdir -p "$HOMEDIR/sources"
	printf '{\n  "host": "db",\n  "port": \n' >"$HOMEDIR/sources/shop.json"
	run -2 --separate-stderr pipe-state check shop
	assert_equal "$stderr" "pipe-state: $HOMEDIR/sources/shop.json:4:1: the tap's config (source.config) is not JSON: unexpected end of input"
	echo '["host"]' >"$HOMEDIR/sources/shop.json"
	run -2 --separate-stderr pipe-state check shop
	assert_equal "$stderr" "pipe-state: $HOMEDIR/sources/shop.json:1:1: the tap's config (source.config) is not a JSON object"
	echo '{"host": "db"}' >"$HOMEDIR/sources/shop.json"
	run -0 --separate-stderr pipe-state check shop
	assert_output "pipeline 'shop': ok"
	assert_equal "$stderr" ""
}

@test "check: warns when a file holding the tap's secrets is readable by others" {
	mkdir -p "$HOMEDIR/sources"
	local f=$HOMEDIR/sources/shop.json
	printf '{"db": {"user": "u", "Password": "x"}, "api-key": "k", "accounts": [{"client_secret": "s"}], "keys": ["id"], "replication_key": "t", "token": ""}\n' >"$f"
	chmod 604 "$f"
	write_pipeline shop tap-shop
	sed -i '/^  tap: /a\  config: ../sources/shop.json' "$HOMEDIR/pipelines/shop.yaml"
	run -0 --separate-stderr pipe-state check shop
	assert_output "pipeline 'shop': ok"
	assert_equal "$stderr" "pipe-state: warning: '$(realpath "$f")' holds secrets (Password, api-key, client_secret) and is readable by other users (mode 0604): chmod 600 '$(realpath "$f")'"
	chmod 600 "$f"
	run -0 --separate-stderr pipe-state check shop
	assert_equal "$stderr" ""
	# an inline config: the pipeline file holds the secret
	write_pipeline inline tap-shop
	sed -i '/^  tap: /a\  config:\n    access_token: abc' "$HOMEDIR/pipelines/inline.yaml"
	chmod 644 "$HOMEDIR/pipelines/inline.yaml"
	run -0 --separate-stderr pipe-state check inline
	assert_equal "$stderr" "pipe-state: warning: '$HOMEDIR/pipelines/inline.yaml' holds secrets (access_token) and is readable by other users (mode 0644): chmod 600 '$HOMEDIR/pipelines/inline.yaml'"
	chmod 600 "$HOMEDIR/pipelines/inline.yaml"
	run -0 --separate-stderr pipe-state check inline
	assert_equal "$stderr" ""
	# -p prints the setting alone
	chmod 644 "$HOMEDIR/pipelines/inline.yaml"
	run -0 --separate-stderr pipe-state check -p tap inline
	assert_equal "$stderr" ""
}

# --- probe ----------------------------------------------------------------------

@test "probe: write, read back, list, delete, conditional create; nothing left behind" {
	write_pipeline shop tap-shop
	echo keep | bucket_put .dataspoc/probe/keep
	run -0 --separate-stderr pipe-state probe shop
	assert_output "write, read back, list, delete: ok
conditional create: honoured"
	assert_equal "$stderr" ""
	run -0 bucket_keys
	assert_output ".dataspoc/probe/keep"
	run -0 --separate-stderr pipe-state probe -b "$(bucket_url)"
	assert_line --index 1 "conditional create: honoured"
	run -0 bucket_keys
	assert_output ".dataspoc/probe/keep"
}

@test "probe: a bucket that cannot be written fails with exit 1 (local)" {
	echo file >afile
	run -1 --separate-stderr pipe-state probe -b "$BATS_TEST_TMPDIR/afile/lake"
	assert_output ""
	assert_regex "$(err_line 0)" "^pipe-state: .*$BATS_TEST_TMPDIR/afile/lake.*: Not a directory\$"
	mkdir lake
	run -0 pipe-state probe -b "$BATS_TEST_TMPDIR/lake"
	run -0 find lake -type f
	assert_output ""
}

# --- validate -------------------------------------------------------------------

# What validate prints for pipeline $1 when every check passes (local bucket).
all_ok() {
	printf '%s: %s\n' "$1" "config: ok" "$1" "tap: ok" "$1" "source: ok" "$1" "bucket: ok (conditional create: honoured)" \
		"$1" "secrets: ok" "$1" "placeholders: ok"
}

@test "validate: one line a check, as dataspoc-pipe validate prints them; every pipeline without NAME" {
	write_pipeline shop cmdtap-ok
	write_pipeline ghost cmdtap-missing
	run -0 --separate-stderr pipe-state validate shop
	assert_equal "$stderr" ""
	assert_output "$(all_ok shop)"
	# a failed check is 1, and the others still run
	run -1 --separate-stderr pipe-state validate
	assert_equal "$stderr" ""
	assert_output "$(all_ok ghost | sed 's/^ghost: tap: ok$/ghost: tap: FAIL: cmdtap-missing not found on PATH — install it or set source.tap/; /^ghost: source: /d')
$(all_ok shop)"
	# -o json, byte for byte: an object a pipeline, the Python tool's keys
	# first; text and table are the lines
	run -1 sh -c 'pipe-state validate -o json ghost shop >got.json'
	expect_file got.json <<-'EOF'
	[
	  {"pipeline":"ghost","bucket_ok":true,"tap_ok":false,"ok":false,"errors":["tap: cmdtap-missing not found on PATH — install it or set source.tap"],"checks":[{"check":"config","status":"ok","message":null},{"check":"tap","status":"fail","message":"cmdtap-missing not found on PATH — install it or set source.tap"},{"check":"bucket","status":"ok","message":"conditional create: honoured"},{"check":"secrets","status":"ok","message":null},{"check":"placeholders","status":"ok","message":null}]},
	  {"pipeline":"shop","bucket_ok":true,"tap_ok":true,"ok":true,"errors":[],"checks":[{"check":"config","status":"ok","message":null},{"check":"tap","status":"ok","message":null},{"check":"source","status":"ok","message":null},{"check":"bucket","status":"ok","message":"conditional create: honoured"},{"check":"secrets","status":"ok","message":null},{"check":"placeholders","status":"ok","message":null}]}
	]
	EOF
	run -0 pipe-state validate -o table shop
	assert_line --index 0 "shop: config: ok"
	run -0 pipe-state validate --output text shop
	assert_line --index 0 "shop: config: ok"
	# the probe leaves nothing behind
	run -0 bucket_keys .dataspoc/probe/
	assert_output ""
}

@test "validate: each failed check gives its own reason; the config's warnings are secrets and placeholders" {
	echo file >afile
	write_pipeline lost cmdtap-missing
	sed -i "s|^  bucket: .*|  bucket: $BATS_TEST_TMPDIR/afile/lake|" "$HOMEDIR/pipelines/lost.yaml"
	mkdir -p "$HOMEDIR/transforms"
	echo '.id |' >"$HOMEDIR/transforms/lost.jq"
	run -1 --separate-stderr pipe-state validate lost
	assert_equal "$stderr" ""
	assert_line --index 0 "lost: config: ok"
	assert_line --index 1 "lost: tap: FAIL: cmdtap-missing not found on PATH — install it or set source.tap"
	assert_line --index 2 --regexp "^lost: transform: FAIL: $HOMEDIR/transforms/lost\.jq: the transform does not compile: syntax error, .* line 1: \.id \|; jq: 1 compile error$"
	assert_line --index 3 "lost: bucket: FAIL: cannot open bucket directory '$BATS_TEST_TMPDIR/afile/lake': Not a directory"
	assert_equal "${#lines[@]}" 6
	# a config that does not load: that line alone
	printf 'source:\n  tap: cmdtap-ok\ndestination: [1]\n' >"$HOMEDIR/pipelines/bad.yaml"
	run -1 --separate-stderr pipe-state validate bad
	assert_equal "$stderr" ""
	assert_output "bad: config: FAIL: $HOMEDIR/pipelines/bad.yaml:3:14: destination must be a mapping"
	# an inline config with a secret, readable by others, and a template's value
	write_pipeline inl cmdtap-ok
	sed -i '/^  tap: /a\  config: {password: hunter2, path: /path/to/data.csv}' "$HOMEDIR/pipelines/inl.yaml"
	chmod 644 "$HOMEDIR/pipelines/inl.yaml"
	run -0 --separate-stderr pipe-state validate inl
	assert_equal "$stderr" ""
	assert_line --index 4 "inl: secrets: WARN: '$HOMEDIR/pipelines/inl.yaml' holds secrets (password) and is readable by other users (mode 0644): chmod 600 '$HOMEDIR/pipelines/inl.yaml'"
	assert_line --index 5 "inl: placeholders: WARN: the tap's config in '$HOMEDIR/pipelines/inl.yaml' still holds placeholders of add's template (.path): fill them in"
	run -0 pipe-state validate -o json inl
	run -0 jq -r '.[0].checks[4:][] | .status + " " + .message' <<<"$output"
	assert_output "warn '$HOMEDIR/pipelines/inl.yaml' holds secrets (password) and is readable by other users (mode 0644): chmod 600 '$HOMEDIR/pipelines/inl.yaml'
warn the tap's config in '$HOMEDIR/pipelines/inl.yaml' still holds placeholders of add's template (.path): fill them in"
}

@test "validate: an unknown pipeline is 2 once every check ran; bad names, formats and none" {
	write_pipeline shop cmdtap-ok
	run -2 --separate-stderr pipe-state validate nope shop
	assert_equal "$stderr" ""
	assert_line --index 0 "nope: config: FAIL: no pipeline 'nope' (looked for $HOMEDIR/pipelines/nope.yaml)"
	assert_line --index 1 "shop: config: ok"
	assert_equal "${#lines[@]}" 7
	# -o json: the Python tool's "error": "not found" beside its keys
	run -2 --separate-stderr pipe-state validate -o json nope
	assert_output '[
  {"pipeline":"nope","bucket_ok":false,"tap_ok":false,"error":"not found","ok":false,"errors":["config: no pipeline '"'nope'"' (looked for '"$HOMEDIR"'/pipelines/nope.yaml)"],"checks":[{"check":"config","status":"fail","message":"no pipeline '"'nope'"' (looked for '"$HOMEDIR"'/pipelines/nope.yaml)"}]}
]'
	rm -rf "$BUCKET_DIR"
	run -2 --separate-stderr pipe-state validate shop 'no/such'
	assert_output ""
	assert_equal "$stderr" "pipe-state: invalid pipeline name 'no/such' (letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64)"
	run -2 --separate-stderr pipe-state validate -o xml shop
	assert_equal "$stderr" "pipe-state: validate: unknown output format 'xml' (use text json)"
	run -2 --separate-stderr pipe-state validate -c "$HOMEDIR/pipelines/shop.yaml"
	assert_equal "$(err_line 0)" "usage: pipe-state get [-f] [-r RUN_ID | -i FILE] NAME | show NAME | set NAME < STATE | clear --force NAME |"
	bucket_untouched
	rm "$HOMEDIR/pipelines/shop.yaml"
	run -0 --separate-stderr pipe-state validate
	assert_output ""
	assert_equal "$stderr" "pipe-state: no pipelines in $HOMEDIR/pipelines (dataspoc-pipe add NAME makes one)"
	run -0 --separate-stderr pipe-state validate -o json
	assert_output "[]"
}

@test "validate: SIGTERM while the tap check discovers: 143, pipe-tap and the tap gone, TMPDIR left empty" {
	local st=0 pid
	write_pipeline disc seltap-py
	sed -i '/^  tap: /a\  streams: [a]' "$HOMEDIR/pipelines/disc.yaml"
	mkdir -p "$FAKE_DIR/seltap-py"
	: >"$FAKE_DIR/seltap-py/discover-block"
	pipe-state validate disc >out 2>err &
	pid=$!
	BG_PIDS="$BG_PIDS $pid"
	wait_for "$FAKE_DIR/seltap-py/discovering"
	kill -s TERM "$pid"
	wait "$pid" || st=$?
	assert_equal "$st" 143
	expect_file out <<<"disc: config: ok"
	expect_file_empty err
	wait_until no_process seltap-py
	wait_until no_process pipe-tap
	run -0 ls -A "$TMPDIR"
	assert_output ""
	[ ! -e "$HOMEDIR/pipelines/disc.catalog.json" ]
}

# --- check-name -----------------------------------------------------------------

@test "file, check-cron, check-format: the driver's rules, said by pipe-state" {
	run -1 --separate-stderr pipe-state file new
	assert_output "$HOMEDIR/pipelines/new.yaml"
	assert_equal "$stderr" ""
	: >"$HOMEDIR/pipelines/old.yml"
	run -0 --separate-stderr pipe-state file old
	assert_output "$HOMEDIR/pipelines/old.yml"
	: >"$HOMEDIR/pipelines/old.yaml"
	run -0 --separate-stderr pipe-state file old
	assert_output "$HOMEDIR/pipelines/old.yaml"
	run -2 --separate-stderr pipe-state file -- ../x
	assert_output ""
	assert_equal "$stderr" "pipe-state: invalid pipeline name '../x' (letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64)"
	run -0 --separate-stderr pipe-state check-cron '*/5 1-3 * jan mon-fri'
	assert_equal "$output$stderr" ""
	run -0 pipe-state check-cron @daily
	run -2 --separate-stderr pipe-state check-cron -- '61 * * * *'
	assert_equal "$stderr" "pipe-state: schedule.cron '61 * * * *': minute 61 is out of range 0-59"
	run -2 --separate-stderr pipe-state check-cron -- 'every day'
	assert_equal "$stderr" "pipe-state: schedule.cron must be five crontab fields (as in \"0 */2 * * *\") or @hourly, @daily, ..., not 'every day'"
	run -0 --separate-stderr pipe-state check-format logs jsonl
	assert_equal "$output$stderr" ""
	run -0 pipe-state check-format status table
	run -2 --separate-stderr pipe-state check-format status jsonl
	assert_equal "$stderr" "pipe-state: status: unknown output format 'jsonl' (use text json)"
	run -2 pipe-state check-format status
	run -2 pipe-state check-cron
	bucket_untouched
}

@test "check-name: 0 for a pipeline name, 2 saying why for anything else (the driver's rule)" {
	local ok64 bad
	ok64=$(printf 'a%.0s' {1..64})
	for ok in shop 9.v2_x-1 "$ok64"; do
		run -0 --separate-stderr pipe-state check-name "$ok"
		assert_output ""
		assert_equal "$stderr" ""
	done
	for bad in "${ok64}b" no/such .hidden _x -x 'a b' '' $'a\tb' 'é'; do
		run -2 --separate-stderr pipe-state check-name -- "$bad"
		assert_output ""
		# (a control byte said as '?', as the loader says it: one line)
		assert_equal "$stderr" "pipe-state: invalid pipeline name '${bad//$'\t'/?}' (letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64)"
	done
	run -2 --separate-stderr pipe-state check-name
	assert_equal "$(err_line 0)" "usage: pipe-state get [-f] [-r RUN_ID | -i FILE] NAME | show NAME | set NAME < STATE | clear --force NAME |"
	run -2 pipe-state check-name a b
	run -2 pipe-state check-name -c "$HOMEDIR/pipelines/a.yaml"
	bucket_untouched
	# the driver asks it: a name of 65 bytes, refused as the driver says it
	run -2 --separate-stderr dataspoc-pipe validate "${ok64}b"
	assert_equal "$stderr" "dataspoc-pipe: validate: invalid pipeline name '${ok64}b'"
}

# --- list -b --------------------------------------------------------------------

@test "list -b BUCKET: the pipelines with a saved state, without a pipeline file" {
	echo '{}' | bucket_put .dataspoc/state/orders/state.json
	echo '{}' | bucket_put .dataspoc/state/users/state.json
	echo '{}' | bucket_put .dataspoc/state/users/lock
	run -0 --separate-stderr pipe-state list -b "$(bucket_url)"
	assert_output "orders
users"
	run -2 --separate-stderr pipe-state list -b "$(bucket_url)" -c x.yaml
	assert_equal "$(err_line 0)" "usage: pipe-state get [-f] [-r RUN_ID | -i FILE] NAME | show NAME | set NAME < STATE | clear --force NAME |"
}

@test "reading a local bucket that does not exist finds nothing and creates nothing" {
	local gone=$BATS_TEST_TMPDIR/no/such/bucket
	printf 'source:\n  tap: tap-shop\ndestination:\n  bucket: %s\n  path: raw\nincremental:\n  enabled: true\n' \
		"$gone" >"$HOMEDIR/pipelines/ghost.yaml"
	run -0 --separate-stderr pipe-state list -b "$gone"
	assert_output ""
	run -0 --separate-stderr pipe-state get ghost
	assert_output "{}"
	run -0 --separate-stderr pipe-state logs ghost
	assert_output ""
	run -0 --separate-stderr pipe-state manifest -b "$gone"
	assert_output '{"version":"1.0","updated_at":null,"tables":{}}'
	run -0 --separate-stderr pipe-state status ghost
	assert_output --partial "ghost"
	[ ! -e "$BATS_TEST_TMPDIR/no" ]
	# the first write makes it
	echo '{"a": 1}' | pipe-state set ghost
	run -0 pipe-state get ghost
	assert_output '{"a":1}'
}
