#!/bin/sh
# dataspoc-pipe: run Singer taps into a bucket, incrementally and safely.
# A POSIX sh driver over pipe-state, pipe-tap, pipe-sink and pipe-commit:
#   pipe-state get NAME | pipe-tap NAME | pipe-sink NAME > plan
#   then, only if every stage succeeded: pipe-commit NAME < plan
# See dataspoc-pipe(1).
set -u

VERSION=0.1.0
prog=dataspoc-pipe

# The pipe-* programs installed beside this script come first.
case $0 in
*/*) here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd) && PATH=$here:$PATH ;;
esac
export PATH

home=${DATASPOC_PIPE_HOME:-${HOME:-}/.dataspoc-pipe}

say() { printf '%s\n' "$*"; }
err() { printf '%s: %s\n' "$prog" "$*" >&2; }

usage() {
	cat >&2 <<USAGE
usage: $prog init
       $prog run [--full] [-v] NAME | -c FILE.yaml
       $prog help [COMMAND] | --version
USAGE
	exit 2
}

help_main() {
	cat <<'HELP'
usage: dataspoc-pipe COMMAND [options]

Run Singer taps and land their records in a bucket (a local directory or
S3), as compressed JSON lines, with incremental state kept in the bucket.

Commands:
  init              create $DATASPOC_PIPE_HOME (default ~/.dataspoc-pipe)
  run NAME          run pipelines/NAME.yaml (or -c FILE.yaml)
  help [COMMAND]    help on a command
  --version         the version

Exit status: 0 success, 1 the run failed, 2 bad usage or config.
HELP
}

help_run() {
	cat <<'HELP'
usage: dataspoc-pipe run [--full] [-v] NAME
       dataspoc-pipe run [--full] [-v] -c FILE.yaml

Run one pipeline: pipe-state get | pipe-tap | pipe-sink, then pipe-commit
only when every stage succeeded.  Records land under
<bucket>/<path>/<source>/<stream>/dt=YYYY-MM-DD/; the last STATE is saved in
<bucket>/.dataspoc/state/NAME/state.json.  A failed run leaves the bucket
and the saved state exactly as they were.

Options:
  --full         ignore the saved state (it is replaced when the run succeeds)
  -v, --verbose  show the tap's stderr as it runs (kept and shown on failure
                 otherwise)
HELP
}

help_init() {
	cat <<'HELP'
usage: dataspoc-pipe init

Create $DATASPOC_PIPE_HOME (default ~/.dataspoc-pipe) with config.yaml,
pipelines/, sources/ and transforms/.  Existing files are left alone.
HELP
}

cmd_init() {
	[ $# -eq 0 ] || usage
	mkdir -p "$home/pipelines" "$home/sources" "$home/transforms" || exit 1
	if [ ! -e "$home/config.yaml" ]; then
		cat >"$home/config.yaml" <<'YAML' || exit 1
# dataspoc-pipe settings.  Optional "destination:" defaults apply to every
# pipeline that does not set them, e.g.:
#
# destination:
#   bucket: s3://company-datalake
#   path: raw
#   compression: zstd
YAML
		say "Created $home"
	else
		say "$home is ready (already initialised)"
	fi
	say "  pipelines/   one NAME.yaml per pipeline"
	say "  sources/     tap configs (JSON)"
	say "  transforms/  jq programs"
}

new_run_id() {
	printf '%s-%s\n' "$(date -u +%Y%m%dT%H%M%SZ)" \
		"$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
}

# run_pipeline FULL VERBOSE ARGS...: ARGS is NAME or -c FILE.
run_pipeline() {
	full=$1 verbose=$2
	shift 2
	label=$1
	[ "$1" = -c ] && label=$(basename -- "$2" | sed 's/\.ya\{0,1\}ml$//')

	# Check the config and the tap before anything is touched.
	pipe-tap -n "$@" </dev/null
	rc=$?
	[ $rc -eq 0 ] || exit $(( rc == 2 ? 2 : 1 ))
	pipe-sink -n "$@" </dev/null || exit 2

	run_id=$(new_run_id)
	DATASPOC_RUN_ID=$run_id
	DATASPOC_PIPE_PID=$$
	export DATASPOC_RUN_ID DATASPOC_PIPE_PID
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/dataspoc-pipe.XXXXXX") || exit 1
	job=
	signal=
	trap 'rm -rf "$tmp"' EXIT
	trap 'signal=INT; [ -n "$job" ] && kill -INT -- "-$job" 2>/dev/null' INT
	trap 'signal=TERM; [ -n "$job" ] && kill -TERM -- "-$job" 2>/dev/null' TERM
	trap 'signal=HUP; [ -n "$job" ] && kill -HUP -- "-$job" 2>/dev/null' HUP

	say "Running: $label"
	if [ "$full" = 1 ]; then
		pipe-state get -f "$@" >"$tmp/state"
	else
		pipe-state get "$@" >"$tmp/state"
	fi
	rc=$?
	if [ $rc -ne 0 ]; then
		[ $rc -eq 2 ] && exit 2
		pipe-commit -a -e "pipe-state could not take the lock or read the state" "$@" </dev/null
		err "run '$label' failed: pipe-state get exited with status $rc"
		exit 1
	fi
	if [ "$(cat "$tmp/state")" != "{}" ]; then
		say "  Incremental mode (using previous checkpoint)"
	elif [ "$full" = 1 ]; then
		say "  Full extraction (saved state ignored)"
	fi

	taplog=$tmp/tap.log
	[ "$verbose" = 1 ] && taplog=/dev/stderr
	sinkflags=
	[ "$full" = 1 ] && sinkflags=-f
	# Its own session, so a signal reaches every stage and the tap.
	setsid sh -c '
		d=$1 log=$2 sf=$3
		shift 3
		{ pipe-tap -l "$log" "$@" <"$d/state"; echo $? >"$d/tap.rc"; } |
		{ pipe-sink $sf "$@" >"$d/plan"; echo $? >"$d/sink.rc"; }
	' sh "$tmp" "$taplog" "$sinkflags" "$@" &
	job=$!
	while :; do
		wait "$job"
		kill -0 "$job" 2>/dev/null || break
	done
	job=

	tap_rc=$(cat "$tmp/tap.rc" 2>/dev/null || echo 255)
	sink_rc=$(cat "$tmp/sink.rc" 2>/dev/null || echo 255)
	failed=
	if [ -n "$signal" ]; then
		failed="interrupted by SIG$signal"
	elif [ "$sink_rc" -ne 0 ] && { [ "$tap_rc" -eq 0 ] || [ "$tap_rc" -eq 141 ]; }; then
		failed="pipe-sink exited with status $sink_rc"
	elif [ "$tap_rc" -ne 0 ]; then
		failed="pipe-tap exited with status $tap_rc"
		[ "$tap_rc" -gt 128 ] && failed="pipe-tap exited with status $tap_rc (signal $((tap_rc - 128)))"
	elif [ "$sink_rc" -ne 0 ]; then
		failed="pipe-sink exited with status $sink_rc"
	fi
	if [ -z "$failed" ]; then
		pipe-commit "$@" <"$tmp/plan"
		rc=$?
		[ $rc -eq 0 ] && exit 0
		failed="pipe-commit exited with status $rc"
		err "run '$label' failed: $failed"
		exit 1
	fi
	if [ "$verbose" != 1 ] && [ -s "$tmp/tap.log" ]; then
		err "the tap's last words:"
		tail -n 20 "$tmp/tap.log" | sed 's/^/  | /' >&2
	fi
	pipe-commit -a -e "$failed" "$@" <"$tmp/plan"
	err "run '$label' failed: $failed"
	case $signal in
	INT) exit 130 ;;
	TERM) exit 143 ;;
	HUP) exit 129 ;;
	esac
	exit 1
}

cmd_run() {
	full=0 verbose=0 file= name=
	while [ $# -gt 0 ]; do
		case $1 in
		--full | -f) full=1 ;;
		-v | --verbose) verbose=1 ;;
		-c) [ $# -ge 2 ] || usage; file=$2; shift ;;
		-h | --help) help_run; exit 0 ;;
		-*) err "run: unknown option '$1'"; usage ;;
		*) [ -z "$name" ] || usage; name=$1 ;;
		esac
		shift
	done
	if [ -n "$file" ]; then
		[ -z "$name" ] || usage
		run_pipeline "$full" "$verbose" -c "$file"
	fi
	[ -n "$name" ] || usage
	run_pipeline "$full" "$verbose" "$name"
}

[ $# -gt 0 ] || usage
cmd=$1
shift
case $cmd in
init) cmd_init "$@" ;;
run) cmd_run "$@" ;;
help)
	case ${1:-} in
	'') help_main ;;
	run) help_run ;;
	init) help_init ;;
	*) err "help: no command '$1'"; exit 2 ;;
	esac ;;
-h | --help) help_main ;;
--version | -V) say "dataspoc-pipe $VERSION" ;;
*) err "unknown command '$cmd'"; usage ;;
esac
