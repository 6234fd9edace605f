#!/usr/bin/env bats
# dataspoc-pipe: the driver, and whole runs on a local bucket.

load helpers/common
load helpers/pipeline_scenarios

setup() {
	pipe_setup
}

teardown() {
	pipe_teardown
}

# --- the driver itself ------------------------------------------------------------

@test "-h, --help and help print the help on stdout" {
	run -0 --separate-stderr dataspoc-pipe -h
	assert_line --index 0 "usage: dataspoc-pipe COMMAND [options]"
	assert_line "  run NAME          run pipelines/NAME.yaml (or -c FILE.yaml)"
	assert_stderr ""
	local help=$output
	run -0 dataspoc-pipe --help
	assert_equal "$output" "$help"
	run -0 dataspoc-pipe help
	assert_equal "$output" "$help"
	run -0 --separate-stderr dataspoc-pipe help run
	assert_line --index 0 "usage: dataspoc-pipe run [--full] [-v] NAME"
	run -0 --separate-stderr dataspoc-pipe run -h
	assert_line --index 0 "usage: dataspoc-pipe run [--full] [-v] NAME"
	run -0 --separate-stderr dataspoc-pipe help init
	assert_line --index 0 "usage: dataspoc-pipe init"
}

@test "bad usage says what is wrong, then the command's usage, on stderr; exit 2" {
	run -2 --separate-stderr dataspoc-pipe
	assert_equal "$output" ""
	assert_equal "${stderr_lines[0]}" "dataspoc-pipe: a command is required"
	assert_equal "${stderr_lines[1]}" "usage: dataspoc-pipe init"
	[[ $stderr == *"dataspoc-pipe run [--full] [-v] NAME | -c FILE.yaml"* ]]
	assert_equal "${stderr_lines[-1]}" "       dataspoc-pipe help [COMMAND] | version"
	local usage=${stderr#*$'\n'}
	run -2 --separate-stderr dataspoc-pipe frobnicate
	assert_equal "$output" ""
	assert_stderr "dataspoc-pipe: unknown command 'frobnicate'
$usage"
	# a typo: the nearest command
	run -2 --separate-stderr dataspoc-pipe stauts
	assert_stderr "dataspoc-pipe: unknown command 'stauts': did you mean 'status'?
$usage"
	run -2 --separate-stderr dataspoc-pipe valdiate
	assert_equal "${stderr_lines[0]}" "dataspoc-pipe: unknown command 'valdiate': did you mean 'validate'?"
	run -2 --separate-stderr dataspoc-pipe rn
	assert_equal "${stderr_lines[0]}" "dataspoc-pipe: unknown command 'rn': did you mean 'run'?"
	run -2 --separate-stderr dataspoc-pipe --frob
	assert_equal "${stderr_lines[0]}" "dataspoc-pipe: unknown option '--frob'"
	# a command's error: the reason, then that command's usage only
	local run_usage="usage: dataspoc-pipe run [--full] [-v] NAME
       dataspoc-pipe run [--full] [-v] -c FILE.yaml
       dataspoc-pipe run --all [-j N] [--full] [-v]   (also: run _ --all)
       dataspoc-pipe run [--full] [-v] NAME --shards N
       dataspoc-pipe run [--full] NAME --plan --shards N
       dataspoc-pipe run [-v] NAME --shard I/N --run-id ID
       dataspoc-pipe run NAME --hold --run-id ID"
	run -2 --separate-stderr dataspoc-pipe run --bogus shop
	assert_stderr "dataspoc-pipe: run: unknown option '--bogus'
$run_usage"
	run -2 --separate-stderr dataspoc-pipe run
	assert_stderr "dataspoc-pipe: run: a pipeline NAME (or -c FILE.yaml, or --all) is required
$run_usage"
	run -2 --separate-stderr dataspoc-pipe run one extra
	assert_stderr "dataspoc-pipe: run: unexpected argument 'extra'
$run_usage"
	run -2 --separate-stderr dataspoc-pipe run -c
	assert_stderr "dataspoc-pipe: run: option '-c' needs a FILE.yaml
$run_usage"
	run -2 --separate-stderr dataspoc-pipe run -c x.yaml one
	assert_stderr "dataspoc-pipe: run: give NAME or -c FILE.yaml, not both
$run_usage"
	run -2 --separate-stderr dataspoc-pipe help nothing
	assert_stderr "dataspoc-pipe: help: no command 'nothing'"
	run -2 --separate-stderr dataspoc-pipe init extra
	assert_stderr "dataspoc-pipe: init: unexpected argument 'extra'
usage: dataspoc-pipe init"
	run -2 --separate-stderr dataspoc-pipe status --output
	assert_stderr "dataspoc-pipe: status: option '--output' needs a format
usage: dataspoc-pipe status [--output text|json] [NAME... | -c FILE.yaml]"
	run -2 --separate-stderr dataspoc-pipe validate -q
	assert_stderr "dataspoc-pipe: validate: unknown option '-q'
usage: dataspoc-pipe validate [--output text|json] [NAME...]"
	run -0 ls -A "$DATASPOC_PIPE_HOME"
	assert_output "pipelines"
}

@test "man pages: dataspoc-pipe(1) names every page in SEE ALSO, every page names it; the bucket forms name az://" {
	local man=$BATS_TEST_DIRNAME/../man page name
	for page in "$man"/*.1; do
		name=${page##*/}
		name=${name%.1}
		[ "$name" = dataspoc-pipe ] && continue
		grep -qx "\.Xr $name 1[ ,]*" "$man/dataspoc-pipe.1" || fail "dataspoc-pipe(1)'s SEE ALSO lacks $name(1)"
		sed -n '/^\.Sh SEE ALSO/,$p' "$page" | grep -q '^\.Xr dataspoc-pipe 1' ||
			fail "$name(1)'s SEE ALSO lacks dataspoc-pipe(1)"
	done
	# every list of the forms a bucket takes has Azure's (-b BUCKET's too)
	run -0 grep -l 's3://bucket\[/prefix\]' "$man"/*.1
	for page in "${lines[@]}"; do
		grep -q 'az://container' "$page" || fail "${page##*/}: s3://bucket[/prefix] without az://container"
	done
}

