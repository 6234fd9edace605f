# helpers/common.bash: what the bats files of dataspoc-pipe share.
#
# Each test gets a sandbox: HOME, DATASPOC_PIPE_HOME and TMPDIR under
# $BATS_TEST_TMPDIR, which is also the working directory; fake taps first on
# PATH, then the programs under test ($PIPE_BIN, set by `make test`).
#
# The bucket is reached only through the bucket_* functions below, so that a
# suite for another store (tests/s3*.bats) can load this file, override
# them, and run the same scenarios (tests/helpers/pipeline_scenarios.bash):
#
#   bucket_setup          make this test's empty bucket, set BUCKET_URL
#   bucket_url            the URL pipelines write to
#   bucket_yaml           the destination lines naming it in a pipeline file
#   bucket_keys [PREFIX]  every key (under PREFIX), sorted bytewise
#   bucket_files          the visible data keys: every key outside .dataspoc/
#   bucket_cat KEY        an object's bytes on stdout
#   bucket_exists KEY     status 0 when the object exists
#   bucket_put KEY        store stdin as an object
#   bucket_rm KEY         delete an object
#   bucket_snapshot       "sha256 key" for every key: diff two of them
#   bucket_untouched      status 0 when nothing at all was written

bats_require_minimum_version 1.5.0
bats_load_library bats-support
bats_load_library bats-assert

PIPE_BIN=${PIPE_BIN:-$BATS_TEST_DIRNAME/../bin}
TAPS=$BATS_TEST_DIRNAME/taps
# The recorded output of the real tap-postgres.
PG_FIXTURES=${PG_FIXTURES:-$BATS_TEST_DIRNAME/fixtures/tap-postgres}
# A bound on every wait for a background process, so a bug hangs no one.
WAIT_LIMIT=${WAIT_LIMIT:-120}
# The expiry of a lock whose holder lives elsewhere: within the longest lease
# granted (a lock that claims more is not believed, and is taken over).
LIVE_UNTIL=$(date -u -d '+30 min' +%Y-%m-%dT%H:%M:%SZ)

pipe_setup() {
	cd "$BATS_TEST_TMPDIR" || return 1
	export HOME=$BATS_TEST_TMPDIR/home
	export DATASPOC_PIPE_HOME=$HOME/.dataspoc-pipe
	export TMPDIR=$BATS_TEST_TMPDIR/tmp
	export FAKE_DIR=$BATS_TEST_TMPDIR/fake
	export PG_FIXTURES
	mkdir -p "$DATASPOC_PIPE_HOME/pipelines" "$TMPDIR" "$FAKE_DIR" "$BATS_TEST_TMPDIR/bin"
	export PATH=$BATS_TEST_TMPDIR/bin:$TAPS:$PIPE_BIN:$PATH
	unset DATASPOC_RUN_ID DATASPOC_PIPE_PID DATASPOC_PIPE_LOCK_TTL
	BG_PIDS=
	bucket_setup
}

