#!/usr/bin/env bats
# security.bats: what a run must never leave or show.
#
#   - an inline tap config goes to a 0600 file in a 0700 folder, removed on
#     every way out: success, failure, a tap that dies, a reader that goes
#     away, SIGTERM, SIGINT and SIGHUP to pipe-tap and to the driver, a
#     signal while the tap's catalog is made; after a kill -9 of every
#     process of a run, the next run's sweep removes it, and a live run's
#     folders are never swept;
#   - a tap password and AWS_SECRET_ACCESS_KEY appear nowhere: not on
#     stdout or stderr, not in the bucket (run logs, manifest, state, data),
#     not in any process's argv while a run is held open;
#   - nor do credential-shaped parts of any config value (an Azure
#     connection string's AccountKey=, a SAS token's sig=) or the
#     environment's credentials (AZURE_*, AWS_*) that a failing tap prints:
#     not on the terminal (its last words, run -v), not in the run log.

load helpers/common

PASSWORD=hunter2-Zq8sPassw0rd
AWS_SECRET=wJalrXUtnFEMIK7MDENGbPxRfiCYSECRETKEY

setup() {
	pipe_setup
	use_tap tap-sec
	T=$FAKE_DIR/tap-sec
	printf '%s\n' '{"type":"RECORD","stream":"s","record":{"n":1}}' '{"type":"STATE","value":{"n":1}}' >"$T/out"
	export AWS_SECRET_ACCESS_KEY=$AWS_SECRET AWS_ACCESS_KEY_ID=AKIAEXAMPLEKEYID
	sec_pipeline sec
}

teardown() {
	pipe_teardown
}

# sec_pipeline NAME [EXTRA-SOURCE-LINE...]: a pipeline with an inline config
# holding the password.
sec_pipeline() {
	local name=$1 line
	shift
	{
		printf 'source:\n  tap: tap-sec\n  config:\n    host: db.example\n    user: etl\n    password: "%s"\n' "$PASSWORD"
		for line; do
			printf '  %s\n' "$line"
		done
		printf 'destination:\n'
		bucket_yaml
		printf '  format: jsonl\nincremental:\n  enabled: true\n'
	} >"$DATASPOC_PIPE_HOME/pipelines/$name.yaml"
}

# The private folder pipe-tap made, from the tap's argv (--config PATH).
config_path() {
	sed -n '/^--config$/{n;p;}' "$T/argv"
}