@test "--version prints the version" {
	run -0 --separate-stderr dataspoc-pipe --version
	assert_output --regexp '^dataspoc-pipe [0-9]+\.[0-9]+\.[0-9]+$'
}

@test "init creates the home's layout; twice is harmless" {
	export DATASPOC_PIPE_HOME=$BATS_TEST_TMPDIR/newhome
	run -0 --separate-stderr dataspoc-pipe init
	assert_equal "$output" "Created $DATASPOC_PIPE_HOME
  pipelines/   one NAME.yaml per pipeline
  sources/     tap configs (JSON)
  transforms/  jq programs

Next: dataspoc-pipe add NAME (a wizard; --tap TAP ... --yes for scripts),
then dataspoc-pipe validate NAME and dataspoc-pipe run NAME."
	run -0 find "$DATASPOC_PIPE_HOME" -printf '%P %y\n'
	run -0 sort <<<"$output"
	assert_output " d
config.yaml f
pipelines d
sources d
transforms d"
	# config.yaml is all comments: a pipeline loads with it
	run -1 grep -v '^#' "$DATASPOC_PIPE_HOME/config.yaml"
	assert_output ""

	echo "# mine" >>"$DATASPOC_PIPE_HOME/config.yaml"
	cp "$DATASPOC_PIPE_HOME/config.yaml" config.before
	touch "$DATASPOC_PIPE_HOME/pipelines/keep.yaml"
	run -0 --separate-stderr dataspoc-pipe init
	assert_line --index 0 "$DATASPOC_PIPE_HOME is ready (already initialised)"
	# a home with pipelines: the next step is to run them
	assert_line --index -1 "Next: dataspoc-pipe status, or dataspoc-pipe run NAME (pipelines/NAME.yaml)."
	diff -u config.before "$DATASPOC_PIPE_HOME/config.yaml"
	[ -e "$DATASPOC_PIPE_HOME/pipelines/keep.yaml" ]
}