# Release blocked taps and end what the test left running (only processes
# this test started: they carry its FAKE_DIR in their environment).
pipe_teardown() {
	local d pid
	for d in "$FAKE_DIR"/*/; do
		[ -d "$d" ] && : >"$d/release"
	done
	for pid in $BG_PIDS $(pids_of_test); do
		kill -9 "$pid" 2>/dev/null || true
	done
	for pid in $BG_PIDS; do
		wait "$pid" 2>/dev/null || true
	done
}

# --- the bucket: a local directory ------------------------------------------

bucket_setup() {
	BUCKET_DIR=$BATS_TEST_TMPDIR/bucket
	BUCKET_URL=file://$BUCKET_DIR
}

bucket_url() {
	printf '%s\n' "$BUCKET_URL"
}

bucket_yaml() {
	printf '  bucket: %s\n' "$(bucket_url)"
}

bucket_keys() {
	[ -d "$BUCKET_DIR" ] || return 0
	(cd "$BUCKET_DIR" && find . -type f -printf '%P\n') | LC_ALL=C sort |
		while IFS= read -r k; do
			case $k in "${1:-}"*) printf '%s\n' "$k" ;; esac
		done
}

# What a run lock calls this machine and PID namespace (lock.h: host_id).
this_host_id() {
	printf '%s:%s\n' "$(cat /proc/sys/kernel/random/boot_id)" "$(stat -L -c %i /proc/self/ns/pid)"
}

# No commit of pipeline $1 is pending (none of a run's, none of an older version's).
no_pending() {
	run -1 bucket_exists ".dataspoc/state/$1/pending.json"
	run -0 bucket_keys ".dataspoc/state/$1/pending/"
	assert_output ""
}

bucket_files() {
	bucket_keys | grep -v '^\.dataspoc/' || true
}

bucket_cat() {
	cat -- "$BUCKET_DIR/$1"
}

bucket_exists() {
	[ -f "$BUCKET_DIR/$1" ]
}

bucket_put() {
	mkdir -p "$(dirname -- "$BUCKET_DIR/$1")" && cat >"$BUCKET_DIR/$1"
}

bucket_rm() {
	rm -f -- "$BUCKET_DIR/$1"
}

bucket_snapshot() {
	local k
	bucket_keys | while IFS= read -r k; do
		printf '%s %s\n' "$(sha256sum <"$BUCKET_DIR/$k" | cut -c1-64)" "$k"
	done
}

bucket_untouched() {
	[ ! -e "$BUCKET_DIR" ]
}

# assert_stderr EXPECTED: $stderr of `run --separate-stderr` is EXPECTED.
# (bats 1.8 reads that file with `read`, which drops the leading blanks of
# its first line: EXPECTED goes through the same read.  Where those blanks
# matter, send stderr to a file and diff it.)
assert_stderr() {
	local want
	IFS=$' \t\n' read -d '' -r want <<<"$1" || true
	assert_equal "$stderr" "$want"
}

# expect_file FILE: FILE holds exactly what stdin holds.
expect_file() {
	cat >"$BATS_TEST_TMPDIR/.expected"
	diff -u "$BATS_TEST_TMPDIR/.expected" "$1"
}

# expect_file_empty FILE: FILE exists and is empty.
expect_file_empty() {
	expect_file "$1" </dev/null
}

# --- mounts (tests that need root) ------------------------------------------

# small_tmpfs DIR: a 1 MiB tmpfs mounted on DIR, for a disk that fills up;
# status 1 when it cannot be mounted (that needs root: the caller skips).
small_tmpfs() {
	mount -t tmpfs -o size=1m tmpfs "$1" 2>/dev/null || return 1
	MOUNTED="${MOUNTED:-} $1"
}

# unmount_all: for teardown, unmount each folder of $MOUNTED (named twice
# when two mounts are stacked on it), lazily when it is still busy.
unmount_all() {
	local m
	for m in ${MOUNTED:-}; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done
	MOUNTED=
}

# --- the lake a DataSpoc user queries (lake.bats, manifest-broken.bats) -------

# use_local_lake: what a bats file about the lake on a local bucket starts
# with, called after `load helpers/common`: tests/helpers/parquet.bash and
# tests/helpers/lake_scenarios.bash loaded, each test in its sandbox (setup,
# teardown; an s3rver a test started, S3_STARTED set, is stopped), and Lens
# reading the bucket itself (lens_root; a test may define its own).
use_local_lake() {
	load helpers/parquet
	load helpers/lake_scenarios
	setup() {
		pipe_setup
	}
	teardown() {
		pipe_teardown
		[ -z "${S3_STARTED:-}" ] || s3_stop
	}
	lens_root() {
		printf '%s\n' "$BUCKET_DIR"
	}
}

# --- reading what landed -----------------------------------------------------

# The decompressed content of data object KEY, by its extension.
bucket_data() {
	local f=$BATS_TEST_TMPDIR/.object
	bucket_cat "$1" >"$f" || return 1
	case $1 in
	*.zst) zstd -qdc -- "$f" ;;
	*.gz) gzip -dc -- "$f" ;;
	*) cat -- "$f" ;;
	esac
}

# Every record landed for a table folder (PREFIX/, e.g. raw/shop/orders),
# file after file in key order.
table_data() {
	local k
	for k in $(bucket_files | grep -F "$1/"); do
		bucket_data "$k" || return 1
	done
}

# The run ids of a pipeline's runs, oldest first (from its run logs).
run_ids() {
	bucket_keys ".dataspoc/logs/$1/" | sed 's|.*/||; s|\.json$||'
}