# The tap got the password in a 0600 file, in a 0700 folder of TMPDIR that
# is gone now, as is everything else in TMPDIR.
expect_private_gone() {
	local path
	path=$(config_path)
	[[ $path == "$TMPDIR"/dataspoc-pipe.*/config.json ]] || { echo "config at '$path'" >&2; return 1; }
	run -0 cat "$T/config-mode"
	assert_output "600 700"
	grep -qF "\"password\":\"$PASSWORD\"" "$T/config-in"
	[ ! -e "$path" ] && [ ! -e "${path%/*}" ]
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

# No secret in FILE... (or on stdin); the files that hold one are named.
no_secret() {
	if [ $# -eq 0 ]; then
		! grep -qaF -e "$PASSWORD" -e "$AWS_SECRET"
	else
		! grep -rlaF -e "$PASSWORD" -e "$AWS_SECRET" "$@"
	fi
}

# Start `dataspoc-pipe run sec` with the tap held open after its first
# lines; DRIVER is its pid.
start_blocked() {
	: >"$T/block"
	rm -f "$T/ready" "$T/release"
	# (a script's background jobs ignore SIGINT unless told otherwise, and
	# SIGHUP too when the suite runs under nohup)
	env --default-signal=INT,HUP dataspoc-pipe run sec >run.out 2>run.err &
	DRIVER=$!
	BG_PIDS="$BG_PIDS $DRIVER"
	wait_for "$T/ready"
}

# --- the private config folder goes, whatever the way out ------------------------------

@test "inline config: success: 0600 in 0700, then gone" {
	run -0 --separate-stderr dataspoc-pipe run sec
	expect_private_gone
}

@test "inline config: a tap that fails: gone" {
	echo 3 >"$T/exit"
	run -1 --separate-stderr dataspoc-pipe run sec
	expect_private_gone
}

@test "inline config: a tap killed by a signal: gone" {
	echo KILL >"$T/signal"
	run -1 --separate-stderr dataspoc-pipe run sec
	assert_equal "${stderr##*$'\n'}" "dataspoc-pipe: run 'sec' failed: tap-sec was killed by signal 9 (Killed)"
	expect_private_gone
}

@test "inline config: the reader of pipe-tap goes away (EPIPE): gone, the tap stopped" {
	: >"$T/block"
	local st=0
	# head reads the first line and exits: pipe-tap's next write fails
	pipe-tap sec </dev/null 2>err | head -n 1 >first &
	wait_for "$T/ready"
	: >"$T/release"
	wait $! || st=$?
	wait_until no_process pipe-tap
	expect_private_gone
}

# pipe-tap alone, signalled while its tap runs: 128+n, the tap stopped, the
# folder gone, and the end line says how the tap ended.
pipe_tap_signal() {	# SIGNAL N
	local pt st=0 tap
	: >"$T/block"
	env --default-signal=INT,HUP pipe-tap sec </dev/null >dump 2>err &
	pt=$!
	BG_PIDS="$BG_PIDS $pt"
	wait_for "$T/ready"
	read -r tap _ <"$T/pid"
	kill -s "$1" "$pt"
	wait "$pt" || st=$?
	assert_equal "$st" $((128 + $2))
	wait_until dead "$tap"
	tail -n 1 dump | jq -r '"\(.status) \(.exit_status)"' >end.got
	echo "failure $((128 + $2))" | expect_file end.got
	expect_private_gone
}

@test "inline config: SIGTERM to pipe-tap: 143, gone" {
	pipe_tap_signal TERM 15
}

@test "inline config: SIGINT to pipe-tap: 130, gone" {
	pipe_tap_signal INT 2
}

@test "inline config: SIGHUP to pipe-tap: 129, gone" {
	pipe_tap_signal HUP 1
}

# SIGKILL cannot be caught: pipe-tap's janitor, a process that waits for its
# end, removes the folder.
@test "inline config: SIGKILL to pipe-tap: the folder still goes" {
	local pt path
	: >"$T/block"
	pipe-tap sec </dev/null >dump 2>err &
	pt=$!
	BG_PIDS="$BG_PIDS $pt"
	wait_for "$T/ready"
	path=$(config_path)
	[ -f "$path" ]
	kill -KILL "$pt"
	wait_until dead "$pt"
	dir_gone() { [ ! -e "${path%/*}" ]; }
	wait_until dir_gone
	: >"$T/release"
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

# The driver, signalled while the tap runs: 128+n, the lock released, a
# failure log naming the signal, nothing staged, every temporary file gone
# (its own and pipe-tap's).
driver_signal() {	# SIGNAL N
	local st=0 rid tap
	start_blocked
	read -r tap _ <"$T/pid"
	rid=$(bucket_cat .dataspoc/state/sec/lock | jq -r .run_id)
	[ -n "$rid" ]
	kill -s "$1" "$DRIVER"
	wait "$DRIVER" || st=$?
	assert_equal "$st" $((128 + $2))
	wait_until dead "$tap"
	wait_until no_process pipe-tap
	run -1 bucket_exists .dataspoc/state/sec/lock
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	run -1 bucket_exists .dataspoc/state/sec/state.json
	bucket_cat ".dataspoc/logs/sec/$rid.json" | jq -r '.status + ": " + .error' >log.got
	# the log's words are the terminal's, not the tap's end (#29 item 5)
	echo "failure: interrupted by SIG$1" | expect_file log.got
	tail -n 1 run.err >last
	echo "dataspoc-pipe: run 'sec' failed: interrupted by SIG$1" | expect_file last
	expect_private_gone
}

@test "inline config: SIGTERM to the driver: 143, lock released, failure logged, gone" {
	driver_signal TERM 15
}

@test "inline config: SIGINT to the driver: 130, lock released, failure logged, gone" {
	driver_signal INT 2
}

@test "inline config: SIGHUP to the driver: 129, lock released, failure logged, gone" {
	driver_signal HUP 1
}

# A signal while the tap's catalog is made (discovery may take minutes): the
# tap's extraction never starts, the folder goes.
@test "a signal to pipe-tap during discovery: the extraction never starts" {
	local pt st=0
	sec_pipeline sec "streams: [s]" "catalog_flag: properties"
	echo '{"streams":[{"tap_stream_id":"s","stream":"s","schema":{"type":"object","properties":{}},"metadata":[{"breadcrumb":[],"metadata":{}}]}]}' >"$T/out"
	: >"$T/block"
	env --default-signal=INT,HUP pipe-tap sec </dev/null >dump 2>err &
	pt=$!
	BG_PIDS="$BG_PIDS $pt"
	wait_for "$T/ready"
	grep -qx -- --discover "$T/argv"
	kill -TERM "$pt"
	: >"$T/release"
	wait "$pt" || st=$?
	assert_equal "$st" 143
	# the tap ran once: the discovery, never the extraction
	run -0 cat "$T/runs"
	assert_output "run"
	run -0 tail -n 1 dump
	assert_output '{"type":"DATASPOC_TAP_END","status":"failure","exit_status":143,"error":"interrupted by SIGTERM"}'
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

# --- folders left by runs killed outright -------------------------------------------------

# Status 0 once none of the processes $@ runs (a zombie counts as gone).
all_gone() {
	local p stat
	for p; do
		read -r stat 2>/dev/null <"/proc/$p/stat" || continue
		stat=${stat##*) }
		[ "${stat%% *}" = Z ] || return 1
	done
	return 0
}

# Every process of the run at once (systemd after its stop timeout, the OOM
# killer's group kill), SIGSTOP first so that none of them sees another go.
@test "kill -9 of every process of a run at once: the folder with the password goes with the next run" {
	local path pids
	start_blocked
	path=$(config_path)
	[ -f "$path" ]
	pid_of tap-janitor >/dev/null
	# stop them until no new one appears (one may be forking as they are listed)
	while new=$(pids_of_test) && [ "$new" != "$pids" ]; do
		pids=$new
		kill -STOP $pids
	done
	kill -KILL $pids
	wait "$DRIVER" || true
	wait_until all_gone $pids
	# the janitor died too: the password is still there
	[ -f "$path" ]
	touch -d '2 minutes ago' "$TMPDIR"/dataspoc-pipe.*
	rm -f "$T/block"
	run -0 --separate-stderr dataspoc-pipe run sec
	[ ! -e "$path" ]
	[ ! -e "${path%/*}" ]
	run -0 ls -A "$TMPDIR"
	assert_output ""
}

@test "a live run's folders, the driver's and pipe-tap's, stay while another run sweeps TMPDIR, however old" {
	local dirs d
	start_blocked
	dirs=$(ls -d "$TMPDIR"/dataspoc-pipe.*)
	[ "$(wc -l <<<"$dirs")" -eq 2 ]
	touch -d '2 minutes ago' $dirs
	# another pipeline's run, whose driver sweeps TMPDIR first
	use_tap tap-other
	echo '{"type":"RECORD","stream":"s","record":{"n":1}}' >"$FAKE_DIR/tap-other/out"
	write_pipeline other tap-other
	run -0 --separate-stderr dataspoc-pipe run other
	# (the old pipe-tap did not lock its folder: that sweep removed it)
	for d in $dirs; do
		[ -d "$d" ] || { echo "'$d' was removed" >&2; return 1; }
	done
	[ -f "$(config_path)" ]
	: >"$T/release"
	wait "$DRIVER"
	expect_private_gone
}

# --- secrets stay secret -------------------------------------------------------------------

@test "secrets: not in stdout, stderr, the run log, the manifest, the state or the data" {
	run -0 --separate-stderr dataspoc-pipe run -v sec
	printf '%s\n%s\n' "$output" "$stderr" | no_secret
	# a failed run says more: the tap's last words, the error, the failure log
	echo 'tap-sec: connecting to db.example as etl' >"$T/stderr"
	echo 1 >"$T/exit"
	run -1 --separate-stderr dataspoc-pipe run sec
	grep -q "tap-sec: connecting" <<<"$stderr"
	printf '%s\n%s\n' "$output" "$stderr" | no_secret
	run -0 dataspoc-pipe logs -n 5 sec
	no_secret <<<"$output"
	run -0 dataspoc-pipe status --output json sec
	no_secret <<<"$output"
	[ "$(bucket_keys | wc -l)" -ge 5 ]
	no_secret "$BUCKET_DIR"
	# the secret is really where no_secret looks (it can fail)
	run -1 no_secret "$T/config-in"
}

@test "secrets: in no process's argv while a run is held open" {
	local p found=
	start_blocked
	pid_of tap-sec >/dev/null
	pid_of pipe-sink >/dev/null
	for p in $(pids_of_test); do
		if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF -e "$PASSWORD" -e "$AWS_SECRET"; then
			found="$found $p:$(cat "/proc/$p/comm")"
		fi
	done
	[ -z "$found" ] || { echo "secrets in the argv of$found" >&2; return 1; }
	# and the scan sees argv (it can fail)
	sh -c 'sleep 30' "$PASSWORD" &
	BG_PIDS="$BG_PIDS $!"
	# (until the forked shell has become sh: a moment on a busy machine)
	local tries=0
	until tr '\0' ' ' <"/proc/$!/cmdline" | grep -qF "$PASSWORD"; do
		tries=$((tries + 1))
		[ $tries -lt 100 ] || { echo "the scan never saw the argv of pid $!" >&2; return 1; }
		sleep 0.05
	done
	: >"$T/release"
	wait "$DRIVER"
	no_secret run.out run.err
}

@test "secrets: an S3 error names the store, never the secret key" {
	{
		printf 'source:\n  tap: tap-sec\ndestination:\n'
		printf '  bucket: s3://no-such-bucket/p\n  endpoint_url: http://127.0.0.1:9\n  format: jsonl\n'
	} >"$DATASPOC_PIPE_HOME/pipelines/s3sec.yaml"
	# (no store answers there: no retries to wait for)
	export DATASPOC_PIPE_S3_RETRIES=0
	run -1 --separate-stderr dataspoc-pipe run s3sec
	# the store named by its bucket URL, the request, curl's words
	assert_regex "$stderr" "^dataspoc-pipe: run 's3sec' failed: cannot create 's3://no-such-bucket/p/\.dataspoc/state/s3sec/lock': HeadObject: Failed to connect to 127\.0\.0\.1 port 9 after [0-9]+ ms: Couldn't connect to server\$"
	printf '%s\n%s\n' "$output" "$stderr" | no_secret
	run -1 --separate-stderr pipe-state show s3sec
	assert_regex "$stderr" "^pipe-state: cannot read 's3://no-such-bucket/p/\.dataspoc/state/s3sec/state\.json': GetObject: Failed to connect to 127\.0\.0\.1 port 9 after [0-9]+ ms: Couldn't connect to server\$"
	printf '%s\n%s\n' "$output" "$stderr" | no_secret
}

# Secrets under keys that do not look secret, and in the environment.
ACCOUNT_KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='
SAS_SIG='Zx9%2Bq3SASsigVALUE%3D'
BEARER=eyJhbGciOiJIUzI1NiJ9.bearer-Tok3n
AZ_ENV_KEY=AzEnvKeyQWxhZGRpbjpvcGVuIHNlc2FtZQ==
AWS_TOKEN=FwoGZXIvYXdzEXAMPLESESSIONTOKEN

no_credential() {
	! grep -qaF -e "$PASSWORD" -e "$AWS_SECRET" -e "$ACCOUNT_KEY" -e "$SAS_SIG" -e "$BEARER" -e "$AZ_ENV_KEY" \
		-e "$AWS_TOKEN" "$@"
}

@test "secrets: credential-shaped parts of any config value and the environment's credentials are masked on the terminal, with -v, and in the run log" {
	sec_pipeline sec "  conn: \"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=$ACCOUNT_KEY;EndpointSuffix=core.windows.net\"" \
		"  sas: \"sv=2022-11-02&ss=b&sig=$SAS_SIG\""
	export AZURE_STORAGE_KEY=$AZ_ENV_KEY AWS_SESSION_TOKEN=$AWS_TOKEN
	{
		echo "tap-sec: connecting with DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=$ACCOUNT_KEY;EndpointSuffix=x"
		echo "tap-sec: the key alone: $ACCOUNT_KEY"
		echo "tap-sec: GET https://acct.blob.core.windows.net/c?sv=2022-11-02&ss=b&sig=$SAS_SIG&sr=c"
		echo "tap-sec: sent Authorization: Bearer $BEARER"
		echo "tap-sec: the environment's: $AZ_ENV_KEY and $AWS_TOKEN"
		printf 'tap-sec: a last line without its newline %s' "$SAS_SIG"
	} >"$T/stderr"
	echo 1 >"$T/exit"
	run -1 --separate-stderr dataspoc-pipe run sec
	printf '%s\n%s\n' "$output" "$stderr" >"$BATS_TEST_TMPDIR/term"
	no_credential "$BATS_TEST_TMPDIR/term"
	assert_regex "$stderr" "  \| tap-sec: connecting with DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=\*\*\*;EndpointSuffix=x"
	assert_regex "$stderr" "  \| tap-sec: GET https://acct\.blob\.core\.windows\.net/c\?sv=2022-11-02&ss=b&sig=\*\*\*&sr=c"
	assert_regex "$stderr" "  \| tap-sec: sent Authorization: \*\*\*"
	# the last line is its own, the failure on the next
	assert_regex "$stderr" "  \| tap-sec: a last line without its newline \*\*\*"$'\n'"dataspoc-pipe: run 'sec' failed"
	run -1 --separate-stderr dataspoc-pipe run -v sec
	printf '%s\n%s\n' "$output" "$stderr" >"$BATS_TEST_TMPDIR/term-v"
	grep -qF "tap-sec: the key alone: ***" "$BATS_TEST_TMPDIR/term-v"
	no_credential "$BATS_TEST_TMPDIR/term-v"
	run -0 dataspoc-pipe logs -n 5 sec
	no_credential <<<"$output"
	bucket_cat ".dataspoc/logs/sec/$(run_ids sec | tail -n 1).json" | jq -r '.tap_stderr[]' >"$BATS_TEST_TMPDIR/logged"
	grep -qF "tap-sec: the environment's: *** and ***" "$BATS_TEST_TMPDIR/logged"
	no_credential "$BATS_TEST_TMPDIR/logged"
	no_credential -r "$BUCKET_DIR"
	# the secrets are really where no_credential looks (it can fail)
	run -1 no_credential "$T/stderr"
}

@test "secrets: a line longer than what is held (64 KiB) is cut where no secret, no name=value and no URL's password spans the cut" {
	# the tap prints 64 KiB and the start of each secret, waits, then the rest:
	# the first piece is masked and shown before the rest has come
	rm "$BATS_TEST_TMPDIR/bin/tap-sec"
	cat >"$BATS_TEST_TMPDIR/bin/tap-sec" <<-EOF
	#!/bin/sh
	cat >/dev/null </dev/null
	x=\$(head -c 65530 /dev/zero | tr '\\0' x)
	printf '%s' "\$x" >&2; printf 'hunter2-Zq8' >&2; sleep 0.4
	printf 'sPassw0rd %s' "\$x" >&2; printf ' token=abc' >&2; sleep 0.4
	printf 'DEF-ghi-jkl1 %s' "\$x" >&2; printf ' postgres://etl:mno' >&2; sleep 0.4
	printf 'PQR-stu9@db.example/x\\n' >&2
	exit 1
	EOF
	chmod +x "$BATS_TEST_TMPDIR/bin/tap-sec"
	run -1 --separate-stderr dataspoc-pipe run -v sec
	printf '%s\n%s\n' "$output" "$stderr" >"$BATS_TEST_TMPDIR/term"
	bucket_cat ".dataspoc/logs/sec/$(run_ids sec | tail -n 1).json" | jq -r '.tap_stderr[]' >"$BATS_TEST_TMPDIR/logged"
	for f in term logged; do
		! grep -qaF -e "$PASSWORD" -e abcDEF-ghi-jkl1 -e mnoPQR-stu9 "$BATS_TEST_TMPDIR/$f" ||
			{ echo "a secret in $f" >&2; false; }
	done
	grep -qaF 'token=*** ' "$BATS_TEST_TMPDIR/term"
	grep -qaF 'postgres://etl:***@db.example/x' "$BATS_TEST_TMPDIR/term"
}

@test "what the tap says of its state file names the pipeline's saved state, a pipeline named like a secret ('api-token') not taken for one" {
	sec_pipeline api-token
	run -0 --separate-stderr dataspoc-pipe run api-token
	rm "$BATS_TEST_TMPDIR/bin/tap-sec"
	cat >"$BATS_TEST_TMPDIR/bin/tap-sec" <<-'EOF'
	#!/bin/sh
	while [ $# -gt 0 ]; do
		[ "$1" = --state ] && echo "tap-sec: cannot parse $2: expected value at line 1" >&2
		shift
	done
	exit 1
	EOF
	chmod +x "$BATS_TEST_TMPDIR/bin/tap-sec"
	run -1 --separate-stderr dataspoc-pipe run api-token
	assert_regex "$stderr" "  \| tap-sec: cannot parse the saved state of pipeline 'api-token': expected value at line 1"
	[[ $stderr != *"/dataspoc-pipe."* ]]
}
