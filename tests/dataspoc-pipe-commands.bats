#!/usr/bin/env bats
# dataspoc-pipe: add, run --all, status, logs, validate, manifest, schedule,
# help and --version (issue 4's commands).  The bucket is reached only through
# helpers/common.bash's bucket_* functions, except where a test says it is local.

load helpers/common

setup() {
	pipe_setup
	HOMEDIR=$DATASPOC_PIPE_HOME
	# The driver as the crontab entries name it: its own path, links resolved.
	SELF=$(readlink -f "$PIPE_BIN/dataspoc-pipe")
	# A fake crontab(1): the table lives in $FAKE_CRONTAB; every write is
	# counted in $FAKE_CRONTAB.writes; $FAKE_CRONTAB.broken makes -l fail.
	export FAKE_CRONTAB=$BATS_TEST_TMPDIR/crontab
	cat >"$BATS_TEST_TMPDIR/bin/crontab" <<-'EOF'
	#!/bin/sh
	f=$FAKE_CRONTAB
	case $* in
	-l)
		[ ! -e "$f.broken" ] || { echo "crontab: cannot connect to cron" >&2; exit 1; }
		[ -e "$f" ] || { echo "no crontab for tester" >&2; exit 1; }
		cat "$f" ;;
	-) cat >"$f" && echo write >>"$f.writes" ;;
	*) echo "fake crontab: unexpected arguments: $*" >&2; exit 2 ;;
	esac
	EOF
	chmod +x "$BATS_TEST_TMPDIR/bin/crontab"
}

teardown() {
	pipe_teardown
}

out_file() {
	printf '%s\n' "$output" >"$1"
}

# The newest run log of pipeline $1, as stored.
last_log() {
	bucket_cat ".dataspoc/logs/$1/$(run_ids "$1" | tail -n 1).json"
}

# A duration as status and logs print it (runs here take under a minute).
secs() {
	printf '%ss\n' "$1"
}

add_cron() {	# NAME CRON
	printf 'schedule:\n  cron: "%s"\n' "$2" >>"$DATASPOC_PIPE_HOME/pipelines/$1.yaml"
}

# --- help and version -------------------------------------------------------------

@test "--version prints the version, help names every command" {
	run -0 --separate-stderr dataspoc-pipe --version
	assert_output "dataspoc-pipe 0.1.0"
	# -v and -V, as the Python tool and other CLIs spell it
	run -0 --separate-stderr dataspoc-pipe -v
	assert_output "dataspoc-pipe 0.1.0"
	run -0 --separate-stderr dataspoc-pipe -V
	assert_output "dataspoc-pipe 0.1.0"
	run -0 --separate-stderr dataspoc-pipe help
	for c in "init  " "add NAME  " "run NAME  " "run --all  " "compact NAME  " "status  " "logs NAME  " \
		"validate [NAME]  " "manifest BUCKET  " "schedule  " "mcp  " "help [COMMAND]  " "version  "; do
		assert_line --partial "  $c"
	done
	assert_equal "$stderr" ""
}

@test "help COMMAND and COMMAND -h print the same help for every command" {
	local c
	for c in init add run compact status logs validate manifest schedule mcp; do
		run -0 --separate-stderr dataspoc-pipe help "$c"
		assert_line --index 0 --regexp "^usage: dataspoc-pipe $c( |\$)"
		assert_equal "$stderr" ""
		local want=$output
		run -0 --separate-stderr dataspoc-pipe "$c" -h
		assert_equal "$output" "$want"
		run -0 --separate-stderr dataspoc-pipe "$c" --help
		assert_equal "$output" "$want"
	done
	# what --full does to the tables, not only to the state
	run -0 dataspoc-pipe help run
	assert_output --partial "so the table holds a second copy of every row it had, unless the tap"
	assert_output --partial "changed, when the run's files, in the new folders, replace those in the old;"
	assert_output --partial "to start a table anew otherwise, remove its folder first. Upsert"
	# every form of a bucket, az:// among them, where a bucket is asked for
	run -0 dataspoc-pipe help add
	assert_output --partial "s3://bucket[/prefix], gs://bucket[/prefix] or az://container[/prefix];"
	run -0 dataspoc-pipe help manifest
	assert_output --partial "gs://bucket[/prefix] or az://container[/prefix], the scheme in lower case;"
	run -0 dataspoc-pipe help help
	assert_line --index 0 "usage: dataspoc-pipe help [COMMAND]"
	# every COMMAND help help names is one: help COMMAND and COMMAND -h answer
	# (version too, as git's: help help listed it, and it was unknown)
	assert_line "Help on dataspoc-pipe or one of its commands: init, add, run, commit,"
	assert_line "compact, status, logs, validate, manifest, schedule, export, mcp, help,"
	assert_line "version."
	run -0 dataspoc-pipe help version
	assert_line --index 0 "usage: dataspoc-pipe version | --version | -v | -V"
	run -0 --separate-stderr dataspoc-pipe version
	assert_output "dataspoc-pipe 0.1.0"
	assert_equal "$stderr" ""
	run -0 --separate-stderr dataspoc-pipe version -h
	assert_line --index 0 "usage: dataspoc-pipe version | --version | -v | -V"
	run -2 --separate-stderr dataspoc-pipe version now
	assert_stderr "dataspoc-pipe: version: unexpected argument 'now'
usage: dataspoc-pipe version | --version | -v | -V"
	run -2 --separate-stderr dataspoc-pipe help nothing
	assert_equal "$stderr" "dataspoc-pipe: help: no command 'nothing'"
	run -2 --separate-stderr dataspoc-pipe help run add
	assert_stderr "dataspoc-pipe: help: unexpected argument 'add'
usage: dataspoc-pipe help [COMMAND]"
}

@test "mcp serves the MCP server (pipe-mcp) on stdin and stdout; --read-only leaves run_pipeline out" {
	local init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
	local list='{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
	run -0 --separate-stderr sh -c 'printf "%s\n%s\n" "$1" "$2" | dataspoc-pipe mcp' sh "$init" "$list"
	[ "${#lines[@]}" -eq 2 ]
	assert_equal "$(jq -r .result.protocolVersion <<<"${lines[0]}")" "2025-06-18"
	assert_equal "$(jq -r '[.result.tools[].name] | sort | join(" ")' <<<"${lines[1]}")" \
		"list_pipelines pipeline_config pipeline_logs pipeline_status run_pipeline show_manifest validate_pipeline"
	run -0 --separate-stderr sh -c 'printf "%s\n%s\n" "$1" "$2" | dataspoc-pipe mcp --read-only' sh "$init" "$list"
	assert_equal "$(jq -r '[.result.tools[].name] | index("run_pipeline")' <<<"${lines[1]}")" "null"
	run -2 --separate-stderr dataspoc-pipe mcp --bogus
	assert_equal "$stderr" "dataspoc-pipe: mcp: unexpected argument '--bogus'
usage: dataspoc-pipe mcp [--read-only]"
}

# --- add --------------------------------------------------------------------------

@test "add --tap parquet and --tap google-sheets-public: the built-ins' templates" {
	run -0 --separate-stderr dataspoc-pipe add --tap parquet --bucket "$(bucket_url)" --yes silver
	assert_line --index 1 "Created $HOMEDIR/sources/silver.json: a template for parquet, fill in its values"
	run -0 jq -r 'keys | join(" ")' "$HOMEDIR/sources/silver.json"
	assert_output --partial "path"
	run -0 --separate-stderr dataspoc-pipe add --tap google-sheets-public --bucket "$(bucket_url)" --yes sheet
	assert_line --index 1 "Created $HOMEDIR/sources/sheet.json: a template for google-sheets-public, fill in its values"
}

@test "add with flags writes the pipeline and a private config template for a known tap" {
	run -0 --separate-stderr dataspoc-pipe add --tap tap-postgres --bucket "$(bucket_url)" \
		--path landing --compression gzip --no-incremental --cron "0 */2 * * *" --yes pg
	assert_equal "$stderr" ""
	assert_equal "$output" "Created $HOMEDIR/pipelines/pg.yaml
Created $HOMEDIR/sources/pg.json: a template for tap-postgres, fill in its values
Next: dataspoc-pipe validate pg && dataspoc-pipe run pg"
	cat >want.yaml <<-EOF
	# written by dataspoc-pipe add
	source:
	  tap: 'tap-postgres'
	  config: ../sources/pg.json
	destination:
	  bucket: '$(bucket_url)'
	  path: 'landing'
	  compression: gzip
	incremental:
	  enabled: false
	schedule:
	  cron: '0 */2 * * *'
	EOF
	diff -u want.yaml "$HOMEDIR/pipelines/pg.yaml"
	cat >want.json <<-'EOF'
	{
	  "host": "localhost",
	  "port": 5432,
	  "user": "postgres",
	  "password": "CHANGE_ME",
	  "dbname": "postgres",
	  "filter_schemas": "public"
	}
	EOF
	diff -u want.json "$HOMEDIR/sources/pg.json"
	run -0 stat -c %a "$HOMEDIR/sources/pg.json" "$HOMEDIR/pipelines/pg.yaml"
	assert_output "600
644"
	run -0 pipe-state check -p cron pg
	assert_output "0 */2 * * *"
	run -0 pipe-state check -p compression pg
	assert_output "gzip"
	run -0 ls -A "$HOMEDIR/pipelines"
	assert_output "pg.yaml"
}

@test "add: every known tap gets a template that is a JSON object" {
	local t
	for t in tap-postgres tap-mysql tap-csv tap-github dataspoc-tap-csv; do
		run -0 dataspoc-pipe add --tap "$t" --bucket "$(bucket_url)" --yes "p-$t"
		assert_line "Created $HOMEDIR/sources/p-$t.json: a template for $t, fill in its values"
		run -0 jq -r type "$HOMEDIR/sources/p-$t.json"
		assert_output object
	done
	run -0 jq -r .files[0].entity "$HOMEDIR/sources/p-tap-csv.json"
	assert_output my_table
	run -0 jq -r .access_token "$HOMEDIR/sources/p-tap-github.json"
	assert_output CHANGE_ME
}