# dt=YYYY-MM-DD of a run id.
run_day() {
	printf '%s-%s-%s\n' "$(echo "$1" | cut -c1-4)" "$(echo "$1" | cut -c5-6)" "$(echo "$1" | cut -c7-8)"
}

new_run_id() {
	printf '%s%s\n' "$(date -u +%Y%m%dT%H%M%SZ-%3N)" "$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
}

# --- pipelines and fake taps -------------------------------------------------

# use_tap NAME: the fake tap (tests/taps/tap-fake) runs as NAME; its folder
# is $FAKE_DIR/NAME (see tap-fake for what goes there).
use_tap() {
	ln -sf "$TAPS/tap-fake" "$BATS_TEST_TMPDIR/bin/$1"
	mkdir -p "$FAKE_DIR/$1"
}

# write_pipeline NAME TAP [INCREMENTAL [DESTINATION-LINE...]]; with
# PIPELINE_CONFIG set, source.config is that path.  The pipeline lands JSON
# lines (format: jsonl) unless a DESTINATION-LINE names its own format:, in
# path raw (the default path: the format line takes the place of "path: raw",
# so that every line keeps the number the tests' error positions name).
write_pipeline() {
	local name=$1 tap=$2 incremental=${3:-true} line format='format: jsonl'
	shift 2
	[ $# -gt 0 ] && shift
	for line; do
		case $line in format:*) format= ;; esac
	done
	{
		printf 'source:\n  tap: %s\n' "$tap"
		[ -z "${PIPELINE_CONFIG:-}" ] || printf '  config: %s\n' "$PIPELINE_CONFIG"
		printf 'destination:\n'
		bucket_yaml
		if [ -n "$format" ]; then
			printf '  %s\n' "$format"
		else
			printf '  path: raw\n'
		fi
		for line; do
			printf '  %s\n' "$line"
		done
		printf 'incremental:\n  enabled: %s\n' "$incremental"
	} >"$DATASPOC_PIPE_HOME/pipelines/$name.yaml"
}

# singer_records STREAM < RECORDS: one Singer RECORD line for each line of
# RECORDS, its bytes untouched, so RECORDS is also what must land.
singer_records() {
	local line
	while IFS= read -r line; do
		printf '{"type":"RECORD","stream":"%s","record":%s}\n' "$1" "$line"
	done
}

# --- background processes ------------------------------------------------------

# wait_for FILE: until it exists (bounded in time, so a bug fails the test
# instead of hanging it).
wait_for() {
	wait_until test -e "$1"
}

# wait_until CMD...: until CMD succeeds (bounded in time).
wait_until() {
	local end=$((SECONDS + WAIT_LIMIT))
	until "$@"; do
		if [ "$SECONDS" -ge "$end" ]; then
			echo "gave up after $WAIT_LIMIT s waiting for: $*" >&2
			return 1
		fi
		sleep 0.05
	done
}

# The processes of this test still running: they carry its FAKE_DIR.
pids_of_test() {
	local p
	for p in /proc/[0-9]*; do
		grep -qzx "FAKE_DIR=$FAKE_DIR" "$p/environ" 2>/dev/null && echo "${p#/proc/}"
	done
	return 0
}

# pid_of COMM: the pid of this test's process named COMM (cheap: a grep
# only for the processes of that name).
pid_of() {
	local p comm
	for p in /proc/[0-9]*; do
		read -r comm 2>/dev/null <"$p/comm" || continue
		[ "$comm" = "$1" ] || continue
		grep -qzx "FAKE_DIR=$FAKE_DIR" "$p/environ" 2>/dev/null || continue
		echo "${p#/proc/}"
		return 0
	done
	return 1
}

# no_process COMM: status 0 when none of this test's processes is COMM.
no_process() {
	! pid_of "$1" >/dev/null
}

alive() {
	kill -0 "$1" 2>/dev/null
}

dead() {
	! kill -0 "$1" 2>/dev/null
}
