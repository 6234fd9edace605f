#!/usr/bin/env bats
# pipe-tap: runs a pipeline's tap, copies its stream, ends it with one line
# saying how the tap ended, and exits with the tap's status.

load helpers/common

setup() {
	pipe_setup
	use_tap tap-one
	write_pipeline one tap-one
	T=$FAKE_DIR/tap-one
	printf '%s\n' '{"type":"SCHEMA","stream":"s","schema":{"properties":{}},"key_properties":[]}' \
		'{"type":"RECORD","stream":"s","record":{"big":12345678901234567891,"u":"\u00e9"}}' \
		'{"type":"STATE","value":{"bookmarks":{"s":1}}}' >"$T/out"
}

teardown() {
	pipe_teardown
}

END_OK='{"type":"DATASPOC_TAP_END","status":"success","exit_status":0}'
USAGE='usage: pipe-tap [-hnsv] [-D PID] [-l FILE] NAME | -c FILE.yaml'

# pipe-tap's output: the tap's, then the end line given.
expect_dump() {	# dump-file end-line
	{ cat "$T/out"; printf '%s\n' "$2"; } >want
	diff -u want "$1"
}

@test "-h prints the help on stdout" {
	run -0 --separate-stderr pipe-tap -h
	assert_line --index 0 "usage: pipe-tap [-hnsv] [-D PID] [-l FILE] NAME"
	assert_line "  {\"type\":\"DATASPOC_TAP_END\",\"status\":\"success\",\"exit_status\":0}"
	assert_stderr ""
	local help=$output
	run -0 pipe-tap --help
	assert_equal "$output" "$help"
}

@test "bad usage prints the usage on stderr and exits 2" {
	run -2 --separate-stderr pipe-tap -x one
	assert_equal "$output" ""
	assert_stderr "pipe-tap: invalid option -- 'x'
$USAGE"
	run -2 --separate-stderr pipe-tap one two
	assert_equal "$output" ""
	assert_stderr "$USAGE"
	run -2 --separate-stderr pipe-tap
	assert_stderr "pipe-tap: no pipeline: give a NAME or -c FILE"
	run -2 --separate-stderr pipe-tap -c "$DATASPOC_PIPE_HOME/pipelines/one.yaml" one
	assert_stderr "pipe-tap: give either a pipeline NAME or -c FILE, not both"
	[ ! -e "$T/runs" ]
}