@test "add asks on stderr, reads stdin, shows an unknown tap's --about and asks again after a bad answer" {
	local url
	url=$(bucket_url)
	# a bad bucket, compression, y/n and cron answer each asked again, the
	# other answers kept; Enter for incremental takes the Python tool's "n"
	printf '%s\n' cmdtap-ok "" "s3:/mybucket" "$url" "" bogus snappy maybe "" "61 * * * *" "@daily" >answers
	run -0 --separate-stderr dataspoc-pipe add shop <answers
	assert_equal "$output" "Created $HOMEDIR/pipelines/shop.yaml
Created $HOMEDIR/sources/shop.json: an empty config, fill in what cmdtap-ok needs
Next: dataspoc-pipe validate shop && dataspoc-pipe run shop"
	assert_equal "$stderr" "Tap (a Singer tap command, e.g. tap-postgres): dataspoc-pipe: cmdtap-ok --about says:
  | {\"name\": \"cmdtap-ok\", \"capabilities\": [\"state\"], \"settings\": [{\"name\": \"api_url\"}]}
Tap config file [$HOMEDIR/sources/shop.json]: Bucket (a directory, file:///abs/dir, s3://bucket[/prefix], gs://bucket[/prefix] or az://container[/prefix]): dataspoc-pipe: add: destination.bucket 's3:/mybucket' is not a valid URL (expected a directory, file:///abs/dir, s3://bucket[/prefix], gs://bucket[/prefix] or az://container[/prefix])
Bucket (a directory, file:///abs/dir, s3://bucket[/prefix], gs://bucket[/prefix] or az://container[/prefix]): Base path in the bucket [raw]: Compression (zstd, snappy, gzip, none) [zstd]: dataspoc-pipe: add: compression must be zstd, snappy, gzip or none, not 'bogus'
Compression (zstd, snappy, gzip, none) [zstd]: Incremental extraction (y/n) [n]: dataspoc-pipe: add: answer y or n
Incremental extraction (y/n) [n]: Cron schedule (e.g. 0 */2 * * *; empty for none): dataspoc-pipe: add: schedule.cron '61 * * * *': minute 61 is out of range 0-59
Cron schedule (e.g. 0 */2 * * *; empty for none):"
	cat >want.yaml <<-EOF
	# written by dataspoc-pipe add
	source:
	  tap: 'cmdtap-ok'
	  config: ../sources/shop.json
	destination:
	  bucket: '$url'
	  path: 'raw'
	  compression: snappy
	incremental:
	  enabled: false
	schedule:
	  cron: '@daily'
	EOF
	diff -u want.yaml "$HOMEDIR/pipelines/shop.yaml"
	run -0 cat "$HOMEDIR/sources/shop.json"
	assert_output "{}"
	# the pipeline it wrote runs
	run -0 --separate-stderr dataspoc-pipe run shop
	assert_line --index 0 "Running: shop"
}

@test "add: a tap not installed is said; the streams of a tap that takes --properties are asked, listing what discovery offers" {
	run -0 --separate-stderr dataspoc-pipe add --tap tap-github --bucket "$(bucket_url)" --yes gh
	assert_equal "$stderr" "dataspoc-pipe: add: warning: tap 'tap-github' is not installed (not found on PATH): install it before the first run (pipx install tap-github), or give its full path"
	echo '{"host": "db"}' >pg.json
	# --yes: says what to write
	run -0 --separate-stderr dataspoc-pipe add --tap seltap-py --config pg.json --bucket "$(bucket_url)" --yes p1
	assert_equal "$stderr" "dataspoc-pipe: add: seltap-py extracts only the streams it is told: name them in source.streams of $HOMEDIR/pipelines/p1.yaml (its discovery offers: a, b)"
	# the wizard asks, and writes source.streams
	printf '%s\n' "b" >answers
	run -0 --separate-stderr dataspoc-pipe add --tap seltap-py --config pg.json --bucket "$(bucket_url)" \
		--path raw --compression zstd --no-incremental --cron '' p2 <answers
	assert_equal "$output" "Created $HOMEDIR/pipelines/p2.yaml
Streams: 'b'
Next: dataspoc-pipe validate p2 && dataspoc-pipe run p2"
	assert_equal "$stderr" "Streams to extract (comma-separated; discovery offers: a, b):"
	run -0 sed -n 2,5p "$HOMEDIR/pipelines/p2.yaml"
	assert_output "source:
  tap: 'seltap-py'
  streams: ['b']
  config: '$PWD/pg.json'"
	run -0 stat -c %a "$HOMEDIR/pipelines/p2.yaml"
	assert_output 644
	run -0 --separate-stderr dataspoc-pipe run p2
	assert_line "  b: 1"
}

@test "add keeps an existing sources/NAME.json, takes --config paths and makes a relative bucket absolute" {
	mkdir -p "$HOMEDIR/sources" conf
	echo '{"api_url": "x"}' >"$HOMEDIR/sources/keep.json"
	run -0 --separate-stderr dataspoc-pipe add --tap tap-github --bucket lake --yes keep
	assert_equal "$output" "Created $HOMEDIR/pipelines/keep.yaml
Next: dataspoc-pipe validate keep && dataspoc-pipe run keep"
	run -0 cat "$HOMEDIR/sources/keep.json"
	assert_output '{"api_url": "x"}'
	run -0 pipe-state check -p bucket keep
	assert_output "$BATS_TEST_TMPDIR/lake"

	echo '{}' >conf/other.json
	run -0 dataspoc-pipe add --tap=cmdtap-ok --config=conf/other.json --bucket="$(bucket_url)" --yes other
	run -0 grep '^  config:' "$HOMEDIR/pipelines/other.yaml"
	assert_output "  config: '$BATS_TEST_TMPDIR/conf/other.json'"
	[ ! -e "$HOMEDIR/sources/other.json" ]
}

@test "add: config.yaml's bucket is the default, left to config.yaml; a pipeline needs no destination: then" {
	printf 'destination:\n  bucket: lake\n  format: jsonl\n' >"$HOMEDIR/config.yaml"
	run -0 dataspoc-pipe add --tap cmdtap-ok --path p --yes dflt
	run -1 grep '^  bucket:' "$HOMEDIR/pipelines/dflt.yaml"
	# config.yaml's relative bucket: relative to config.yaml's folder
	run -0 pipe-state check -p bucket dflt
	assert_output "$HOMEDIR/lake"
	printf '%s\n' cmdtap-ok "" "" "" "" "" "" >answers
	run -0 --separate-stderr dataspoc-pipe add asked <answers
	assert_line --index 0 "Created $HOMEDIR/pipelines/asked.yaml"
	assert_equal "$(printf '%s\n' "$stderr" | grep -o -F "Bucket (a directory, file:///abs/dir, s3://bucket[/prefix], gs://bucket[/prefix] or az://container[/prefix]) [$HOMEDIR/lake]: ")" \
		"Bucket (a directory, file:///abs/dir, s3://bucket[/prefix], gs://bucket[/prefix] or az://container[/prefix]) [$HOMEDIR/lake]: "
	run -1 grep '^  bucket:' "$HOMEDIR/pipelines/asked.yaml"
	# no destination: at all
	printf 'source:\n  tap: cmdtap-ok\n' >"$HOMEDIR/pipelines/bare.yaml"
	run -0 --separate-stderr dataspoc-pipe validate bare
	assert_line --index 0 "bare: config: ok"
	run -0 --separate-stderr dataspoc-pipe run bare
	run -0 ls "$HOMEDIR/lake/raw/cmdok/items"
}

@test "add refuses to overwrite an existing pipeline" {
	write_pipeline shop cmdtap-ok
	cp "$HOMEDIR/pipelines/shop.yaml" before.yaml
	run -1 --separate-stderr dataspoc-pipe add --tap tap-postgres --bucket "$(bucket_url)" --yes shop
	assert_equal "$output" ""
	assert_equal "$stderr" "dataspoc-pipe: add: pipeline 'shop' already exists: $HOMEDIR/pipelines/shop.yaml (remove it first, or choose another name)"
	diff -u before.yaml "$HOMEDIR/pipelines/shop.yaml"
	[ ! -e "$HOMEDIR/sources/shop.json" ]
	# nor a NAME.yml
	mv "$HOMEDIR/pipelines/shop.yaml" "$HOMEDIR/pipelines/shop.yml"
	run -1 --separate-stderr dataspoc-pipe add shop </dev/null
	assert_equal "$stderr" "dataspoc-pipe: add: pipeline 'shop' already exists: $HOMEDIR/pipelines/shop.yml (remove it first, or choose another name)"
	run -0 ls -A "$HOMEDIR/pipelines"
	assert_output "shop.yml"
}

@test "add removes what it wrote when the result is not valid" {
	# a bad --cron: said before anything is written
	run -2 --separate-stderr dataspoc-pipe add --tap tap-postgres --bucket "$(bucket_url)" --cron "61 * * * *" --yes db
	assert_equal "$output" ""
	assert_equal "$stderr" "dataspoc-pipe: add: schedule.cron '61 * * * *': minute 61 is out of range 0-59"
	run -0 ls -A "$HOMEDIR/pipelines" "$HOMEDIR/sources"
	assert_output "$HOMEDIR/pipelines:

$HOMEDIR/sources:"
	# a tap config file that is not there: the reason, not the removed file
	run -2 --separate-stderr dataspoc-pipe add --tap cmdtap-ok --config nowhere.json --bucket "$(bucket_url)" --yes db
	assert_equal "$stderr" "dataspoc-pipe: add: pipeline 'db' not created: source.config: cannot read '$BATS_TEST_TMPDIR/nowhere.json': No such file or directory"
	[ ! -e "$HOMEDIR/pipelines/db.yaml" ]
}

@test "add: usage errors and missing answers exit 2 and write nothing" {
	local add_usage="usage: dataspoc-pipe add [options] NAME
options: [--tap TAP] [--config FILE] [--bucket URL] [--path PATH] [--compression C]
         [--incremental|--no-incremental] [--cron EXPR] [-y|--yes]"
	run -2 --separate-stderr dataspoc-pipe add --bucket "$(bucket_url)" --yes shop
	assert_equal "$stderr" "dataspoc-pipe: add: --tap is needed with --yes"
	run -2 --separate-stderr dataspoc-pipe add --tap tap-postgres --bucket "$(bucket_url)" --compression lz4 --yes shop
	assert_equal "$stderr" "dataspoc-pipe: add: compression must be zstd, snappy, gzip or none, not 'lz4'"
	# no bucket, and no config.yaml to give one: nothing was written to cite
	run -2 --separate-stderr dataspoc-pipe add --tap tap-postgres --yes nobucket
	assert_equal "$stderr" "dataspoc-pipe: add: --bucket is required ($HOMEDIR/config.yaml gives no destination.bucket)"
	# s3: with one slash is refused as it is in a pipeline file, not made a folder
	run -2 --separate-stderr dataspoc-pipe add --tap dataspoc-tap-csv --bucket s3:/mybucket --yes t5
	assert_equal "$stderr" "dataspoc-pipe: add: destination.bucket 's3:/mybucket' is not a valid URL (expected a directory, file:///abs/dir, s3://bucket[/prefix], gs://bucket[/prefix] or az://container[/prefix])"
	[ ! -e s3: ]
	run -2 --separate-stderr dataspoc-pipe add --yes "bad name"
	assert_equal "$stderr" "dataspoc-pipe: add: invalid pipeline name 'bad name' (letters, digits, '.', '_', '-'; at most 64; starting with a letter or digit)"
	run -2 --separate-stderr dataspoc-pipe add --tap
	assert_stderr "dataspoc-pipe: add: option '--tap' needs a value
$add_usage"
	run -2 --separate-stderr dataspoc-pipe add --frob shop
	assert_stderr "dataspoc-pipe: add: unknown option '--frob'
$add_usage"
	run -2 --separate-stderr dataspoc-pipe add
	assert_stderr "dataspoc-pipe: add: a pipeline NAME is required
$add_usage"
	run -2 --separate-stderr dataspoc-pipe add one two
	assert_stderr "dataspoc-pipe: add: unexpected argument 'two'
$add_usage"
	printf 'cmdtap-ok\n\n' >answers
	run -2 --separate-stderr dataspoc-pipe add shop <answers
	assert_equal "$output" ""
	assert_equal "${stderr_lines[3]}" "dataspoc-pipe: add: no answer for 'Bucket (a directory, file:///abs/dir, s3://bucket[/prefix], gs://bucket[/prefix] or az://container[/prefix])' (end of input)"
	run -0 ls -A "$HOMEDIR/pipelines"
	assert_output ""
}

# --- run --all --------------------------------------------------------------------

@test "run --all -j 2: two at a time, each output kept together, a summary, exit 1 when one failed" {
	write_pipeline a-pair cmdtap-pair
	write_pipeline b-pair cmdtap-pair
	write_pipeline c-fail cmdtap-fail
	# cmdtap-pair succeeds only when both run at once: -j 2 must start them together
	run -1 --separate-stderr dataspoc-pipe run --all -j 2
	assert_equal "${#lines[@]}" 9
	assert_line --index 8 "Summary: 2 success, 1 failure(s)"
	# each pipeline's lines together, in the order the pipelines ended
	out_file got
	awk '/^Running: /{ if (b != "") print b; b = $0; next }
		/^Summary: /{ print b; b = ""; next }
		{ b = b "|" $0 }' got | LC_ALL=C sort >blocks
	cat >want <<-'EOF'
	Running: a-pair|Done! 1 record in 1 stream(s)|  pairs: 1
	Running: b-pair|Done! 1 record in 1 stream(s)|  pairs: 1
	Running: c-fail|Records: 0 landed, 1 read
	EOF
	diff -u want blocks
	# stderr: c-fail's own lines together, then the failed list
	assert_equal "$(printf '%s\n' "$stderr" | tail -n 1)" "dataspoc-pipe: run --all: failed: c-fail"
	printf '%s\n' "$stderr" | grep -A2 -x "dataspoc-pipe: the tap's last words:" >fail.err
	cat >want.err <<-'EOF'
	dataspoc-pipe: the tap's last words:
	  | cmdtap-fail: the source went away
	dataspoc-pipe: run 'c-fail' failed: cmdtap-fail exited with status 1
	EOF
	diff -u want.err fail.err
	# what landed: the pairs, and c-fail's failure in its run log
	run -0 run_ids a-pair
	run -0 bucket_cat ".dataspoc/logs/c-fail/$(run_ids c-fail).json"
	run -0 jq -r .status <<<"$output"
	assert_output failure
}

@test "run --all runs one at a time by default, in name order" {
	write_pipeline one cmdtap-ok
	write_pipeline two cmdtap-ok
	write_pipeline three cmdtap-fail
	# (bats trims $stderr: keep it in a file)
	run -1 sh -c 'dataspoc-pipe run --all 2>run.err'
	assert_equal "$output" "Running: one
Done! 3 records in 1 stream(s)
  items: 3
Running: three
Records: 0 landed, 1 read
Running: two
Done! 3 records in 1 stream(s)
  items: 3
Summary: 2 success, 1 failure(s)"
	assert_equal "$(head -n 1 run.err)" "  items: 3 records..."
	assert_equal "$(tail -n 1 run.err)" "dataspoc-pipe: run --all: failed: three"
	# one that fails its checks, before its tap starts, has its header too
	write_pipeline three no-such-tap-here
	run -1 --separate-stderr dataspoc-pipe run --all
	assert_equal "$output" "Running: one
  Incremental mode (using previous checkpoint)
Done! 3 records in 1 stream(s)
  items: 3
Running: three
Running: two
  Incremental mode (using previous checkpoint)
Done! 3 records in 1 stream(s)
  items: 3
Summary: 2 success, 1 failure(s)"
	rm "$HOMEDIR/pipelines/three.yaml"
	run -0 --separate-stderr dataspoc-pipe run --all --full -j 3
	assert_line --index 0 --regexp '^Running: (one|two)$'
	assert_line "  Full extraction (saved state ignored)"
	assert_line --index -1 "Summary: 2 success, 0 failure(s)"
}

@test "run _ --all: the Python tool's placeholder NAME runs every pipeline" {
	write_pipeline one cmdtap-ok
	write_pipeline two cmdtap-ok
	run -0 --separate-stderr dataspoc-pipe run _ --all
	assert_line --index 0 "Running: one"
	assert_line --index -1 "Summary: 2 success, 0 failure(s)"
	run -0 --separate-stderr dataspoc-pipe run --all _
	assert_line --index -1 "Summary: 2 success, 0 failure(s)"
}

@test "run --all: SIGTERM stops starting pipelines and ends the running ones cleanly" {
	use_tap tap-a
	use_tap tap-b
	local t
	for t in tap-a tap-b; do
		echo '{"type":"RECORD","stream":"s","record":{"i":1}}' >"$FAKE_DIR/$t/out"
		: >"$FAKE_DIR/$t/block"
	done
	write_pipeline a tap-a
	write_pipeline b tap-b
	write_pipeline c cmdtap-ok
	dataspoc-pipe run --all -j 2 >out 2>err &
	local pid=$!
	BG_PIDS=$pid
	wait_for "$FAKE_DIR/tap-a/ready"
	wait_for "$FAKE_DIR/tap-b/ready"
	kill -s TERM "$pid"
	wait_until dead "$pid"
	local rc=0
	wait "$pid" || rc=$?
	assert_equal "$rc" 143
	run -0 tail -n 1 out
	assert_output "Summary: 0 success, 2 failure(s)"
	run -0 sort out
	assert_output "Running: a
Running: b
Summary: 0 success, 2 failure(s)"
	run -0 tail -n 2 err
	assert_output "dataspoc-pipe: run --all: failed: a b
dataspoc-pipe: run --all: interrupted by SIGTERM, not started: c"
	run -0 grep -c "^dataspoc-pipe: run '[ab]' failed: interrupted by SIGTERM\$" err
	assert_output 2
	# both aborted cleanly: a failure log each, no data, no lock; c never ran
	run -0 bucket_cat ".dataspoc/logs/a/$(run_ids a).json"
	run -0 jq -r '.status + " " + .error' <<<"$output"
	assert_output "failure interrupted by SIGTERM"
	run -0 run_ids b
	assert_equal "${#lines[@]}" 1
	run -0 run_ids c
	assert_output ""
	run -0 bucket_files
	assert_output ""
	run -1 bucket_exists .dataspoc/state/a/lock
	wait_until no_process tap-a
	wait_until no_process tap-b
}

@test "run --all: no pipelines, and usage errors" {
	run -0 --separate-stderr dataspoc-pipe run --all
	assert_output "Summary: 0 success, 0 failure(s)"
	assert_equal "$stderr" "dataspoc-pipe: run --all: no pipelines in $HOMEDIR/pipelines (dataspoc-pipe add NAME makes one)"
	write_pipeline one cmdtap-ok
	run -2 dataspoc-pipe run --all -j 0
	assert_line --index 0 "dataspoc-pipe: run: -j wants a number of pipelines at a time (1 or more), not '0'"
	assert_line --index 1 "usage: dataspoc-pipe run [--full] [-v] NAME"
	run -2 dataspoc-pipe run --all -j two
	assert_line --index 0 "dataspoc-pipe: run: -j wants a number of pipelines at a time (1 or more), not 'two'"
	run -2 dataspoc-pipe run --all one
	assert_line --index 0 "dataspoc-pipe: run: --all runs every pipeline: give no NAME or -c"
	run -2 dataspoc-pipe run -j 2 one
	assert_line --index 0 "dataspoc-pipe: run: -j goes with --all"
	run -0 run_ids one
	assert_output ""
}

# --- status -----------------------------------------------------------------------

@test "status: a table and JSON from each pipeline's newest run log; never run shows never (JSON: the Python tool's \"no runs\")" {
	write_pipeline alpha cmdtap-ok
	write_pipeline fails cmdtap-fail
	write_pipeline newbie cmdtap-ok
	run -0 dataspoc-pipe run alpha
	run -0 dataspoc-pipe run alpha
	# a failed run landed nothing; it read one record (#29 item 5)
	run -1 --separate-stderr dataspoc-pipe run fails
	assert_output "Running: fails
Records: 0 landed, 1 read"
	last_log alpha >alpha.json
	last_log fails >fails.json
	run -0 jq -r .run_id alpha.json
	assert_equal "$output" "$(run_ids alpha | tail -n 1)"

	run -0 --separate-stderr dataspoc-pipe status
	assert_equal "$stderr" ""
	{
		printf '%-8s  %-20s  %-7s  %8s  %16s\n' PIPELINE "LAST RUN" STATUS DURATION RECORDS
		printf '%-8s  %-20s  %-7s  %8s  %16s\n' alpha "$(jq -r .started_at alpha.json)" success \
			"$(secs "$(jq -r .duration_seconds alpha.json)")" 3
		printf '%-8s  %-20s  %-7s  %8s  %16s\n' fails "$(jq -r .started_at fails.json)" failure \
			"$(secs "$(jq -r .duration_seconds fails.json)")" "0 landed, 1 read"
		printf '%-8s  %-20s  %-7s  %8s  %16s\n' newbie never - - -
	} >want
	out_file got
	diff -u want got

	run -0 --separate-stderr dataspoc-pipe status --output json
	out_file got.json
	jq -c . got.json >got.compact
	jq -cn --slurpfile a alpha.json --slurpfile f fails.json '[
		{name: "alpha", last_run: $a[0].started_at, status: "success", duration: $a[0].duration_seconds, records: 3, records_read: null, error: null},
		{name: "fails", last_run: $f[0].started_at, status: "failure", duration: $f[0].duration_seconds, records: 0, records_read: 1, error: "cmdtap-fail exited with status 1"},
		{name: "newbie", last_run: null, status: "no runs", duration: null, records: null, records_read: null, error: null}]' >want.compact
	diff -u want.compact got.compact
	# logs: the same words
	run -0 dataspoc-pipe logs -n 1 fails
	assert_line --index 4 "  records   0 landed, 1 read"
	assert_line --index 5 "    items: 0 landed, 1 read"
	jq -c '[.total_records, .records_read, .streams]' fails.json >counts.got
	expect_file counts.got <<<'[0,1,{"items":{"records":0,"records_read":1}}]'
	# names given: only those, in that order
	run -0 dataspoc-pipe status -o json newbie alpha
	run -0 jq -r '.[].name' <<<"$output"
	assert_output "newbie
alpha"
}

@test "status: a pipeline that cannot be read is an error row and exit 1; bad usage exits 2" {
	write_pipeline alpha cmdtap-ok
	printf 'source:\n  tap: cmdtap-ok\n  tapp: 1\n' >"$HOMEDIR/pipelines/broken.yaml"
	run -1 --separate-stderr dataspoc-pipe status
	assert_equal "$output" "PIPELINE  LAST RUN  STATUS  DURATION  RECORDS
alpha     never     -              -        -
broken    -         error          -        -"
	assert_equal "$stderr" "dataspoc-pipe: $HOMEDIR/pipelines/broken.yaml:3:3: unknown key 'tapp' in source: did you mean 'tap'? (expected one of: tap, config, streams, catalog, metadata, catalog_flag)"
	run -1 --separate-stderr dataspoc-pipe status --output=json
	run -0 jq -c '.[1]' <<<"$output"
	# the reason, for JSON readers (MCP's pipeline_status), not only on stderr
	assert_output '{"name":"broken","last_run":null,"status":"error","duration":null,"records":null,"records_read":null,"error":"'"$HOMEDIR/pipelines/broken.yaml:3:3: unknown key 'tapp' in source: did you mean 'tap'? (expected one of: tap, config, streams, catalog, metadata, catalog_flag)"'"}'
	# text is every command's human format; table, status's old name, still works
	local human
	run -1 --separate-stderr dataspoc-pipe status
	human=$output
	run -1 --separate-stderr dataspoc-pipe status --output text
	assert_equal "$output" "$human"
	run -1 --separate-stderr dataspoc-pipe status --output table
	assert_equal "$output" "$human"
	run -2 --separate-stderr dataspoc-pipe status --output yaml
	assert_equal "$stderr" "dataspoc-pipe: status: unknown output format 'yaml' (use text json)"
	run -2 dataspoc-pipe status --frob
	assert_line --index 0 "dataspoc-pipe: status: unknown option '--frob'"
	# an unknown pipeline: 2, as for run and logs
	run -2 --separate-stderr dataspoc-pipe status alpha nope
	assert_equal "$stderr" "dataspoc-pipe: no pipeline 'nope' (looked for $HOMEDIR/pipelines/nope.yaml)"
	run -2 --separate-stderr dataspoc-pipe status --output json nope
	run -2 --separate-stderr dataspoc-pipe run nope
	run -2 --separate-stderr dataspoc-pipe logs nope
}

# --- logs -------------------------------------------------------------------------

@test "logs: the last run log for people, -n K newest first, --output json" {
	write_pipeline alpha cmdtap-ok
	run -0 dataspoc-pipe run alpha
	run -0 dataspoc-pipe run alpha
	run -0 dataspoc-pipe run alpha
	last_log alpha >last.json
	run -0 --separate-stderr dataspoc-pipe logs alpha
	assert_equal "$stderr" ""
	assert_equal "$output" "Run $(jq -r .run_id last.json): success
  started   $(jq -r .started_at last.json)
  finished  $(jq -r .finished_at last.json)
  duration  $(secs "$(jq -r .duration_seconds last.json)")
  records   3
    items: 3"

	run -0 --separate-stderr dataspoc-pipe logs -n 2 --output json alpha
	out_file got.json
	run -0 jq -r '.[].run_id' got.json
	assert_equal "$output" "$(run_ids alpha | tail -n 2 | tac)"
	run -0 jq -c '.[0]' got.json
	assert_equal "$output" "$(jq -c . last.json)"
	# without -n: the newest log itself, as the Python tool prints it
	run -0 --separate-stderr dataspoc-pipe logs --output json alpha
	assert_equal "$(jq -c . <<<"$output")" "$(jq -c . last.json)"
	run -0 dataspoc-pipe logs -n 10 --output jsonl alpha
	assert_equal "${#lines[@]}" 3
	run -0 dataspoc-pipe logs -n5 --output text alpha
	run -0 grep -c '^Run ' <<<"$output"
	assert_output 3
}

@test "logs: a failed run shows its error; never run, unknown pipeline and bad usage" {
	write_pipeline fails cmdtap-fail
	run -0 --separate-stderr dataspoc-pipe logs fails
	assert_equal "$output" ""
	assert_equal "$stderr" "pipeline 'fails' has no run logs in $(bucket_url)"
	run -0 dataspoc-pipe logs --output json fails
	assert_output "null"
	run -0 dataspoc-pipe logs -n 3 --output json fails
	assert_output "[]"
	run -1 dataspoc-pipe run fails
	run -0 dataspoc-pipe logs fails
	assert_line --index 0 --regexp '^Run [0-9]{8}T[0-9]{6}Z-[0-9]{3}[0-9a-f]{6}: failure$'
	assert_line --index -2 "  error     cmdtap-fail exited with status 1"
	# the tap's last words, from the failure log
	assert_line --index -1 "  tap said  cmdtap-fail: the source went away"
	# table, the human format's other name, is the same text
	local human=$output
	run -0 dataspoc-pipe logs --output table fails
	assert_equal "$output" "$human"
	run -2 --separate-stderr dataspoc-pipe logs ghost
	assert_equal "$stderr" "dataspoc-pipe: no pipeline 'ghost' (looked for $HOMEDIR/pipelines/ghost.yaml)"
	run -2 --separate-stderr dataspoc-pipe logs -n 0 fails
	assert_equal "$stderr" "dataspoc-pipe: -n wants a number of run logs (1 or more), not '0'"
	run -2 --separate-stderr dataspoc-pipe logs --output csv fails
	assert_equal "$stderr" "dataspoc-pipe: logs: unknown output format 'csv' (use text json jsonl)"
	run -2 --separate-stderr dataspoc-pipe logs
	assert_stderr "dataspoc-pipe: logs: a pipeline NAME (or -c FILE.yaml) is required
usage: dataspoc-pipe logs [-n K] [--output text|json|jsonl] NAME | -c FILE.yaml"
	run -2 --separate-stderr dataspoc-pipe logs a b
	assert_stderr "dataspoc-pipe: logs: unexpected argument 'b'
usage: dataspoc-pipe logs [-n K] [--output text|json|jsonl] NAME | -c FILE.yaml"
}

# --- validate ---------------------------------------------------------------------

@test "validate: every check ok, in text and JSON" {
	write_pipeline alpha cmdtap-ok
	write_pipeline beta cmdtap-ok
	run -0 --separate-stderr dataspoc-pipe validate
	assert_equal "$stderr" ""
	assert_equal "$output" "alpha: config: ok
alpha: tap: ok
alpha: source: ok
alpha: bucket: ok (conditional create: honoured)
alpha: secrets: ok
alpha: placeholders: ok
beta: config: ok
beta: tap: ok
beta: source: ok
beta: bucket: ok (conditional create: honoured)
beta: secrets: ok
beta: placeholders: ok"
	run -0 --separate-stderr dataspoc-pipe validate --output json beta
	run -0 jq -c '.[] | del(.checks)' <<<"$output"
	assert_equal "$output" '{"pipeline":"beta","bucket_ok":true,"tap_ok":true,"ok":true,"errors":[]}'
	run -0 dataspoc-pipe validate --output json beta
	run -0 jq -c '.[].checks[]' <<<"$output"
	assert_equal "$output" '{"check":"config","status":"ok","message":null}
{"check":"tap","status":"ok","message":null}
{"check":"source","status":"ok","message":null}
{"check":"bucket","status":"ok","message":"conditional create: honoured"}
{"check":"secrets","status":"ok","message":null}
{"check":"placeholders","status":"ok","message":null}'
	# the probe leaves nothing behind
	run -0 bucket_keys .dataspoc/probe/
	assert_output ""
}

@test "validate: a missing tap, a broken config and a failing transform fail with the reason" {
	write_pipeline ghost cmdtap-missing
	printf 'source:\n  tap: cmdtap-ok\ndestination: [1]\n' >"$HOMEDIR/pipelines/bad.yaml"
	write_pipeline shaped cmdtap-ok
	mkdir -p "$HOMEDIR/transforms"
	echo '.id |' >"$HOMEDIR/transforms/shaped.jq"
	run -1 --separate-stderr dataspoc-pipe validate
	assert_equal "$stderr" ""
	assert_line --index 0 "bad: config: FAIL: $HOMEDIR/pipelines/bad.yaml:3:14: destination must be a mapping"
	assert_line --index 1 "ghost: config: ok"
	assert_line --index 2 "ghost: tap: FAIL: cmdtap-missing not found on PATH — install it or set source.tap"
	assert_line --index 3 "ghost: bucket: ok (conditional create: honoured)"
	assert_line --index 4 "ghost: secrets: ok"
	assert_line --index 5 "ghost: placeholders: ok"
	assert_line --index 6 "shaped: config: ok"
	assert_line --index 7 "shaped: tap: ok"
	# (the source only through a tap that can start: ghost has none)
	assert_line --index 8 "shaped: source: ok"
	assert_line --index 9 --regexp "^shaped: transform: FAIL: .*shaped\.jq"
	assert_equal "${#lines[@]}" 13
	run -1 --separate-stderr dataspoc-pipe validate --output json ghost
	run -0 jq -c '[.[].checks[] | select(.status != "ok")]' <<<"$output"
	assert_output '[{"check":"tap","status":"fail","message":"cmdtap-missing not found on PATH — install it or set source.tap"}]'
	write_pipeline csv tap-csv
	run -1 --separate-stderr dataspoc-pipe validate csv
	assert_line --index 1 "csv: tap: FAIL: tap-csv not found on PATH — install it or set source.tap (the bundled dataspoc-tap-csv reads tap-csv's config)"
	# an unknown pipeline: 2, as for run and logs
	run -2 dataspoc-pipe validate beta-does-not-exist --output json
	run -2 dataspoc-pipe validate beta-does-not-exist
	assert_output "beta-does-not-exist: config: FAIL: no pipeline 'beta-does-not-exist' (looked for $HOMEDIR/pipelines/beta-does-not-exist.yaml)"
}

@test "validate --output json: a reason holding a quote, a tab or a control byte stays valid JSON, every byte kept" {
	# a tap command given as a list is taken verbatim, whatever bytes it holds
	write_pipeline odd cmdtap-ok
	sed -i 's|^  tap: .*|  tap: ["say \\"hi\\"\\tnow\\u0001"]|' "$HOMEDIR/pipelines/odd.yaml"
	local want=$'say "hi"\tnow\x01 not found on PATH — install it or set source.tap'
	run -1 --separate-stderr dataspoc-pipe validate odd
	assert_line --index 1 "odd: tap: FAIL: $want"
	run -1 sh -c 'dataspoc-pipe validate --output json odd >got.json'
	run -0 jq -r '.[0].checks[1].message' got.json
	assert_output "$want"
	run -0 grep -c -F '"message":"say \"hi\"\tnow\u0001 not found on PATH' got.json
}

@test "validate: a tap config holding secrets and readable by others is a warning" {
	mkdir -p "$HOMEDIR/sources"
	printf '{"host": "db", "keys": ["id"], "replication_key": "u", "password": "hunter2"}\n' >"$HOMEDIR/sources/sec.json"
	chmod 644 "$HOMEDIR/sources/sec.json"
	write_pipeline sec cmdtap-ok
	sed -i '/^  tap: /a\  config: ../sources/sec.json' "$HOMEDIR/pipelines/sec.yaml"
	local f
	f=$(realpath "$HOMEDIR/sources/sec.json")
	run -0 --separate-stderr dataspoc-pipe validate sec
	assert_equal "$output" "sec: config: ok
sec: tap: ok
sec: source: ok
sec: bucket: ok (conditional create: honoured)
sec: secrets: WARN: '$f' holds secrets (password) and is readable by other users (mode 0644): chmod 600 '$f'
sec: placeholders: ok"
	run -0 dataspoc-pipe validate --output json sec
	run -0 jq -r '.[0].checks[4].status' <<<"$output"
	assert_output warn
	chmod 600 "$HOMEDIR/sources/sec.json"
	run -0 dataspoc-pipe validate sec
	assert_line --index 4 "sec: secrets: ok"
	# group-readable counts too; keys that only look alike (keys, replication_key) do not
	chmod 640 "$HOMEDIR/sources/sec.json"
	run -0 dataspoc-pipe validate sec
	assert_line --index 4 --partial "sec: secrets: WARN: '$f' holds secrets (password) and is readable by other users (mode 0640)"
	printf '{"host": "db", "keys": ["id"], "replication_key": "u", "password": ""}\n' >"$HOMEDIR/sources/sec.json"
	run -0 dataspoc-pipe validate sec
	assert_line --index 4 "sec: secrets: ok"
}

@test "validate: add's unfilled template is a warning naming the members; a missing tap config fails" {
	run -0 dataspoc-pipe add --tap dataspoc-tap-csv --bucket "$(bucket_url)" --yes t5
	# the template's placeholder path fails the source check: discovery opens the file
	run -1 --separate-stderr dataspoc-pipe validate t5
	assert_line --index 0 "t5: config: ok"
	assert_line --index 2 "t5: source: FAIL: dataspoc-tap-csv --discover failed: dataspoc-tap-csv: cannot open '/path/to/my_table.csv': No such file or directory"
	assert_line --index 5 "t5: placeholders: WARN: the tap's config file '$HOMEDIR/sources/t5.json' still holds placeholders of add's template (.files[0].path): fill them in"
	run -0 dataspoc-pipe add --tap tap-postgres --bucket "$(bucket_url)" --yes pg
	run -0 dataspoc-pipe validate --output json pg
	run -0 jq -r '.[].checks[] | select(.check == "placeholders") | .status + ": " + .message' <<<"$output"
	assert_output "warn: the tap's config file '$HOMEDIR/sources/pg.json' still holds placeholders of add's template (.password): fill them in"
	sed -i 's/CHANGE_ME/s3cret/' "$HOMEDIR/sources/pg.json"
	run -0 dataspoc-pipe validate pg
	assert_line --index 5 "pg: placeholders: ok"
	# the tap's config file gone: a config failure at source.config's place
	rm "$HOMEDIR/sources/t5.json"
	run -1 --separate-stderr dataspoc-pipe validate t5
	assert_output "t5: config: FAIL: $HOMEDIR/pipelines/t5.yaml:4:11: source.config: cannot read '$HOMEDIR/sources/t5.json': No such file or directory"
	# run checks it too: a config error (2) before the tap starts, not a tap's failure (1)
	run -2 --separate-stderr dataspoc-pipe run t5
	assert_output ""
	assert_equal "$stderr" "dataspoc-pipe: run 't5' failed: $HOMEDIR/pipelines/t5.yaml:4:11: source.config: cannot read '$HOMEDIR/sources/t5.json': No such file or directory"
	run -0 bucket_files
	assert_output ""
}

@test "validate: a relative bucket is relative to the pipeline file, ~/ is \$HOME, wherever it runs from" {
	write_pipeline rel cmdtap-ok
	write_pipeline home cmdtap-ok
	sed -i "s|^  bucket: .*|  bucket: ../lake|" "$HOMEDIR/pipelines/rel.yaml"
	sed -i "s|^  bucket: .*|  bucket: ~/lake|" "$HOMEDIR/pipelines/home.yaml"
	mkdir elsewhere
	cd elsewhere
	run -0 --separate-stderr dataspoc-pipe validate rel home
	assert_line --index 3 "rel: bucket: ok (conditional create: honoured)"
	assert_line --index 9 "home: bucket: ok (conditional create: honoured)"
	[ -d "$HOMEDIR/lake" ]
	[ -d "$HOME/lake" ]
	run -0 ls -A
	assert_output ""
	run -0 pipe-state check -p bucket rel
	assert_output "$HOMEDIR/lake"
	run -0 pipe-state check -p bucket home
	assert_output "$HOME/lake"
}

@test "validate: a bucket that cannot be written fails the bucket check (local)" {
	echo file >afile
	write_pipeline alpha cmdtap-ok
	sed -i "s|^  bucket: .*|  bucket: $BATS_TEST_TMPDIR/afile/lake|" "$HOMEDIR/pipelines/alpha.yaml"
	run -1 --separate-stderr dataspoc-pipe validate alpha
	assert_line --index 3 --regexp "^alpha: bucket: FAIL: .*$BATS_TEST_TMPDIR/afile/lake.*Not a directory$"
	run -2 --separate-stderr dataspoc-pipe validate --output xml
	assert_equal "$stderr" "dataspoc-pipe: validate: unknown output format 'xml' (use text json)"
	run -2 --separate-stderr dataspoc-pipe validate 'no/such'
	assert_equal "$stderr" "dataspoc-pipe: validate: invalid pipeline name 'no/such'"
}

@test "validate: the source check runs the tap's discovery: its error, a time limit, and a warning when nothing is selected" {
	sel() {	# NAME [STREAMS-LINE]
		{
			printf 'source:\n  tap: seltap-py\n  config: {host: db, password: hunter2}\n'
			[ -z "${2:-}" ] || printf '  %s\n' "$2"
			printf 'destination:\n'
			bucket_yaml
		} >"$HOMEDIR/pipelines/$1.yaml"
		chmod 600 "$HOMEDIR/pipelines/$1.yaml"
	}
	sel none
	sel some 'streams: [a]'
	run -0 --separate-stderr dataspoc-pipe validate none some
	assert_equal "$stderr" ""
	assert_line --index 2 "none: source: WARN: no stream is selected, and a tap that takes --properties (tap-postgres) extracts none then: name them in source.streams (its discovery offers: a, b)"
	assert_line --index 8 "some: source: ok (2 stream(s) offered)"
	# a source that refuses: its first line of error, the password masked
	mkdir -p "$FAKE_DIR/seltap-py"
	echo 1 >"$FAKE_DIR/seltap-py/discover-exit"
	run -1 --separate-stderr dataspoc-pipe validate some
	assert_line --index 2 "some: source: FAIL: seltap-py --discover failed: CRITICAL cannot connect to the database"
	# a source that does not answer
	rm "$FAKE_DIR/seltap-py/discover-exit"
	: >"$FAKE_DIR/seltap-py/discover-block"
	DATASPOC_PIPE_CHECK_TIMEOUT=1 run -1 --separate-stderr dataspoc-pipe validate some
	assert_line --index 2 "some: source: FAIL: seltap-py --discover did not answer within 1 s"
}

@test "validate and status with no pipelines" {
	run -0 --separate-stderr dataspoc-pipe validate
	assert_output ""
	assert_equal "$stderr" "dataspoc-pipe: validate: no pipelines in $HOMEDIR/pipelines (dataspoc-pipe add NAME makes one)"
	# not a table's header alone: what is missing, and how to make one
	run -0 --separate-stderr dataspoc-pipe status
	assert_output ""
	assert_equal "$stderr" "dataspoc-pipe: no pipelines in $HOMEDIR/pipelines (dataspoc-pipe add NAME makes one)"
	run -0 dataspoc-pipe status --output json
	assert_output "[]"
}

@test "messages are under the command the user ran: dataspoc-pipe, not pipe-tap or pipe-state; by hand, the stage's" {
	local want="dataspoc-pipe: no pipeline 'nosuch' (looked for $HOMEDIR/pipelines/nosuch.yaml)"
	run -2 --separate-stderr dataspoc-pipe run nosuch
	assert_equal "$stderr" "$want"
	run -2 --separate-stderr dataspoc-pipe logs nosuch
	assert_equal "$stderr" "$want"
	run -2 --separate-stderr dataspoc-pipe status nosuch
	assert_equal "${stderr_lines[0]}" "$want"
	printf 'source:\n  tap: cmdtap-ok\ndestinaton:\n  bucket: x\n' >"$HOMEDIR/pipelines/typo.yaml"
	run -2 --separate-stderr dataspoc-pipe run typo
	assert_equal "$stderr" "dataspoc-pipe: $HOMEDIR/pipelines/typo.yaml:3:1: unknown top-level key 'destinaton': did you mean 'destination'? (expected one of: source, destination, incremental, schedule)"
	# (the stages run by hand keep their names)
	run -2 --separate-stderr pipe-tap nosuch
	assert_equal "$stderr" "pipe-tap: no pipeline 'nosuch' (looked for $HOMEDIR/pipelines/nosuch.yaml)"
	run -2 --separate-stderr pipe-state logs nosuch
	assert_equal "$stderr" "pipe-state: no pipeline 'nosuch' (looked for $HOMEDIR/pipelines/nosuch.yaml)"
}

# --- manifest ---------------------------------------------------------------------

@test "manifest BUCKET: a table of the catalog, and the manifest as stored with --output json" {
	write_pipeline alpha cmdtap-ok
	run -0 dataspoc-pipe run alpha
	run -0 dataspoc-pipe run alpha
	bucket_cat .dataspoc/manifest.json >manifest.json
	run -0 --separate-stderr dataspoc-pipe manifest "$(bucket_url)"
	assert_equal "$stderr" ""
	out_file got
	{
		printf '%-11s  %4s  %11s  %-20s  %7s\n' TABLE ROWS EXTRACTIONS "LAST EXTRACTION" COLUMNS
		printf '%-11s  %4s  %11s  %-20s  %7s\n' cmdok/items 6 2 \
			"$(jq -r '.tables["cmdok/items"].stats.last_extraction' manifest.json)" 2
	} >want
	diff -u want got
	run -0 --separate-stderr dataspoc-pipe manifest --output json "$(bucket_url)"
	out_file got.json
	diff -u manifest.json got.json
}

@test "manifest: a bucket without one (empty, as the Python tool reads it), and bad usage" {
	run -0 --separate-stderr dataspoc-pipe manifest "$(bucket_url)"
	assert_output ""
	assert_equal "$stderr" "no manifest in bucket '$(bucket_url)' (.dataspoc/manifest.json): no pipeline has landed data there yet"
	run -0 --separate-stderr dataspoc-pipe manifest --output json "$(bucket_url)"
	assert_output '{"version":"1.0","updated_at":null,"tables":{}}'
	run -2 --separate-stderr dataspoc-pipe manifest
	assert_stderr "dataspoc-pipe: manifest: a BUCKET (or -c FILE.yaml) is required
usage: dataspoc-pipe manifest [--output text|json] BUCKET | -c FILE.yaml"
	run -2 --separate-stderr dataspoc-pipe manifest a b
	assert_stderr "dataspoc-pipe: manifest: unexpected argument 'b'
usage: dataspoc-pipe manifest [--output text|json] BUCKET | -c FILE.yaml"
	run -2 --separate-stderr dataspoc-pipe manifest a -c b.yaml
	assert_stderr "dataspoc-pipe: manifest: give a BUCKET or -c FILE.yaml, not both
usage: dataspoc-pipe manifest [--output text|json] BUCKET | -c FILE.yaml"
	run -2 --separate-stderr dataspoc-pipe manifest --output csv "$(bucket_url)"
	assert_equal "$stderr" "dataspoc-pipe: manifest: unknown output format 'csv' (use text json)"
}

@test "manifest BUCKET: the bucket is taken as a pipeline's destination.bucket: ~/ expanded, a malformed URL refused" {
	write_pipeline alpha cmdtap-ok
	run -0 dataspoc-pipe run alpha
	cp -R "$BUCKET_DIR" "$HOME/lake"
	dataspoc-pipe manifest "$(bucket_url)" >want
	# (the shell did not expand it: an MCP client's or a script's argument)
	run -0 --separate-stderr dataspoc-pipe manifest '~/lake'
	out_file got
	diff -u want got
	# the pipeline's own bucket, by its file
	run -0 --separate-stderr dataspoc-pipe manifest -c "$HOMEDIR/pipelines/alpha.yaml"
	out_file got
	diff -u want got
	forms="(expected a directory, file:///abs/dir, s3://bucket[/prefix], gs://bucket[/prefix] or az://container[/prefix])"
	mkdir -p s3: file:lake
	for b in s3:/lake file:lake; do
		run -2 --separate-stderr dataspoc-pipe manifest "$b"
		assert_output ""
		assert_equal "$stderr" "dataspoc-pipe: bucket '$b' is not a valid URL $forms"
	done
	run -2 --separate-stderr dataspoc-pipe manifest S3://lake
	assert_equal "$stderr" "dataspoc-pipe: bucket 'S3://lake': the scheme is written in lower case, as in s3://lake"
	run -2 --separate-stderr dataspoc-pipe manifest ftp://lake
	assert_equal "$stderr" "dataspoc-pipe: bucket: unsupported scheme 'ftp://' $forms"
	# every command of a bucket: the same rule
	run -2 --separate-stderr pipe-state list -b s3:/lake
	assert_output ""
	assert_equal "$stderr" "pipe-state: bucket 's3:/lake' is not a valid URL $forms"
	run -2 --separate-stderr pipe-state unlock -b file:lake
	assert_equal "$stderr" "pipe-state: bucket 'file:lake' is not a valid URL $forms"
}

@test "manifest s3://BUCKET that fails says a pipeline's endpoint_url is not used, and how to give one" {
	export AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=s AWS_REGION=us-east-1 DATASPOC_PIPE_S3_RETRIES=0
	unset AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_PROFILE
	# (the profile's endpoint, a closed port: nothing leaves this machine)
	mkdir -p "$HOME/.aws"
	printf '[default]\nendpoint_url = http://127.0.0.1:9\n' >"$HOME/.aws/config"
	run -1 --separate-stderr dataspoc-pipe manifest s3://lake
	assert_output ""
	[ "${#stderr_lines[@]}" -eq 2 ]
	assert_regex "${stderr_lines[0]}" "^dataspoc-pipe: cannot read 's3://lake/.dataspoc/manifest.json'"
	assert_equal "${stderr_lines[1]}" "dataspoc-pipe: hint: 's3://lake' was asked at the AWS profile's endpoint_url, else AWS's own, not at a pipeline's destination.endpoint_url: set AWS_ENDPOINT_URL, or give -c FILE.yaml"
	# an endpoint given: no hint
	AWS_ENDPOINT_URL=http://127.0.0.1:9 run -1 --separate-stderr dataspoc-pipe manifest s3://lake
	[ "${#stderr_lines[@]}" -eq 1 ]
}

# --- schedule ---------------------------------------------------------------------

@test "run --timestamps: each line with the UTC time and the run's id, stdout and stderr as one; the run's exit status" {
	write_pipeline alpha cmdtap-ok
	run -0 --separate-stderr dataspoc-pipe run --timestamps alpha
	assert_equal "$stderr" ""
	local rid
	rid=$(run_ids alpha | tail -n 1)
	[ -n "$rid" ]
	local t='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z'
	assert_line --index 0 --regexp "^$t $rid Running: alpha \\(run $rid\\)\$"
	assert_line --regexp "^$t $rid Done! 3 records in 1 stream\\(s\\)\$"
	# every line stamped
	run -1 grep -c -v -E "^$t $rid " <<<"$output"
	assert_output 0
	# a failure: its words on the same stream, its status
	write_pipeline beta cmdtap-fail
	run -1 --separate-stderr dataspoc-pipe run --timestamps beta
	assert_equal "$stderr" ""
	assert_line --regexp "^$t [0-9TZa-f-]+ dataspoc-pipe: run 'beta' failed: "
	# before the run has an id: '-'
	run -2 --separate-stderr dataspoc-pipe run --timestamps nosuch
	assert_output --regexp "^$t - dataspoc-pipe: no pipeline 'nosuch' "
}

entry() {	# NAME CRON
	printf '%s flock -n %s %s run --timestamps %s >>%s 2>&1  # dataspoc-pipe:%s\n' "$2" \
		"$HOMEDIR/locks/$1.lock" "$SELF" "$1" "$HOMEDIR/logs/$1.log" "$1"
}

@test "schedule install warns when the tap is on this PATH only, not on cron's" {
	write_pipeline alpha cmdtap-ok
	add_cron alpha "@daily"
	run -0 --separate-stderr dataspoc-pipe schedule install
	assert_output "Installed alpha (@daily)"
	assert_equal "$stderr" "dataspoc-pipe: schedule: warning: pipeline 'alpha': tap 'cmdtap-ok' is on your PATH ($TAPS/cmdtap-ok) but not on cron's (${SELF%/*}:/usr/bin:/bin): add a PATH= line to the crontab or give source.tap as a full path"
	# the crontab's own PATH= line is the one its entries get
	printf 'PATH=%s:/usr/bin:/bin\n' "$TAPS" >"$FAKE_CRONTAB"
	run -0 --separate-stderr dataspoc-pipe schedule install
	assert_equal "$stderr" ""
}

@test "schedule without crontab(1): says what to install, exit 1" {
	write_pipeline alpha "$TAPS/cmdtap-ok"
	add_cron alpha "@daily"
	# every program of the system but crontab
	mkdir nocron
	local d f
	for d in /usr/local/bin /usr/bin /bin; do
		for f in "$d"/*; do
			[ "${f##*/}" = crontab ] || [ -e "nocron/${f##*/}" ] || ln -s "$f" "nocron/${f##*/}"
		done
	done
	run -1 --separate-stderr env PATH="$PIPE_BIN:$PWD/nocron" "$PIPE_BIN/dataspoc-pipe" schedule install
	assert_output ""
	assert_equal "$stderr" "dataspoc-pipe: schedule: crontab not found: install cron (Debian: apt-get install cron)"
	run -1 --separate-stderr env PATH="$PIPE_BIN:$PWD/nocron" "$PIPE_BIN/dataspoc-pipe" schedule list
	assert_equal "$stderr" "dataspoc-pipe: schedule: crontab not found: install cron (Debian: apt-get install cron)"
}

@test "schedule install twice: one flock-guarded entry per scheduled pipeline, other lines kept" {
	write_pipeline alpha "$TAPS/cmdtap-ok"
	add_cron alpha "0 */2 * * *"
	write_pipeline beta "$TAPS/cmdtap-ok"
	add_cron beta "@daily"
	write_pipeline gamma "$TAPS/cmdtap-ok"
	printf 'MAILTO=ops\n5 4 * * * /usr/bin/backup  # mine\n' >"$FAKE_CRONTAB"
	run -0 --separate-stderr dataspoc-pipe schedule install
	assert_equal "$stderr" ""
	assert_equal "$output" "Installed alpha (0 */2 * * *)
Installed beta (@daily)"
	{
		printf 'MAILTO=ops\n5 4 * * * /usr/bin/backup  # mine\n'
		entry alpha "0 */2 * * *"
		entry beta "@daily"
	} >want
	diff -u want "$FAKE_CRONTAB"
	[ -d "$HOMEDIR/locks" ] && [ -d "$HOMEDIR/logs" ]
	run -0 --separate-stderr dataspoc-pipe schedule install
	assert_equal "$output" "Unchanged: alpha (0 */2 * * *)
Unchanged: beta (@daily)"
	diff -u want "$FAKE_CRONTAB"
	# the second install changed nothing, so it wrote nothing
	run -0 cat "$FAKE_CRONTAB.writes"
	assert_output "write"
	run -0 --separate-stderr dataspoc-pipe schedule list
	assert_equal "$output" "$(entry alpha "0 */2 * * *")
$(entry beta "@daily")"
	run -0 dataspoc-pipe schedule list beta
	assert_output "$(entry beta "@daily")"

	# a changed schedule replaces its line; a pipeline gone loses its line
	sed -i 's|"0 \*/2 \* \* \*"|"30 1 * * mon-fri"|' "$HOMEDIR/pipelines/alpha.yaml"
	rm "$HOMEDIR/pipelines/beta.yaml"
	run -0 dataspoc-pipe schedule install
	assert_output "Installed alpha (30 1 * * mon-fri)"
	{
		printf 'MAILTO=ops\n5 4 * * * /usr/bin/backup  # mine\n'
		entry alpha "30 1 * * mon-fri"
	} >want
	diff -u want "$FAKE_CRONTAB"
}

@test "schedule install NAME touches only that pipeline's entry; remove and list" {
	write_pipeline alpha "$TAPS/cmdtap-ok"
	add_cron alpha "15 3 * * *"
	write_pipeline beta "$TAPS/cmdtap-ok"
	add_cron beta "*/10 * * * *"
	run -0 --separate-stderr dataspoc-pipe schedule list
	assert_output ""
	assert_equal "$stderr" "dataspoc-pipe: schedule: no dataspoc-pipe entries in the crontab"
	run -0 dataspoc-pipe schedule install beta
	assert_output "Installed beta (*/10 * * * *)"
	entry beta "*/10 * * * *" >want
	diff -u want "$FAKE_CRONTAB"
	run -0 dataspoc-pipe schedule install
	echo "0 0 * * * someone else" >>"$FAKE_CRONTAB"
	run -0 --separate-stderr dataspoc-pipe schedule remove alpha
	assert_output "Removed alpha"
	{
		entry beta "*/10 * * * *"
		echo "0 0 * * * someone else"
	} >want
	diff -u want "$FAKE_CRONTAB"
	run -0 dataspoc-pipe schedule remove
	assert_output "Removed beta"
	echo "0 0 * * * someone else" >want
	diff -u want "$FAKE_CRONTAB"
	run -0 --separate-stderr dataspoc-pipe schedule remove
	assert_output ""
	assert_equal "$stderr" "dataspoc-pipe: schedule: no dataspoc-pipe entries to remove"
	# a pipeline without schedule.cron, named
	write_pipeline gamma "$TAPS/cmdtap-ok"
	run -0 --separate-stderr dataspoc-pipe schedule install gamma
	assert_output ""
	assert_equal "$stderr" "dataspoc-pipe: schedule: pipeline 'gamma' has no schedule.cron: nothing to install"
	diff -u want "$FAKE_CRONTAB"
}

@test "schedule install rejects an invalid cron expression and leaves the crontab alone" {
	write_pipeline alpha "$TAPS/cmdtap-ok"
	add_cron alpha "0 * * * *"
	write_pipeline beta "$TAPS/cmdtap-ok"
	add_cron beta "0 25 * * *"
	echo "1 1 * * * keep" >"$FAKE_CRONTAB"
	run -2 --separate-stderr dataspoc-pipe schedule install
	assert_output ""
	assert_equal "$stderr" "dataspoc-pipe: $HOMEDIR/pipelines/beta.yaml:9:9: schedule.cron '0 25 * * *': hour 25 is out of range 0-23
dataspoc-pipe: schedule: crontab left unchanged"
	run -0 cat "$FAKE_CRONTAB"
	assert_output "1 1 * * * keep"
	[ ! -e "$FAKE_CRONTAB.writes" ]
	local bad
	for bad in "every hour" "* * * *" "*/0 * * * *" "@often"; do
		write_pipeline beta "$TAPS/cmdtap-ok"
		add_cron beta "$bad"
		run -2 dataspoc-pipe schedule install beta
		assert_line --index 0 --partial "dataspoc-pipe: $HOMEDIR/pipelines/beta.yaml:9:9: schedule.cron"
		assert_line --index 0 --partial "'$bad'"
		assert_line --index 1 "dataspoc-pipe: schedule: crontab left unchanged"
	done
	[ ! -e "$FAKE_CRONTAB.writes" ]
}

@test "schedule: another home is named in the entry; crontab failures and bad usage" {
	export DATASPOC_PIPE_HOME=$BATS_TEST_TMPDIR/other\ home
	mkdir -p "$DATASPOC_PIPE_HOME/pipelines"
	write_pipeline alpha "$TAPS/cmdtap-ok"
	add_cron alpha "@hourly"
	run -0 dataspoc-pipe schedule install
	run -0 cat "$FAKE_CRONTAB"
	assert_output "@hourly DATASPOC_PIPE_HOME='$DATASPOC_PIPE_HOME' flock -n '$DATASPOC_PIPE_HOME/locks/alpha.lock' $SELF run --timestamps alpha >>'$DATASPOC_PIPE_HOME/logs/alpha.log' 2>&1  # dataspoc-pipe:alpha"
	: >"$FAKE_CRONTAB.broken"
	run -1 --separate-stderr dataspoc-pipe schedule list
	assert_equal "$stderr" "dataspoc-pipe: schedule: crontab -l failed: crontab: cannot connect to cron"
	run -2 --separate-stderr dataspoc-pipe schedule
	assert_stderr "dataspoc-pipe: schedule: an action is required (install, remove or list)
usage: dataspoc-pipe schedule install|remove|list [NAME...]"
	run -2 --separate-stderr dataspoc-pipe schedule frob
	assert_stderr "dataspoc-pipe: schedule: unknown action 'frob' (install, remove or list)
usage: dataspoc-pipe schedule install|remove|list [NAME...]"
	run -2 --separate-stderr dataspoc-pipe schedule install 'a b'
	assert_equal "$stderr" "dataspoc-pipe: schedule: invalid pipeline name 'a b'"
}

@test "schedule install warns when an S3 bucket's credentials come from the shell, which cron does not pass on" {
	write_pipeline alpha "$TAPS/cmdtap-ok"
	sed -i 's|^  bucket: .*|  bucket: s3://lake/raw|' "$HOMEDIR/pipelines/alpha.yaml"
	add_cron alpha "@daily"
	AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=s run -0 --separate-stderr dataspoc-pipe schedule install
	assert_equal "$stderr" "dataspoc-pipe: schedule: warning: pipeline 'alpha': its bucket's credentials come from your shell (AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY), which cron does not pass on: put them in the crontab (NAME=value lines), in a credentials file (~/.aws/credentials), or in the pipeline's config"
	# in the crontab: no warning
	printf 'AWS_ACCESS_KEY_ID=k\nAWS_SECRET_ACCESS_KEY=s\n' >"$FAKE_CRONTAB"
	AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=s run -0 --separate-stderr dataspoc-pipe schedule install
	assert_equal "$stderr" ""
}

@test "schedule: a relative DATASPOC_PIPE_HOME is made absolute in the entry (cron starts in \$HOME)" {
	mkdir -p home2/pipelines
	export DATASPOC_PIPE_HOME=home2
	write_pipeline alpha "$TAPS/cmdtap-ok"
	add_cron alpha "@hourly"
	run -0 dataspoc-pipe schedule install
	run -0 cat "$FAKE_CRONTAB"
	assert_output "@hourly DATASPOC_PIPE_HOME=$PWD/home2 flock -n $PWD/home2/locks/alpha.lock $SELF run --timestamps alpha >>$PWD/home2/logs/alpha.log 2>&1  # dataspoc-pipe:alpha"
	[ -d "$PWD/home2/locks" ]
	# the entry is the same from any folder, so a second install changes nothing
	mkdir elsewhere
	cd elsewhere
	export DATASPOC_PIPE_HOME=../home2
	run -0 dataspoc-pipe schedule install
	assert_output "Unchanged: alpha (@hourly)"
}

@test "run: the private folders of drivers killed outright are removed by the next driver" {
	use_tap tap-shop
	echo '{"type":"RECORD","stream":"s","record":{"n":1}}' >"$FAKE_DIR/tap-shop/out"
	write_pipeline shop tap-shop
	local holder
	mkdir "$TMPDIR/dataspoc-pipe.dead01" "$TMPDIR/dataspoc-pipe.live01" "$TMPDIR/dataspoc-pipe.nopid1" \
		"$TMPDIR/dataspoc-pipe.fresh1"
	touch "$TMPDIR/dataspoc-pipe.dead01/plan" "$TMPDIR/dataspoc-pipe.dead01/state"
	# a pipe-tap's folder (no pid file), its tap's config left in it
	echo '{"password":"x"}' >"$TMPDIR/dataspoc-pipe.nopid1/config.json"
	# a live run holds its folder locked, whatever its pid file says
	echo 1 >"$TMPDIR/dataspoc-pipe.live01/pid"
	( exec 8<"$TMPDIR/dataspoc-pipe.live01"; flock 8; exec sleep 1000 ) &
	holder=$!
	BG_PIDS="$BG_PIDS $holder"
	wait_until sh -c '! flock -n "$1" true' sh "$TMPDIR/dataspoc-pipe.live01"
	touch -d '2 minutes ago' "$TMPDIR"/dataspoc-pipe.dead01 "$TMPDIR"/dataspoc-pipe.live01 "$TMPDIR"/dataspoc-pipe.nopid1
	run -0 --separate-stderr dataspoc-pipe run shop
	run -0 ls -A "$TMPDIR"
	# (one not a minute old may be about to be locked by its maker: left)
	assert_output "dataspoc-pipe.fresh1
dataspoc-pipe.live01"
	kill "$holder"
	wait "$holder" 2>/dev/null || true
	rm -rf "$TMPDIR"/dataspoc-pipe.live01 "$TMPDIR"/dataspoc-pipe.fresh1
}

# --- issue #29, item 20 -----------------------------------------------------------

@test "add: a tap that ignores --about and extracts is stopped after 3 s, and nothing of it is shown" {
	cat >"$BATS_TEST_TMPDIR/bin/tap-slow-about" <<-SH
	#!/bin/sh
	# (an extraction, whatever the arguments: how long it was let run is noted)
	date +%s >"$BATS_TEST_TMPDIR/about-start"
	trap 'date +%s >"$BATS_TEST_TMPDIR/about-end"; exit 143' TERM
	echo '{"type":"RECORD","stream":"s","record":{"n":1}}'
	sleep 30 &
	wait
	SH
	chmod +x "$BATS_TEST_TMPDIR/bin/tap-slow-about"
	printf '%s\n' tap-slow-about "" "$(bucket_url)" "" "" "" "" >answers
	run -0 --separate-stderr dataspoc-pipe add slow <answers
	refute_line --partial "says:"
	[[ $stderr != *RECORD* ]]
	# stopped by SIGTERM at 3 s (it was let run 10 s)
	[ -s "$BATS_TEST_TMPDIR/about-end" ]
	[ $(($(cat "$BATS_TEST_TMPDIR/about-end") - $(cat "$BATS_TEST_TMPDIR/about-start"))) -le 5 ]
}

@test "status -c FILE and logs -c FILE: the pipeline of a file, as run -c runs it" {
	write_pipeline alpha cmdtap-ok
	mv "$HOMEDIR/pipelines/alpha.yaml" alpha.yaml
	run -0 dataspoc-pipe run -c alpha.yaml
	run -0 --separate-stderr dataspoc-pipe status -c alpha.yaml
	assert_line --index 0 --regexp '^PIPELINE +LAST RUN +STATUS +DURATION +RECORDS$'
	assert_line --index 1 --regexp '^alpha +[0-9T:-]+Z +success +[0-9]+s +3$'
	run -0 --separate-stderr dataspoc-pipe status -c alpha.yaml --output json
	run -0 jq -c '[.[] | [.name, .status, .records]]' <<<"$output"
	assert_output '[["alpha","success",3]]'
	run -0 --separate-stderr dataspoc-pipe logs -c alpha.yaml --output json
	run -0 jq -c '.status' <<<"$output"
	assert_output '"success"'
	run -0 --separate-stderr dataspoc-pipe logs -n 2 -c alpha.yaml --output json
	run -0 jq -c '[.[] | .status]' <<<"$output"
	assert_output '["success"]'
	run -2 --separate-stderr dataspoc-pipe logs alpha -c alpha.yaml
	assert_stderr "dataspoc-pipe: logs: give a NAME or -c FILE.yaml, not both
usage: dataspoc-pipe logs [-n K] [--output text|json|jsonl] NAME | -c FILE.yaml"
	run -2 --separate-stderr dataspoc-pipe status -c nope.yaml
	assert_equal "${stderr_lines[0]}" "dataspoc-pipe: cannot open 'nope.yaml': No such file or directory"
}

@test "make install: dataspoc-lake, the lake reader the demo runs, beside dataspoc-pipe" {
	local top=$BATS_TEST_DIRNAME/.. inst=$BATS_TEST_TMPDIR/inst
	# (the programs under test are the build's: only the install step runs)
	make -C "$top" -s install O="${PIPE_BIN%/bin}" DESTDIR="$inst" PREFIX=/usr >make.out 2>&1
	[ -x "$inst/usr/bin/dataspoc-lake" ]
	[ -x "$inst/usr/bin/dataspoc-pipe" ]
	run -0 "$inst/usr/bin/dataspoc-lake" --help
	assert_line --index 0 --partial "usage: scripts/lake BUCKET"
	# it reads buckets through the pipe-state installed beside it (the bucket rule is its)
	[ ! -x /usr/bin/pipe-state ] && [ ! -x /bin/pipe-state ]
	run -2 --separate-stderr env PATH=/usr/bin:/bin "$inst/usr/bin/dataspoc-lake" S3://lake
	assert_stderr "lake: bucket 'S3://lake': the scheme is written in lower case, as in s3://lake"
	make -C "$top" -s uninstall O="${PIPE_BIN%/bin}" DESTDIR="$inst" PREFIX=/usr >make.out 2>&1
	[ ! -e "$inst/usr/bin/dataspoc-lake" ]
}