@test "init without DATASPOC_PIPE_HOME uses ~/.dataspoc-pipe" {
	unset DATASPOC_PIPE_HOME
	rm -rf "$HOME/.dataspoc-pipe"
	run -0 dataspoc-pipe init
	assert_line --index 0 "Created $HOME/.dataspoc-pipe"
	[ -d "$HOME/.dataspoc-pipe/transforms" ]
}

@test "a pipeline runs from -c FILE.yaml, into a plain-path bucket" {
	use_tap tap-shop
	shop_records
	shop_stream "$FAKE_DIR/tap-shop/out"
	mkdir conf
	printf 'source:\n  tap: tap-shop\ndestination:\n  bucket: %s\n  format: jsonl\n' "$BATS_TEST_TMPDIR/plain" >conf/mine.yaml
	run -0 --separate-stderr dataspoc-pipe run -c conf/mine.yaml
	assert_equal "$output" "Running: mine
Done! 5 records in 2 stream(s)
  orders: 3
  users: 2"
	run -0 find plain -name '*.zst' -path 'plain/raw/shop/orders/dt=*'
	assert_output --regexp '^plain/raw/shop/orders/dt=[0-9-]{10}/orders_[0-9]{8}T[0-9]{6}Z-[0-9]{3}[0-9a-f]{6}_0000\.jsonl\.zst$'
	zstd -qdc "$output" >got
	diff -u orders.jsonl got
	[ -e plain/.dataspoc/state/mine/state.json ]
}

@test "the driver works through symlinks: its pipe-* siblings are found" {
	use_tap tap-shop
	shop_records
	shop_stream "$FAKE_DIR/tap-shop/out"
	printf 'source:\n  tap: tap-shop\ndestination:\n  bucket: %s\n  format: jsonl\n' "$BATS_TEST_TMPDIR/plain" >mine.yaml
	# ~/bin/dp -> links/dp2 -> the driver, with the pipe-* programs off PATH
	mkdir -p "$HOME/bin" links
	ln -s "$PIPE_BIN/dataspoc-pipe" links/dp2
	ln -s ../../links/dp2 "$HOME/bin/dp"
	run -0 --separate-stderr env PATH="$BATS_TEST_TMPDIR/bin:$TAPS:/usr/bin:/bin" "$HOME/bin/dp" run -c mine.yaml
	[[ $stderr != *"not found"* ]]
	assert_line --index 0 "Running: mine"
	assert_line --index 1 "Done! 5 records in 2 stream(s)"
	cd "$HOME/bin"
	run -0 --separate-stderr env PATH="$HOME/bin:$BATS_TEST_TMPDIR/bin:$TAPS:/usr/bin:/bin" dp run -c "$BATS_TEST_TMPDIR/mine.yaml"
	assert_line --index 0 "Running: mine"
}