@test "the tap's stream, byte for byte, then the success end line" {
	pipe-tap one </dev/null >dump
	expect_dump dump "$END_OK"
	expect_file_empty "$T/argv"
	bucket_untouched
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

@test "-c FILE.yaml instead of a name" {
	pipe-tap -c "$DATASPOC_PIPE_HOME/pipelines/one.yaml" </dev/null >dump
	expect_dump dump "$END_OK"
}

@test "a tap's exit status is passed on, and named in the end line" {
	echo 3 >"$T/exit"
	run -3 --separate-stderr pipe-tap one </dev/null
	assert_stderr "pipe-tap: tap-one exited with status 3"
	printf '%s\n' "$output" >dump
	expect_dump dump '{"type":"DATASPOC_TAP_END","status":"failure","exit_status":3,"error":"tap-one exited with status 3"}'
}

@test "a tap killed by signal n: 128+n" {
	echo TERM >"$T/signal"
	run -143 --separate-stderr pipe-tap one </dev/null
	assert_stderr "pipe-tap: tap-one was killed by signal 15 (Terminated)"
	printf '%s\n' "$output" >dump
	expect_dump dump '{"type":"DATASPOC_TAP_END","status":"failure","exit_status":143,"error":"tap-one was killed by signal 15 (Terminated)"}'
	echo KILL >"$T/signal"
	run -137 --separate-stderr pipe-tap one </dev/null
	assert_stderr "pipe-tap: tap-one was killed by signal 9 (Killed)"
}

@test "a tap not found: 127, with a hint" {
	write_pipeline one tap-nowhere
	run -127 --separate-stderr pipe-tap one </dev/null
	assert_stderr "pipe-tap: tap-nowhere not found on PATH — install it or set source.tap"
	assert_output '{"type":"DATASPOC_TAP_END","status":"failure","exit_status":127,"error":"tap-nowhere not found on PATH — install it or set source.tap"}'
	write_pipeline one /no/such/tap-x
	run -127 --separate-stderr pipe-tap one </dev/null
	assert_stderr "pipe-tap: /no/such/tap-x not found — install it or set source.tap"
}

@test "a tap that cannot be run: 126" {
	printf '#!/bin/sh\necho no\n' >"$BATS_TEST_TMPDIR/bin/tap-noexec"
	chmod 644 "$BATS_TEST_TMPDIR/bin/tap-noexec"
	write_pipeline one tap-noexec
	run -126 --separate-stderr pipe-tap one </dev/null
	assert_stderr "pipe-tap: tap-noexec cannot be run: Permission denied"
	assert_output '{"type":"DATASPOC_TAP_END","status":"failure","exit_status":126,"error":"tap-noexec cannot be run: Permission denied"}'
}

@test "-n checks the config and the tap, and runs nothing" {
	run -0 --separate-stderr pipe-tap -n one </dev/null
	assert_output ""
	assert_stderr ""
	[ ! -e "$T/runs" ]
	write_pipeline one tap-nowhere
	run -127 --separate-stderr pipe-tap -n one </dev/null
	assert_output ""
	assert_stderr "pipe-tap: tap-nowhere not found on PATH — install it or set source.tap"
}

@test "without HOME, the user's home from the password database: getent, else /etc/passwd, else none" {
	local home
	home=$(getent passwd "$(id -u)" | cut -d: -f6)
	[ -n "$home" ]
	run -2 --separate-stderr env -u HOME -u DATASPOC_PIPE_HOME pipe-tap -n nosuch </dev/null
	assert_stderr "pipe-tap: no pipeline 'nosuch' (looked for ${home%/}/.dataspoc-pipe/pipelines/nosuch.yaml)"
	# no getent to run: /etc/passwd, read by pipe-tap itself
	run -2 --separate-stderr env -u HOME -u DATASPOC_PIPE_HOME PATH=/nonexistent "$PIPE_BIN/pipe-tap" -n nosuch </dev/null
	assert_stderr "pipe-tap: no pipeline 'nosuch' (looked for ${home%/}/.dataspoc-pipe/pipelines/nosuch.yaml)"
	# a user no database knows (a static pipe-tap's getpwuid(3) once crashed on one)
	if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && ! getent passwd 54321 >/dev/null; then
		run -2 --separate-stderr setpriv --reuid=54321 --regid=54321 --clear-groups \
			env -u HOME -u DATASPOC_PIPE_HOME "$PIPE_BIN/pipe-tap" -n nosuch </dev/null
		assert_stderr "pipe-tap: no pipeline 'nosuch' (looked for /.dataspoc-pipe/pipelines/nosuch.yaml)"
	fi
}

@test "pipe-tap and pipe-stages, linked statically, hold no getpwuid(3): the build prints no glibc warning for them, and pipe-stages finds the home as pipe-tap" {
	# (the warning, twice in every build, is about this symbol)
	run -0 nm "$PIPE_BIN/pipe-tap" "$PIPE_BIN/pipe-stages"
	refute_output --partial getpwuid
	# the dynamic programs ask getpwuid(3) still: its weak reference is bound
	run -0 nm -D "$PIPE_BIN/pipe-state"
	assert_output --partial getpwuid
	local home
	home=$(getent passwd "$(id -u)" | cut -d: -f6)
	run -2 --separate-stderr env -u HOME -u DATASPOC_PIPE_HOME pipe-state show nosuch </dev/null
	assert_stderr "pipe-state: no pipeline 'nosuch' (looked for ${home%/}/.dataspoc-pipe/pipelines/nosuch.yaml)"
}

@test "-n -D PID makes the driver's private folder: its path on stdout, then a run id, what pipe-sink -n has to check and whether pipe-merge has work once the checks passed, stderr into its check.err, -D only with -n" {
	local dir
	run -0 --separate-stderr pipe-tap -n -D $$ one </dev/null
	assert_stderr ""
	assert_equal "${#lines[@]}" 4
	assert_equal "${lines[2]}" none
	assert_equal "${lines[3]}" none
	dir=${lines[0]}
	[[ $dir == "$TMPDIR"/dataspoc-pipe.?????? ]]
	[ -d "$dir" ] && [ ! -L "$dir" ]
	assert_equal "$(stat -c %a "$dir")" 700
	expect_file_empty "$dir/check.err"
	# the run id, as new-run-id makes one
	[[ ${lines[1]} =~ ^[0-9]{8}T[0-9]{6}Z-[0-9a-f]+$ ]]
	run -0 pipe-state get -r "${lines[1]}" one
	run -0 pipe-state unlock one
	rm -rf "$dir"
	# a transform (or only a folder of transforms that cannot be searched)
	# is pipe-sink -n's to check; checkpoints alone are said here
	mkdir "$DATASPOC_PIPE_HOME/transforms"
	run -0 pipe-tap -n -D $$ one </dev/null
	assert_equal "${lines[2]}" none
	rm -rf "${lines[0]}"
	ln -s nowhere "$DATASPOC_PIPE_HOME/transforms/one.jq"
	run -0 pipe-tap -n -D $$ one </dev/null
	assert_equal "${lines[2]}" transform
	rm -rf "${lines[0]}" "$DATASPOC_PIPE_HOME/transforms/one.jq"
	touch "$DATASPOC_PIPE_HOME/transforms/one.py"
	run -0 pipe-tap -n -D $$ one </dev/null
	assert_equal "${lines[2]}" transform
	rm -rf "${lines[0]}" "$DATASPOC_PIPE_HOME/transforms"
	printf '  checkpoint_every: 10m\n' >>"$DATASPOC_PIPE_HOME/pipelines/one.yaml"
	run -0 pipe-tap -n -D $$ one </dev/null
	assert_equal "${lines[2]}" checkpoints
	rm -rf "${lines[0]}"
	# a load_method is pipe-merge's (issue #27)
	write_pipeline one tap-one true "format: parquet" "load_method: upsert"
	run -0 pipe-tap -n -D $$ one </dev/null
	assert_equal "${lines[3]}" merge
	rm -rf "${lines[0]}"
	# what it says once the folder is there goes into check.err; no run id
	write_pipeline one tap-nowhere
	run -127 --separate-stderr pipe-tap -n -D $$ one </dev/null
	assert_stderr ""
	assert_equal "${#lines[@]}" 1
	expect_file "$output/check.err" <<<"pipe-tap: tap-nowhere not found on PATH — install it or set source.tap"
	rm -rf "$output"
	run -2 --separate-stderr pipe-tap -D $$ one </dev/null
	assert_output ""
	assert_stderr "$USAGE"
	# a folder that cannot be made: said on stderr, nothing on stdout
	TMPDIR=$BATS_TEST_TMPDIR/nowhere run -1 --separate-stderr pipe-tap -n -D $$ one </dev/null
	assert_output ""
	assert_stderr "pipe-tap: cannot create a private directory in '$BATS_TEST_TMPDIR/nowhere': No such file or directory"
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

@test "-n -D PID: the tap's discovery sees the folder as DATASPOC_PIPE_RUN_DIR, locked; pipe-tap marks it changed as it ends" {
	cat >"$BATS_TEST_TMPDIR/bin/tap-disc" <<-EOF
	#!/bin/sh
	case " \$* " in
	*" --discover "*)
		echo "\$DATASPOC_PIPE_RUN_DIR" >"$BATS_TEST_TMPDIR/seen"
		flock -n "\$DATASPOC_PIPE_RUN_DIR" true || echo locked >>"$BATS_TEST_TMPDIR/seen"
		# a discovery longer than the sweep's minute
		touch -d '2 minutes ago' "\$DATASPOC_PIPE_RUN_DIR"
		echo '{"streams":[{"tap_stream_id":"s","stream":"s","schema":{},"metadata":[]}]}' ;;
	esac
	EOF
	chmod +x "$BATS_TEST_TMPDIR/bin/tap-disc"
	{
		printf 'source:\n  tap: tap-disc\n  streams: [s]\ndestination:\n'
		bucket_yaml
	} >"$DATASPOC_PIPE_HOME/pipelines/disc.yaml"
	run -0 --separate-stderr pipe-tap -n -D $$ disc </dev/null
	local dir=${lines[0]}
	expect_file "$BATS_TEST_TMPDIR/seen" <<<"$dir"$'\nlocked'
	run -0 find "$dir" -maxdepth 0 -mmin -1
	[ -n "$output" ]
	flock -n "$dir" true
	rm -rf "$dir"
}

@test "an inline config goes to a 0600 file in a 0700 folder, removed afterwards" {
	cat >"$DATASPOC_PIPE_HOME/pipelines/one.yaml" <<-EOF
	source:
	  tap: tap-one
	  config:
	    host: db.example
	    port: 5432
	    ssl: true
	    password: "s3cret"
	    tags: [a, "b c"]
	destination:
	$(bucket_yaml)
	EOF
	run -0 --separate-stderr pipe-tap one </dev/null
	assert_stderr ""
	refute_output --partial s3cret
	run -0 sed -n 1p "$T/argv"
	assert_output "--config"
	run -0 sed -n 2p "$T/argv"
	assert_output --regexp "^$TMPDIR/dataspoc-pipe\.[^/]+/config\.json\$"
	[ ! -e "$output" ]
	printf '%s' '{"host":"db.example","port":5432,"ssl":true,"password":"s3cret","tags":["a","b c"]}' >want
	diff -u want "$T/config-in"
	run -0 cat "$T/config-mode"
	assert_output "600 700"
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

@test "a config file is passed as it is" {
	mkdir -p "$DATASPOC_PIPE_HOME/sources"
	echo '{"host": "db"}' >"$DATASPOC_PIPE_HOME/sources/one.json"
	cat >"$DATASPOC_PIPE_HOME/pipelines/one.yaml" <<-EOF
	source:
	  tap: tap-one
	  config: $DATASPOC_PIPE_HOME/sources/one.json
	destination:
	$(bucket_yaml)
	EOF
	pipe-tap one </dev/null >dump
	printf '%s\n' --config "$DATASPOC_PIPE_HOME/sources/one.json" >want
	diff -u want "$T/argv"
	diff -u "$DATASPOC_PIPE_HOME/sources/one.json" "$T/config-in"
}

@test "--state only for a non-empty object, with the state's bytes" {
	pipe-tap one <<<'{}' >dump
	expect_file_empty "$T/argv"
	expect_dump dump "$END_OK"
	pipe-tap one </dev/null >dump
	expect_file_empty "$T/argv"
	printf '' | pipe-tap one >dump
	expect_file_empty "$T/argv"

	printf '%s\n' '{"bookmarks":{"s":{"id":12345678901234567891,"u":"\u00e9"}}}' >state.json
	pipe-tap one <state.json >dump
	expect_dump dump "$END_OK"
	run -0 sed -n 1p "$T/argv"
	assert_output "--state"
	run -0 sed -n 2p "$T/argv"
	assert_output --regexp "^$TMPDIR/dataspoc-pipe\.[^/]+/state\.json\$"
	diff -u state.json "$T/state-in"
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

@test "a state that is not a JSON object: exit 2, the tap does not run" {
	run -2 --separate-stderr pipe-tap one <<<'[1, 2]'
	assert_stderr "pipe-tap: <stdin>: the state is not a JSON object"
	assert_output '{"type":"DATASPOC_TAP_END","status":"failure","exit_status":2,"error":"invalid state on stdin"}'
	run -2 --separate-stderr pipe-tap one <<<'{"a":'
	assert_stderr "pipe-tap: <stdin>:1:6: the state is not JSON: unexpected end of input"
	[ ! -e "$T/runs" ]
}

@test "a last line without its newline gets one before the end line" {
	printf '{"type":"RECORD","stream":"s","record":{}}' >"$T/out"
	pipe-tap one </dev/null >dump
	printf '%s\n' '{"type":"RECORD","stream":"s","record":{}}' "$END_OK" >want
	diff -u want dump
}

@test "what the tap wrote flows on while the tap pauses: nothing waits for more" {
	local pt
	: >"$T/block"
	pipe-tap one </dev/null >dump &
	pt=$!
	BG_PIDS="$BG_PIDS $pt"
	wait_until test -e "$T/ready"
	# all of it, the STATE line included, while the tap still waits
	wait_until cmp -s "$T/out" dump
	echo '{"type":"RECORD","stream":"s","record":{"after":1}}' >"$T/after"
	: >"$T/release"
	wait "$pt"
	{ cat "$T/out" "$T/after"; printf '%s\n' "$END_OK"; } >want
	diff -u want dump
}

@test "a tap that writes line by line: every byte, in order" {
	cat >"$BATS_TEST_TMPDIR/bin/tap-lines" <<-'EOF'
	#!/bin/sh
	i=0
	while [ $i -lt 3000 ]; do
		i=$((i + 1))
		echo "{\"type\":\"RECORD\",\"stream\":\"s\",\"record\":{\"i\":$i}}"
		[ $((i % 500)) -ne 0 ] || echo "{\"type\":\"STATE\",\"value\":{\"i\":$i}}"
	done
	printf '{"type":"RECORD","stream":"s","record":{"last":1}}'
	EOF
	chmod +x "$BATS_TEST_TMPDIR/bin/tap-lines"
	write_pipeline lines tap-lines
	pipe-tap lines </dev/null >dump
	{ tap-lines; printf '\n%s\n' "$END_OK"; } >want
	diff -u want dump
}

# The capacity of the pipe on descriptor $1 (F_GETPIPE_SZ), once stdin is read to its end.
pipe_size() {
	python3 -c 'import fcntl, sys; sys.stdin.buffer.read(); print(fcntl.fcntl(int(sys.argv[1]), fcntl.F_GETPIPE_SZ))' "$1"
}

@test "the tap's stdout pipe and pipe-tap's own are grown to 1 MiB, or the kernel's largest" {
	local max want st
	max=$(cat /proc/sys/fs/pipe-max-size)
	want=$((max < 1048576 ? max : 1048576))
	cat >"$BATS_TEST_TMPDIR/bin/tap-size" <<-EOF
	#!/bin/sh
	python3 -c 'import fcntl; print(fcntl.fcntl(3, fcntl.F_GETPIPE_SZ))' 3>&1 </dev/null >"$FAKE_DIR/tap-size.out"
	echo '{"type":"RECORD","stream":"s","record":{}}'
	EOF
	chmod +x "$BATS_TEST_TMPDIR/bin/tap-size"
	write_pipeline size tap-size
	{ pipe-tap size </dev/null; echo $? >st; } | pipe_size 0 >sink-size
	read -r st <st
	assert_equal "$st" 0
	read -r st <"$FAKE_DIR/tap-size.out"
	assert_equal "$st" "$want"
	read -r st <sink-size
	assert_equal "$st" "$want"
}

@test "the tap's stderr: shown, or appended to the file of -l" {
	echo 'INFO hello' >"$T/stderr"
	run -0 --separate-stderr pipe-tap one </dev/null
	assert_stderr "INFO hello"
	echo 'earlier' >tap.log
	run -0 --separate-stderr pipe-tap -l tap.log one </dev/null
	assert_stderr ""
	printf '%s\n' earlier 'INFO hello' >want
	diff -u want tap.log
	# a file that is not there is made at the tap's first byte: a tap that
	# says nothing leaves none
	rm tap.log
	run -0 --separate-stderr pipe-tap -l tap.log one </dev/null
	assert_stderr ""
	expect_file tap.log <<<"INFO hello"
	rm tap.log "$T/stderr"
	run -0 --separate-stderr pipe-tap -l tap.log one </dev/null
	assert_stderr ""
	[ ! -e tap.log ]
}

@test "a tap given as words with arguments, or as a YAML list" {
	write_pipeline one "tap-one --flag 'two words' \"x y\""
	pipe-tap one </dev/null >dump
	printf '%s\n' --flag 'two words' 'x y' >want
	diff -u want "$T/argv"
	write_pipeline one '[tap-one, "$HOME", "a  b", "*"]'
	pipe-tap one </dev/null >dump
	printf '%s\n' '$HOME' 'a  b' '*' >want
	diff -u want "$T/argv"
}

@test "SIGTERM to pipe-tap reaches the tap; the private folder still goes" {
	cat >"$DATASPOC_PIPE_HOME/pipelines/one.yaml" <<-EOF
	source:
	  tap: tap-one
	  config: {secret: 1}
	destination:
	$(bucket_yaml)
	EOF
	: >"$T/block"
	pipe-tap one </dev/null >dump 2>err &
	local pt=$! st=0
	BG_PIDS="$BG_PIDS $pt"
	wait_for "$T/ready"
	local tap ppid
	read -r tap ppid <"$T/pid"
	assert_equal "$ppid" "$pt"
	kill -TERM "$pt"
	wait "$pt" || st=$?
	assert_equal "$st" 143
	wait_until dead "$tap"
	expect_dump dump '{"type":"DATASPOC_TAP_END","status":"failure","exit_status":143,"error":"tap-one was killed by signal 15 (Terminated)"}'
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

@test "stdout on a full device: exit 1, the tap stopped, the error named" {
	run -1 --separate-stderr sh -c 'pipe-tap one </dev/null >/dev/full'
	assert_stderr "pipe-tap: cannot write the tap's output: No space left on device
pipe-tap: cannot write the end line: No space left on device"
}

# --- a tap that will not stop, and one that talks a lot ----------------------------

# The pipeline stub: tests/taps/tap-stubborn (it ignores SIGTERM and SIGPIPE)
# with an inline config, so that its private folder holds a file; a grace
# period of 1 s before SIGKILL.
stubborn() {
	ln -sf "$TAPS/tap-stubborn" "$BATS_TEST_TMPDIR/bin/tap-stub"
	S=$FAKE_DIR/tap-stub
	mkdir -p "$S"
	cat >"$DATASPOC_PIPE_HOME/pipelines/stub.yaml" <<-EOF
	source:
	  tap: tap-stub
	  config: {secret: 1}
	destination:
	$(bucket_yaml)
	EOF
	export DATASPOC_PIPE_KILL_GRACE=1
}

@test "its reader gone, a tap that ignores SIGTERM and SIGPIPE is killed after the grace period: 141" {
	local st=0 tap
	stubborn
	echo '{"type":"RECORD","stream":"s","record":{"n":1}}' >"$S/out"
	: >"$S/flood"
	mkfifo out.fifo
	head -c 1000 out.fifo >/dev/null &
	BG_PIDS="$BG_PIDS $!"
	# (the old pipe-tap sent SIGTERM and waited, its read end open: the
	# tap blocked on the full pipe for good, ended here by timeout: 137)
	timeout -k 5 60 pipe-tap stub </dev/null >out.fifo 2>err || st=$?
	assert_equal "$st" 141
	echo "pipe-tap: tap-stub did not stop within 1 s: killed" | expect_file err
	read -r tap <"$S/pid"
	dead "$tap"
	# (the janitor ends just after pipe-tap)
	wait_until no_process tap-janitor
	run -0 pids_of_test
	assert_output ""
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

@test "SIGTERM to pipe-tap, the tap ignoring it: killed after the grace period; 143, the folder gone" {
	local pt st=0 tap watchdog
	stubborn
	echo '{"type":"RECORD","stream":"s","record":{"n":1}}' >"$S/out"
	pipe-tap stub </dev/null >dump 2>err &
	pt=$!
	BG_PIDS="$BG_PIDS $pt"
	wait_for "$S/ready"
	read -r tap <"$S/pid"
	kill -TERM "$pt"
	# bounded: a pipe-tap still there after WAIT_LIMIT is killed (137), as
	# the old one, which waited for the tap for good, was
	(sleep "$WAIT_LIMIT"; kill -9 "$pt" 2>/dev/null) &
	watchdog=$!
	BG_PIDS="$BG_PIDS $watchdog"
	wait "$pt" || st=$?
	kill "$watchdog" 2>/dev/null || true
	assert_equal "$st" 143
	dead "$tap"
	run -0 tail -n 1 dump
	assert_output '{"type":"DATASPOC_TAP_END","status":"failure","exit_status":143,"error":"tap-stub did not stop within 1 s: killed"}'
	echo "pipe-tap: tap-stub did not stop within 1 s: killed" | expect_file err
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

@test "-l keeps the end of a tap's stderr: 64 to 128 KiB, from a line's start, to its last line" {
	local n
	seq -f 'INFO line %06g of a tap that talks' 1 200000 >"$T/stderr"
	echo earlier >tap.log
	run -0 --separate-stderr pipe-tap -l tap.log one </dev/null
	assert_stderr ""
	# (the old pipe-tap kept all of it, 6.6 MB)
	n=$(wc -c <tap.log)
	[ "$n" -ge 65536 ] && [ "$n" -le 131072 ] || { echo "tap.log: $n bytes" >&2; return 1; }
	tail -n "$(wc -l <tap.log)" "$T/stderr" | expect_file tap.log
	# what the file held is kept while it is short
	printf 'INFO one\n' >"$T/stderr"
	echo earlier >tap.log
	run -0 pipe-tap -l tap.log one </dev/null
	printf '%s\n' earlier 'INFO one' | expect_file tap.log
}

@test "-v with -l: the tap's stderr shown as it comes, and kept in the file" {
	printf 'INFO one\nINFO two\n' >"$T/stderr"
	run -0 --separate-stderr pipe-tap -v -l tap.log one </dev/null
	assert_stderr "INFO one
INFO two"
	printf '%s\n' 'INFO one' 'INFO two' | expect_file tap.log
}