@test "a small run starts no helper program the shell can do without; pipe-sink -n only for a transform" {
	# (each program started costs a small run about half a millisecond; issue #14)
	cat >"$BATS_TEST_TMPDIR/bin/tap-tiny" <<-'EOF'
	#!/bin/sh
	printf '%s\n' '{"type":"SCHEMA","stream":"s","schema":{"type":"object","properties":{"id":{"type":"integer"}}},"key_properties":["id"]}' \
		'{"type":"RECORD","stream":"s","record":{"id":1}}' '{"type":"STATE","value":{"s":1}}'
	EOF
	chmod +x "$BATS_TEST_TMPDIR/bin/tap-tiny"
	printf 'source:\n  tap: tap-tiny\ndestination:\n  bucket: %s\n  format: jsonl\n' "$BATS_TEST_TMPDIR/plain" \
		>"$DATASPOC_PIPE_HOME/pipelines/tiny.yaml"
	# the programs, pipe-sink and pipe-state through wrappers that say how
	# they were called
	mkdir progs
	ln -s "$PIPE_BIN"/pipe-* progs/
	rm progs/pipe-sink progs/pipe-state
	cp "$PIPE_BIN/dataspoc-pipe" progs/
	ln -s "$PIPE_BIN/../libexec" libexec
	printf '#!/bin/sh\nprintf "%%s\\n" "pipe-sink $*" >>%s/sinks\nexec %s "$@"\n' "$BATS_TEST_TMPDIR" "$PIPE_BIN/pipe-sink" >progs/pipe-sink
	printf '#!/bin/sh\nprintf "%%s\\n" "pipe-state $1" >>%s/states\nexec %s "$@"\n' "$BATS_TEST_TMPDIR" "$PIPE_BIN/pipe-state" >progs/pipe-state
	chmod +x progs/pipe-sink progs/pipe-state
	# helpers first on PATH that log their name when HELPER_LOG is set
	local h real
	# (no mktemp: pipe-tap -n -D makes the private folder; no setsid or sh:
	# pipe-stages runs the stages; no flock or rm: the programs lock, and
	# pipe-commit -d removes the folder)
	for h in basename cat dirname find flock grep id mktemp rm sed setsid sh tail tee true wc; do
		real=$(type -P "$h")
		printf '#!/bin/sh\n[ -z "${HELPER_LOG:-}" ] || printf "%%s\\n" %s >>"$HELPER_LOG"\nexec %s "$@"\n' "$h" "$real" \
			>"$BATS_TEST_TMPDIR/bin/$h"
		chmod +x "$BATS_TEST_TMPDIR/bin/$h"
	done
	run -0 --separate-stderr env HELPER_LOG="$BATS_TEST_TMPDIR/helpers" progs/dataspoc-pipe run tiny
	assert_output "Running: tiny
Done! 1 record in 1 stream(s)
  s: 1"
	[ ! -e helpers ] || { cat helpers; false; }
	assert_equal "$(cat sinks)" "pipe-sink tiny"
	# the run id is pipe-tap -n -D's: no pipe-state new-run-id
	assert_equal "$(cat states)" "pipe-state get"
	# a transform: pipe-sink -n checks it before anything is touched
	mkdir "$DATASPOC_PIPE_HOME/transforms"
	echo '.' >"$DATASPOC_PIPE_HOME/transforms/tiny.jq"
	rm sinks
	run -0 --separate-stderr progs/dataspoc-pipe run tiny
	assert_equal "$(cat sinks)" "pipe-sink -n tiny
pipe-sink tiny"
	# a Python transform alone is refused by that check, before the run
	rm "$DATASPOC_PIPE_HOME/transforms/tiny.jq" sinks
	echo 'def transform(df): return df' >"$DATASPOC_PIPE_HOME/transforms/tiny.py"
	run -2 --separate-stderr progs/dataspoc-pipe run tiny
	assert_equal "$(cat sinks)" "pipe-sink -n tiny"
	# under -c FILE the name is the file's, without .yml
	mv "$DATASPOC_PIPE_HOME/transforms/tiny.py" "$DATASPOC_PIPE_HOME/transforms/other.py"
	cp "$DATASPOC_PIPE_HOME/pipelines/tiny.yaml" other.yml
	rm sinks
	run -2 --separate-stderr progs/dataspoc-pipe run -c other.yml
	assert_equal "$(cat sinks)" "pipe-sink -n -c other.yml"
	# checkpoint_every: pipe-tap -n -D says so (no pipe-sink -n), and
	# pipe-commit -k runs beside the sink
	rm "$DATASPOC_PIPE_HOME/transforms/other.py" sinks
	printf 'source:\n  tap: tap-tiny\ndestination:\n  bucket: %s\n  format: jsonl\nincremental:\n  enabled: true\n  checkpoint_every: 1h\n' \
		"$BATS_TEST_TMPDIR/plain" >"$DATASPOC_PIPE_HOME/pipelines/ck.yml"
	run -0 --separate-stderr progs/dataspoc-pipe run ck
	assert_equal "$(cat sinks)" "pipe-sink ck"
	run -0 jq -r .status plain/.dataspoc/logs/ck/*.json
	assert_output success
}

@test "run: a private folder that cannot be made in TMPDIR is said in one line, exit 1, nothing touched" {
	use_tap tap-shop
	shop_records
	shop_stream "$FAKE_DIR/tap-shop/out"
	write_pipeline shop tap-shop false
	TMPDIR=$BATS_TEST_TMPDIR/nowhere run -1 --separate-stderr dataspoc-pipe run shop
	assert_output ""
	assert_stderr "dataspoc-pipe: cannot create a private directory in '$BATS_TEST_TMPDIR/nowhere': No such file or directory"
	bucket_untouched
	[ ! -e "$FAKE_DIR/tap-shop/runs" ]
}

@test "run NAME is under way before the driver's other commands are read (dash parses as it goes): a copy cut after them still runs" {
	use_tap tap-shop
	shop_records
	shop_stream "$FAKE_DIR/tap-shop/out"
	write_pipeline shop tap-shop false
	mkdir cut
	ln -s "$PIPE_BIN"/pipe-* cut/
	ln -s "$PIPE_BIN/../libexec" .
	# up to the first of the other commands' functions
	sed '/^# ---- the other commands/,$d' "$PIPE_BIN/dataspoc-pipe" >cut/dataspoc-pipe
	! grep -q '^cmd_status()' cut/dataspoc-pipe
	chmod +x cut/dataspoc-pipe
	run -0 --separate-stderr cut/dataspoc-pipe run shop
	assert_output "Running: shop
Done! 5 records in 2 stream(s)
  orders: 3
  users: 2"
}

@test "the programs of a local run map neither libcurl nor libcrypto (loaded by the first s3/gs/az call), nor libsnappy" {
	local p
	for p in pipe-state pipe-tap pipe-sink pipe-commit; do
		run ldd "$PIPE_BIN/$p"
		# (pipe-tap is linked statically where libc.a is there: it maps nothing)
		[ "$status" -eq 0 ] || { [ "$p" = pipe-tap ] && [[ $output == *"not a dynamic executable"* ]]; }
		refute_output --partial libcurl
		refute_output --partial libcrypto
		# (C++: libstdc++ came with it; loaded by the first snappy Parquet page)
		refute_output --partial libsnappy
		refute_output --partial libstdc++
	done
}

@test "-v shows the tap's stderr as it runs" {
	shop_pipeline
	echo 'tap-shop: hello' >"$FAKE_DIR/tap-shop/stderr"
	run -0 --separate-stderr dataspoc-pipe run -v shop
	assert_stderr "tap-shop: hello
  orders: 3 records...
  users: 2 records..."
	run -0 --separate-stderr dataspoc-pipe run shop
	assert_stderr "  orders: 3 records...
  users: 2 records..."
}

@test "-v into a redirected log (> v.out 2>&1): the tap's lines go through the inherited descriptor, nothing clobbered" {
	shop_pipeline
	seq 1 50 | sed 's/^/tap-shop: line /' >"$FAKE_DIR/tap-shop/stderr"
	dataspoc-pipe run -v shop >v.out 2>&1
	# every line whole, in order, none lost or overwritten by another writer
	grep '^tap-shop: ' v.out >tap.lines
	diff -u "$FAKE_DIR/tap-shop/stderr" tap.lines
	grep -v '^tap-shop: ' v.out | LC_ALL=C sort >rest
	expect_file rest <<-'EOF'
	  orders: 3
	  orders: 3 records...
	  users: 2
	  users: 2 records...
	Done! 5 records in 2 stream(s)
	Running: shop
	EOF
}

@test "a failed run's log keeps the tap's last 20 stderr lines, secrets masked" {
	printf '{"user": "bob", "password": "hunter2xyz", "api_key": "K-77-secret"}\n' >tapconf.json
	PIPELINE_CONFIG=$BATS_TEST_TMPDIR/tapconf.json shop_pipeline
	echo 1 >"$FAKE_DIR/tap-shop/exit"
	{
		seq 1 10 | sed 's/^/early line /'
		echo 'connecting as bob with hunter2xyz'
		echo 'header X-Key: K-77-secret'
		echo 'retrying: token=abc123 user=bob'
		echo 'dsn postgres://bob:pw123@db:5432/shop'
		echo '{"password": "in json"} sent'
		seq 1 11 | sed 's/^/late line /'
		echo "cannot open '/path/to/my_table.csv'"
	} >"$FAKE_DIR/tap-shop/stderr"
	run -1 --separate-stderr dataspoc-pipe run shop
	assert_equal "${stderr_lines[-1]}" "dataspoc-pipe: run 'shop' failed: tap-shop exited with status 1"
	bucket_cat ".dataspoc/logs/shop/$(run_ids shop).json" | jq -r '.tap_stderr[]' >got
	{
		seq 8 10 | sed 's/^/early line /'
		echo 'connecting as bob with ***'
		echo 'header X-Key: ***'
		echo 'retrying: token=*** user=bob'
		echo 'dsn postgres://bob:***@db:5432/shop'
		echo '{"password": "***"} sent'
		seq 1 11 | sed 's/^/late line /'
		echo "cannot open '/path/to/my_table.csv'"
	} | expect_file got
	run -1 grep -r -e hunter2xyz -e K-77-secret -e abc123 -e pw123 "$BUCKET_DIR"
}

@test "progress: a line per stream every 10 s off a terminal, whatever the record rate; 1 record" {
	# 3 records over 11 s: before, a line came only every 4,096 records
	cat >"$BATS_TEST_TMPDIR/bin/tap-slow" <<-'EOF'
	#!/bin/sh
	echo '{"type":"RECORD","stream":"s","record":{"n":1}}'
	sleep 11
	echo '{"type":"RECORD","stream":"s","record":{"n":2}}'
	echo '{"type":"RECORD","stream":"t","record":{"n":1}}'
	EOF
	chmod +x "$BATS_TEST_TMPDIR/bin/tap-slow"
	write_pipeline slow tap-slow
	run -0 --separate-stderr dataspoc-pipe run slow
	assert_stderr "  s: 1 record...
  s: 2 records...
  t: 1 record..."
}

@test "progress: a live line on a terminal; with -v, where the tap's lines go, lines only" {
	command -v script >/dev/null || skip "script(1) is not installed"
	cat >"$BATS_TEST_TMPDIR/bin/tap-tty" <<-'EOF'
	#!/bin/sh
	for n in 1 2 3 4; do
		echo "{\"type\":\"RECORD\",\"stream\":\"s\",\"record\":{\"n\":$n}}"
		echo "tap-tty: sent $n" >&2
		sleep 0.4
	done
	EOF
	chmod +x "$BATS_TEST_TMPDIR/bin/tap-tty"
	write_pipeline tty tap-tty
	script -qec "dataspoc-pipe run tty" /dev/null >tty.out
	grep -q $'\r\033\[K  s: [0-9] record' tty.out
	script -qec "dataspoc-pipe run -v tty" /dev/null >tty-v.out
	grep -q 'tap-tty: sent 4' tty-v.out
	run -1 grep -c $'\033\[K' tty-v.out
}

@test "progress: a live line is ended before a failure's words (a tap that fails, SIGINT)" {
	command -v script >/dev/null || skip "script(1) is not installed"
	cat >"$BATS_TEST_TMPDIR/bin/tap-dies" <<-'EOF'
	#!/bin/sh
	for n in 1 2 3; do
		echo "{\"type\":\"RECORD\",\"stream\":\"s\",\"record\":{\"n\":$n}}"
		sleep 0.4
	done
	echo "tap-dies: the source went away" >&2
	exit 1
	EOF
	chmod +x "$BATS_TEST_TMPDIR/bin/tap-dies"
	write_pipeline dies tap-dies
	script -qec "dataspoc-pipe run dies" /dev/null >tty.out || :
	grep -q $'\r\033\[K  s: [0-9] record' tty.out
	# no word of the failure on the live line: each starts a line of its own
	run -1 grep -a $'records*\\.\\.\\.[^\r]*dataspoc-pipe:' tty.out
	grep -a -q -E $'(^|\r\033\[K)dataspoc-pipe: run .dies. failed: tap-dies exited with status 1\r*$' tty.out
	# SIGINT: the terminal's ^C, then the failure on a line of its own
	cat >"$BATS_TEST_TMPDIR/bin/tap-dies" <<-'EOF'
	#!/bin/sh
	n=0
	while :; do
		n=$((n + 1))
		echo "{\"type\":\"RECORD\",\"stream\":\"s\",\"record\":{\"n\":$n}}"
		sleep 0.2
	done
	EOF
	# (a suite started in the background inherits SIGINT ignored: give it back)
	script -qec '(sleep 1.5; kill -INT $$) & exec env --default-signal=INT dataspoc-pipe run dies' \
		/dev/null >tty.out || :
	grep -q $'\r\033\[K  s: [0-9] record' tty.out
	run -1 grep -a $'records*\\.\\.\\.[^\r]*dataspoc-pipe:' tty.out
	grep -a -q -E $'(^|\r\033\[K)dataspoc-pipe: run .dies. failed: interrupted by SIGINT\r*$' tty.out
}

# --- whole runs (helpers/pipeline_scenarios.bash) -----------------------------------------------

@test "full run: the summary, the layout, every record byte for byte" {
	scenario_full_run
}

@test "gzip compression" {
	scenario_compression gzip
}

@test "no compression" {
	scenario_compression none
}

@test "files roll over at max_file_size: every record once, in order" {
	scenario_rollover
}

@test "zstd files roll over too, each a whole frame" {
	scenario_rollover_zstd
}

@test "state.json is the last STATE value, pretty-printed as jq does" {
	scenario_state_pretty
}

@test "incremental: the next run gets --state and lands beside the first" {
	scenario_incremental
}

@test "--full: no --state; the state is kept when it fails, replaced when it succeeds" {
	scenario_full_flag
}

@test "incremental disabled: no --state; a run replaces the stream's snapshot" {
	scenario_snapshot_pipeline
}

@test "the recorded tap-postgres output, run 1 then run 2 with its state" {
	scenario_tap_postgres
}

@test "the manifest: tables, columns, key properties and stats" {
	scenario_manifest
}

@test "a tap that exits 1 halfway changes nothing but the run log" {
	scenario_tap_fails
}

@test "malformed line: bad JSON" {
	scenario_malformed '{"type":"RECORD","stream":"orders","record":{"id":9}' \
		'<stdin>:3:53: invalid JSON: unexpected end of input'
}

@test "malformed line: no type" {
	scenario_malformed '{"stream":"orders","record":{"id":9}}' \
		'<stdin>:3:1: message without "type"'
}

@test "malformed line: RECORD without stream" {
	scenario_malformed '{"type":"RECORD","record":{"id":9}}' \
		'<stdin>:3:1: RECORD without "stream"'
}

@test "malformed line: a truncated last line" {
	scenario_malformed '{"type":"RECORD","stream":"orders","rec' \
		'<stdin>:3:40: invalid JSON: unterminated string'
}

@test "stream names cannot leave their table folder" {
	scenario_stream_names
}

@test "kill -9 pipe-tap: the next run finds the bucket as before" {
	scenario_kill_pipe_tap
}

@test "kill -9 the tap: the next run finds the bucket as before" {
	scenario_kill_tap
}

@test "kill -9 pipe-sink: the next run finds the bucket as before" {
	scenario_kill_pipe_sink
}

@test "kill -9 the driver: the next run takes its lock over and cleans up" {
	scenario_kill_driver
}

@test "SIGTERM to the driver stops every stage and changes nothing but the log" {
	scenario_sigterm
}

@test "kill -9 pipe-commit mid-commit: the next run finishes the commit" {
	scenario_kill_pipe_commit
}

@test "a commit cut short by hand: the next run finishes it" {
	scenario_partial_commit
}

@test "a lock left by a dead process on this host is taken over at once" {
	scenario_lock_dead_holder
}

@test "a lock held by a live process refuses the run and changes nothing" {
	scenario_lock_live_holder
}

@test "a lock from another host is taken over only once expired" {
	scenario_lock_other_host
}

@test "two pipelines into one bucket at once: own states, one manifest" {
	scenario_two_pipelines
}

@test "config error: missing tap" {
	scenario_missing_tap
}

@test "config error: unknown key" {
	scenario_unknown_key
}

@test "config error: wrong type" {
	scenario_wrong_type
}

@test "config error: invalid pipeline name" {
	scenario_invalid_name
}
