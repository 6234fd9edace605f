#!/bin/sh
# dataspoc-pipe: run Singer taps into a bucket, incrementally and safely.
# A POSIX sh driver over pipe-state, pipe-tap, pipe-sink and pipe-commit:
#   pipe-state get NAME | pipe-tap NAME | pipe-sink NAME > plan
#   then, only if every stage succeeded: pipe-commit NAME < plan
# See dataspoc-pipe(1).
set -u

VERSION=0.1.0
prog=dataspoc-pipe

# This script's own path, through any symlinks (~/bin/dp -> .../bin/dataspoc-pipe),
# for run --all and crontab entries; the pipe-* programs installed beside it
# come first on PATH.
self=$0
case $self in
*/*) ;;
*) self=$(command -v -- "$0" 2>/dev/null) || self=$0 ;;
esac
# (dirname and basename by parameter expansion: each program started costs
# a small run about half a millisecond)
while [ -L "$self" ]; do
	link=$(readlink -- "$self") || break
	case $link in
	/*) self=$link ;;
	*) case $self in
		*/*) self=${self%/*}/$link ;;
		*) self=$link ;;
		esac ;;
	esac
done
# The folder is made physical (cd -P, in a subshell) for the crontab
# entries of schedule; run, whose $self only starts the driver again (run
# --all), takes an absolute folder as it is and spares the subshell.
case $self in
*/*) here=${self%/*}
	case ${1:-}:$here in
	run:/?*) ;;
	*) here=$(CDPATH= cd -P -- "${here:-/}" && pwd -P) ;;
	esac &&
	self=$here/${self##*/} && PATH=$here:$PATH ;;
esac
export PATH
templates=${here:-.}/../share/dataspoc-pipe/templates

home=${DATASPOC_PIPE_HOME:-${HOME:-}/.dataspoc-pipe}

say() { printf '%s\n' "$*"; }
err() { printf '%s: %s\n' "$prog" "$*" >&2; }

# usage CMD REASON: what is wrong with CMD's arguments, then CMD's usage
# lines (its help up to the first blank line), on stderr; exit 2.
usage() {
	err "$1: $2"
	"help_$1" | awk 'NF == 0 { exit } { print }' >&2
	exit 2
}

help_run() {
	cat <<'HELP'
usage: dataspoc-pipe run [--full] [-v] NAME
       dataspoc-pipe run [--full] [-v] -c FILE.yaml
       dataspoc-pipe run --all [-j N] [--full] [-v]   (also: run _ --all)

Run one pipeline: pipe-state get | pipe-tap | pipe-sink, then pipe-commit
only when every stage succeeded.  Records land under
<bucket>/<path>/<source>/<stream>/dt=YYYY-MM-DD/; the last STATE is saved in
<bucket>/.dataspoc/state/NAME/state.json.  A failed run leaves the bucket
and the saved state exactly as they were.

Options:
  --full         ignore the saved state (it is replaced when the run succeeds)
  --refresh-catalog  run the tap's discovery again (streams are selected from
                 the catalog cached beside the pipeline otherwise)
  -v, --verbose  show the tap's stderr as it runs (kept and shown on failure
                 otherwise)
  --all          run every pipelines/*.yaml, in name order; each pipeline's
                 output is kept and printed when it ends, then
                 "Summary: S success, F failure(s)"; exit status 1 when any
                 failed
  -j N           with --all: N pipelines at a time (default 1)
HELP
}

# Folders in TMPDIR that no live run holds (see open_private_dir): those of
# drivers and pipe-taps killed outright, which could not remove themselves
# (a pipe-tap's may hold the tap's config, password included).  A folder is
# proven dead when its lock can be taken; one changed in the last minute is
# left alone, as its maker may be about to lock it.  A pid alone would prove
# nothing: drivers in other PID namespaces may share this TMPDIR.  (run,
# without -v, has pipe-tap -n -D sweep them, which also takes a folder whose
# maker file names a driver of this namespace known gone at once.)
sweep_private_dirs() {
	# (find and id run only when such a folder of this user is there)
	for _d in "${TMPDIR:-/tmp}"/dataspoc-pipe.*; do
		[ -d "$_d" ] && [ -O "$_d" ] && break
		_d=
	done
	[ -n "$_d" ] || return 0
	find "${TMPDIR:-/tmp}/" -maxdepth 1 -name 'dataspoc-pipe.*' -type d -user "$(id -u)" \
		-mmin +1 2>/dev/null |
		while IFS= read -r d; do
			flock -n "$d" rm -rf -- "$d" 2>/dev/null
		done
}

# tmp: a private folder for this driver in TMPDIR, open on descriptor 9
# with a flock(2) lock on it.  Every process of the run inherits the
# descriptor (the stages, the tap, its children), so the lock is held while
# any of them lives, whatever was killed: the bucket's run lock names the
# folder (DATASPOC_PIPE_RUN_DIR), and the next run takes a lock over on
# this machine only once nothing holds this one.  With --by-first (run),
# the run's first program (pipe-tap -n) locks it, told by
# DATASPOC_PIPE_RUN_DIR_FD: the lock is the open file's, so it stays with
# this driver's descriptor (no flock program to start, issue #14); a sweep
# leaves a folder made in the last minute alone, and one that a sweep took
# meanwhile is said by that program.  The other commands lock it here.
open_private_dir() {
	sweep_private_dirs
	for _i in 1 2 3 4 5; do
		tmp=$(mktemp -d "${TMPDIR:-/tmp}/dataspoc-pipe.XXXXXX") || return 1
		# (a sweep may remove a folder between mktemp and flock: try anew)
		if [ -d "$tmp" ]; then
			exec 9<"$tmp"
			if [ "${1:-}" = --by-first ]; then
				DATASPOC_PIPE_RUN_DIR_FD=9
				export DATASPOC_PIPE_RUN_DIR_FD
				return 0
			fi
			# (not a folder that the run's programs lock: this one may go first)
			unset DATASPOC_PIPE_RUN_DIR_FD
			flock -n 9 && [ -d "$tmp" ] && return 0
			exec 9<&-
		fi
	done
	err "cannot lock a private folder in ${TMPDIR:-/tmp}"
	return 1
}

# run_dir_taken: after tmp=$(pipe-tap -n -D ...): status 0 when tmp names
# the folder it made, now open on descriptor 9 for the run's programs to
# lock (DATASPOC_PIPE_RUN_DIR_FD), as open_private_dir --by-first leaves it;
# else tmp is emptied (what the EXIT trap removes is only ever such a
# folder) and pipe-tap has said why.  Between pipe-tap's end and the next
# program's lock no process holds the folder's: a sweep leaves it alone, as
# pipe-tap marked it changed as it ended.
run_dir_taken() {
	_t=${tmp#"${TMPDIR:-/tmp}/dataspoc-pipe."}
	case $_t in
	"$tmp" | '' | *[!A-Za-z0-9]*) tmp= ; return 1 ;;
	esac
	if ! { command exec 9<"$tmp"; } 2>/dev/null; then
		err "the private folder '$tmp' is gone"
		tmp=
		return 1
	fi
	DATASPOC_PIPE_RUN_DIR=$tmp DATASPOC_PIPE_RUN_DIR_FD=9
	export DATASPOC_PIPE_RUN_DIR DATASPOC_PIPE_RUN_DIR_FD
}

# A run id (pipe-state new-run-id: UTC time to the second, then the
# milliseconds and random hex).
new_run_id() {
	pipe-state new-run-id
}

# The first message of a program's stderr file that is not a warning,
# without its "prog: ".
first_error() {
	grep -v -e '^[a-z-]*: warning: ' -e '^[[:space:]]*|' "$1" | sed -n '1{s/^pipe-[a-z]*: //;p;}'
}

# The error of a plan's end line (the JSON string's \" and \\ undone).
plan_error() {
	sed -n '$s/^{"type":"end".*,"error":"\(.*\)"}$/\1/p' "$1" |
		sed 's/\\"/"/g; s/\\\\/\\/g'
}

# A sink error in the user's terms: "<stdin>:3:53: why" is about the tap's
# output.
user_terms() {
	printf '%s\n' "$1" | sed 's/^<stdin>:\([0-9]*\):\([0-9]*\): /the tap'\''s output, line \1, column \2: /
		s/^<stdin>:\([0-9]*\): /the tap'\''s output, line \1: /'
}

# A status in words: 137 -> "was killed by signal 9".
status_words() {
	if [ "$1" -gt 128 ] && [ "$1" -lt 255 ]; then
		printf 'was killed by signal %s\n' $(($1 - 128))
	elif [ "$1" -eq 255 ]; then
		printf 'did not finish\n'
	else
		printf 'exited with status %s\n' "$1"
	fi
}

# checks_failed STATUS ARGS...: the checks before the run failed.  A config
# that does not load has said so, naming file:line:col.  Otherwise record
# the failure in the bucket (a run at 2 a.m. that cannot find its tap is a
# failed run, for status and logs), then say why in one line.
# What the checks said that run -v has not shown live yet.
check_unshown() {
	[ -s "$tmp/check.err" ] || return 0
	tail -c +$((check_shown + 1)) "$tmp/check.err"
}

checks_failed() {
	_st=$1
	shift
	reason=$(first_error "$tmp/check.err")
	# (a full TMPDIR may have kept the checks from saying why)
	if [ -z "$reason" ] && tmp_full; then
		reason=$(no_space)
		_st=1
	fi
	[ -n "$reason" ] || reason="the checks before the run failed (status $_st)"
	DATASPOC_RUN_ID=$(new_run_id) pipe-commit -a -e "$reason" "$@" </dev/null >/dev/null 2>&1
	if [ $? -eq 2 ]; then
		check_unshown >&2
		exit "$_st"
	fi
	check_unshown | grep -v -x -F -e "pipe-tap: $reason" -e "pipe-sink: $reason" >&2
	err "run '$label' failed: $reason"
	exit "$_st"
}

# The stages of a run hold descriptor 8, open on the plan (made empty
# here: a file the run makes anyway, not one more to make and remove, issue
# #14): they inherit it (the tap and its children, and pipe-tap's janitor,
# too), the first stage to start locks it with flock(2)
# (DATASPOC_PIPE_STAGES_FD, no flock program to start), and the driver
# closes its own copy, so the lock is free once no process of the stages
# is left.  stages is that file, empty when it could not be opened (the
# wait is then only for the session's leader).
stages_open() {
	stages=
	{ command exec 8>"$tmp/plan"; } 2>/dev/null && stages=$tmp/plan
}

# Seconds a stage that is stopped has before SIGKILL: pipe-tap gives the
# tap as much ($DATASPOC_PIPE_KILL_GRACE, 0 to 3600, default 5).
kill_grace() {
	case ${DATASPOC_PIPE_KILL_GRACE:-} in
	'' | *[!0-9]*) echo 5 ;;
	*)
		_g=$(expr "$DATASPOC_PIPE_KILL_GRACE" + 0)
		[ "$_g" -le 3600 ] && echo "$_g" || echo 5 ;;
	esac
}

# Until no process of the stages is left.  One stopped has the grace
# period (and pipe-tap as long again to kill the tap), then the stages'
# process group and session (the tap's group is in it) get SIGKILL: the
# lock in the bucket goes only after that (pipe-commit -a), so no new run
# starts beside them.
stages_wait() {
	[ -n "$stages" ] || return 0
	# (the lock is tried on descriptor 7, opened here, closed when flock
	# ends: no command for flock to start)
	flock -n 7 7<"$stages" 2>/dev/null && return 0
	_g=$(kill_grace)
	flock -w $((_g + 2)) 7 7<"$stages" 2>/dev/null && return 0
	kill -s KILL -- "-$job" 2>/dev/null
	kill_session "$job"
	flock -w $((_g + 2)) 7 7<"$stages" 2>/dev/null
}

# SIGKILL to every process of session $1.
kill_session() {
	for _p in /proc/[0-9]*; do
		read -r _s 2>/dev/null <"$_p/stat" || continue
		# "pid (comm) state ppid pgrp session ...", comm may hold anything
		_s=${_s##*) }
		set -- "$1" $_s
		[ "${5:-}" = "$1" ] && kill -s KILL "${_p#/proc/}" 2>/dev/null
		set -- "$1"
	done
}

# read_rc VAR FILE: an exit status from its rc file into VAR: 255 ("did
# not finish") when the file is missing, empty or not a number (the
# program was killed, or TMPDIR was full).  (read, a builtin: no cat, no
# subshell.)
read_rc() {
	_rc=
	IFS= read -r _rc 2>/dev/null <"$2" || :
	case $_rc in
	'' | *[!0-9]*) _rc=255 ;;
	esac
	eval "$1=\$_rc"
}

# read_stage_rcs: tap_rc, sink_rc and ck_rc (0 without checkpoints) from
# the lines "tap N", "sink N", "ck N" pipe-stages appends to $tmp/rc as
# each stage ends (one file, not one a stage, issue #14); 255 ("did not
# finish") for a stage without a whole line there.
read_stage_rcs() {
	tap_rc=255 sink_rc=255 ck_rc=0
	[ -z "$checkpoints" ] || ck_rc=255
	while read -r _k _v; do
		case $_k:$_v in
		*: | *:*[!0-9]*) ;;
		tap:*) tap_rc=$_v ;;
		sink:*) sink_rc=$_v ;;
		ck:*) [ -z "$checkpoints" ] || ck_rc=$_v ;;
		esac
	done 2>/dev/null <"$tmp/rc"
}

# Status 0 when TMPDIR has no room left: a page written there fails with
# ENOSPC.
tmp_full() {
	_why=$(LC_ALL=C dd if=/dev/zero of="$tmp/space" bs=4096 count=1 2>&1 >/dev/null)
	_st=$?
	rm -f "$tmp/space"
	[ $_st -ne 0 ] || return 1
	case $_why in
	*'No space left'*) return 0 ;;
	esac
	return 1
}

no_space() {
	printf 'no space left in TMPDIR (%s)\n' "${TMPDIR:-/tmp}"
}

# sink_check_needed NAME | -c FILE: status 0 unless pipe-sink -n surely
# has nothing to check or say beyond the config pipe-tap -n has loaded: no
# transforms/NAME.jq or .py (pipe-state validate skips it so too), and no
# incremental.checkpoint_every in the pipeline file (the word is not in it,
# nor a backslash, which could spell it in a quoted key).  The name is the
# loader's: FILE's base name without .yaml or .yml.
sink_check_needed() {
	# (config_home(): with no HOME, the user's home from the password file)
	[ -n "${DATASPOC_PIPE_HOME:-}" ] || [ -n "${HOME:-}" ] || return 0
	if [ "$1" = -c ]; then
		_f=$2 _n=${2##*/}
		case $_n in
		?*.yaml) _n=${_n%.yaml} ;;
		?*.yml) _n=${_n%.yml} ;;
		esac
	else
		_n=$1 _f=$home/pipelines/$1.yaml
		[ -e "$_f" ] || _f=$home/pipelines/$1.yml
	fi
	[ -f "$_f" ] && [ -r "$_f" ] || return 0
	while IFS= read -r _l || [ -n "$_l" ]; do
		case $_l in
		*checkpoint_every* | *\\*) return 0 ;;
		esac
	done <"$_f"
	_t=$home/transforms
	[ -e "$_t" ] || [ -L "$_t" ] || return 1
	# (a folder that cannot be searched: let pipe-sink say why)
	[ -d "$_t" ] && [ -x "$_t" ] || return 0
	[ -e "$_t/$_n.jq" ] || [ -L "$_t/$_n.jq" ] || [ -e "$_t/$_n.py" ] || [ -L "$_t/$_n.py" ]
}

# empty_state FILE: status 0 when pipe-state get printed {} (no state).
empty_state() {
	_l= _more=
	[ -f "$1" ] || return 1
	{ IFS= read -r _l; IFS= read -r _more; } <"$1" 2>/dev/null
	[ "$_l" = "{}" ] && [ -z "$_more" ]
}

# committed STATUS ARGS...: the end of a run after pipe-commit -d, which
# removed the private folder once the run was published (no rm to start).
committed() {
	if [ "$1" -eq 0 ]; then
		[ -d "$tmp" ] || tmp=
		exit 0
	fi
	failed="the commit did not finish (pipe-commit $(status_words "$1"))"
	shift
	# Let go of the lock; a commit that began is kept for the next run.
	pipe-commit -a -e "$failed" "$@" <"$tmp/plan"
	err "run '$label' failed: $failed"
	exit 1
}

# run_pipeline FULL VERBOSE ARGS...: ARGS is NAME or -c FILE.
run_pipeline() {
	full=$1 verbose=$2
	shift 2
	label=$1
	[ "$1" = -c ] && label=$(basename -- "$2" | sed 's/\.ya\{0,1\}ml$//')
	tmp= run_id= nl='
'
	# (${tmp%%...}: a signal during the checks runs it while tmp still holds
	# both of pipe-tap -n -D's lines, the folder and the run id)
	trap '[ -z "$tmp" ] || rm -rf "${tmp%%"$nl"*}"' EXIT
	# A signal before the run's own traps (below) ends the driver at once,
	# through the EXIT trap: its private folder goes too.
	trap 'exit 130' INT
	trap 'exit 143' TERM
	trap 'exit 129' HUP

	# Check the config, the tap and the streams before anything is touched
	# (this discovers the tap's catalog when it is not cached yet; the
	# discovery's stderr comes only when it fails, or with -v).
	refresh= check_shown=0
	[ "${refresh_catalog:-0}" = 1 ] && refresh=--refresh-catalog
	if [ "$verbose" = 1 ]; then
		open_private_dir --by-first || exit 1
		DATASPOC_PIPE_RUN_DIR=$tmp
		export DATASPOC_PIPE_RUN_DIR
		# live: the tap's words as discovery runs, and kept for the failure line
		{ pipe-tap -n -v $refresh "$@" </dev/null 2>&1 1>&3 3>&-; echo $? >"$tmp/check.rc"; } 3>&1 |
			tee "$tmp/check.err" >&2
		read_rc rc "$tmp/check.rc"
		check_shown=$(wc -c <"$tmp/check.err")
	else
		# pipe-tap -n -D makes the private folder (no mktemp to start, issue
		# #14), having swept those of runs that are over, and prints its
		# name, then, once the checks passed, a new run id (no run-id file
		# for pipe-state get to make); its stderr goes to check.err there.
		tmp=$(pipe-tap -n -D $$ $refresh "$@" </dev/null)
		rc=$?
		case $tmp in
		*"$nl"*) run_id=${tmp#*"$nl"} tmp=${tmp%%"$nl"*} ;;
		esac
		run_dir_taken || exit 1
	fi
	# A tap that is not there or cannot run is a config error too.
	[ $rc -eq 0 ] || checks_failed $(( rc == 2 || rc == 126 || rc == 127 ? 2 : 1 )) "$@"
	# It prints "checkpoints" for incremental.checkpoint_every (pipe-commit -k).
	checkpoints=
	if sink_check_needed "$@"; then
		checkpoints=$(pipe-sink -n "$@" </dev/null 2>>"$tmp/check.err") || checks_failed 2 "$@"
	fi
	check_unshown >&2

	# The run id: pipe-tap -n -D's; with -v, a program's of its own.
	case $run_id in
	[0-9]*Z-?*) ;;
	*) run_id=$(new_run_id) ;;
	esac
	DATASPOC_PIPE_PID=$$
	# pipe-sink leaves the report of a failure to this driver (one line).
	DATASPOC_PIPE_DRIVER=1
	export DATASPOC_PIPE_PID DATASPOC_PIPE_DRIVER
	# With -v the tap's lines share the terminal: no live progress line.
	[ "$verbose" = 1 ] && DATASPOC_PIPE_PROGRESS=lines && export DATASPOC_PIPE_PROGRESS
	job=
	signal=
	trap 'signal=INT; [ -n "$job" ] && kill -s INT -- "-$job" 2>/dev/null' INT
	trap 'signal=TERM; [ -n "$job" ] && kill -s TERM -- "-$job" 2>/dev/null' TERM
	trap 'signal=HUP; [ -n "$job" ] && kill -s HUP -- "-$job" 2>/dev/null' HUP

	say "Running: $label"
	# (its stderr goes to check.err, whose words have been said: a file
	# made already, not one more to make and remove, issue #14)
	if [ "$full" = 1 ]; then
		pipe-state get -f -r "$run_id" "$@" >"$tmp/state" 2>"$tmp/check.err"
	else
		pipe-state get -r "$run_id" "$@" >"$tmp/state" 2>"$tmp/check.err"
	fi
	rc=$?
	if [ $rc -ne 0 ] && [ -z "$signal" ]; then
		# Nothing ran and pipe-state let go of the lock: nothing to undo or
		# log (a run refused by another's lock leaves the bucket as it was).
		reason=$(first_error "$tmp/check.err")
		tmp_full && reason=$(no_space)
		grep -v -x -F -e "pipe-state: $reason" "$tmp/check.err" >&2
		err "run '$label' failed: ${reason:-reading the saved state failed (status $rc)}"
		[ $rc -eq 2 ] && exit 2
		exit 1
	fi
	DATASPOC_RUN_ID=$run_id
	export DATASPOC_RUN_ID
	[ ! -s "$tmp/check.err" ] || cat "$tmp/check.err" >&2
	if [ -n "$signal" ]; then
		:	# it came while pipe-state ran: no stage starts (below)
	elif ! empty_state "$tmp/state"; then
		say "  Incremental mode (using previous checkpoint)"
	elif [ "$full" = 1 ]; then
		say "  Full extraction (saved state ignored)"
	fi

	sinkflags=
	[ "$full" = 1 ] && sinkflags=-f
	[ -z "$signal" ] || : >"$tmp/plan"
	# Its own session, so a signal reaches every stage and the tap
	# (pipe-stages: pipe-tap | pipe-sink [| pipe-commit -k], each stage's
	# status in a line of rc).  Once a signal came, nothing
	# starts: the extraction would run to its end.  pipe-tap's own messages
	# go to check.err, said by now (the driver says why the run failed; no
	# file of their own to make, issue #14); the end of
	# the tap's stderr to tap.log (pipe-tap keeps it short), and with -v
	# also to the driver's stderr.  An rc line that cannot be written
	# (TMPDIR full) is missing, and says so below.
	if [ -z "$signal" ]; then
		stages_open
		stageflags=$sinkflags
		[ "$verbose" = 1 ] && stageflags="$stageflags -v"
		[ -z "$checkpoints" ] || stageflags="$stageflags -k"
		DATASPOC_PIPE_STAGES_FD=${stages:+8} pipe-stages $stageflags -d "$tmp" "$@" &
		job=$!
		# only the stages hold the lock now
		exec 8>&-
		# (one that came before job was set found nothing to stop)
		[ -z "$signal" ] || kill -s "$signal" -- "-$job" "$job" 2>/dev/null
		while :; do
			wait "$job"
			kill -0 "$job" 2>/dev/null || break
		done
		# The session's leader is gone (at once, when a signal killed it):
		# the run ends when every process of its stages has.  When every
		# stage succeeded, pipe-commit -w looks first (no flock to start
		# for it, issue #14); stages_wait below when one is still there.
		read_stage_rcs
		if [ -n "$signal" ] || [ -z "$stages" ] || [ "$tap_rc" -ne 0 ] ||
			[ "$sink_rc" -ne 0 ] || [ "$ck_rc" -ne 0 ]; then
			stages_wait
			job=
		fi
	fi

	read_stage_rcs
	tap_said=
	[ ! -s "$tmp/check.err" ] ||
		tap_said=$(grep '^pipe-tap: ' "$tmp/check.err" | grep -v '^pipe-tap: warning: ' |
			sed -n '1{s/^pipe-tap: //;p;}')
	failed=
	if [ -n "$signal" ]; then
		failed="interrupted by SIG$signal"
	elif { [ "$tap_rc" -ne 0 ] || [ "$sink_rc" -ne 0 ]; } && tmp_full; then
		# (the stages' own words would name a file, or nothing at all)
		failed=$(no_space)
	elif [ "$ck_rc" -ne 0 ]; then
		# (pipe-sink, then the tap, died of its broken pipe)
		failed="a checkpoint did not finish (pipe-commit -k $(status_words "$ck_rc"))"
	elif [ "$sink_rc" -ne 0 ] && { [ "$tap_rc" -eq 0 ] || [ "$tap_rc" -eq 141 ]; }; then
		failed=$(plan_error "$tmp/plan")
		[ -n "$failed" ] || failed="pipe-sink $(status_words "$sink_rc")"
	elif [ "$tap_rc" -ne 0 ]; then
		failed=$tap_said
		[ -n "$failed" ] || failed="pipe-tap $(status_words "$tap_rc")"
		# pipe-tap's other messages (the one that says why is said below)
		grep '^pipe-tap: ' "$tmp/check.err" | grep -v -x -F -e "pipe-tap: $failed" >&2
	elif [ "$sink_rc" -ne 0 ]; then
		failed=$(plan_error "$tmp/plan")
		[ -n "$failed" ] || failed="pipe-sink $(status_words "$sink_rc")"
	fi
	if [ -z "$failed" ] && [ -n "$job" ]; then
		# (3: a process of the stages is still there, nothing done)
		pipe-commit -w "$stages" -d "$tmp" "$@" <"$tmp/plan"
		rc=$?
		[ $rc -eq 3 ] || { job=; committed "$rc" "$@"; }
		stages_wait
		job=
		[ -z "$signal" ] || failed="interrupted by SIG$signal"
	fi
	[ -n "$failed" ] || { pipe-commit -d "$tmp" "$@" <"$tmp/plan"; committed $? "$@"; }
	# The tap's last words explain most failures; not an interruption's.
	if [ "$verbose" != 1 ] && [ -z "$signal" ] && [ -s "$tmp/tap.log" ]; then
		err "the tap's last words:"
		tail -n 20 "$tmp/tap.log" | sed 's/^/  | /' >&2
	fi
	pipe-commit -a -t "$tmp/tap.log" -e "$failed" "$@" <"$tmp/plan"
	err "run '$label' failed: $(user_terms "$failed")"
	case $signal in
	INT) exit 130 ;;
	TERM) exit 143 ;;
	HUP) exit 129 ;;
	esac
	exit 1
}

cmd_run() {
	full=0 verbose=0 file= name= all=0 jobs=
	while [ $# -gt 0 ]; do
		case $1 in
		--full | -f) full=1 ;;
		-v | --verbose) verbose=1 ;;
		--refresh-catalog) refresh_catalog=1 ;;
		-c) [ $# -ge 2 ] || usage run "option '-c' needs a FILE.yaml"; file=$2; shift ;;
		--all | -a) all=1 ;;
		-j) [ $# -ge 2 ] || usage run "option '-j' needs a number"; jobs=$2; shift ;;
		-j*) jobs=${1#-j} ;;
		--jobs=*) jobs=${1#*=} ;;
		-h | --help) help_run; exit 0 ;;
		-*) usage run "unknown option '$1'" ;;
		*) [ -z "$name" ] || usage run "unexpected argument '$1'"; name=$1 ;;
		esac
		shift
	done
	if [ "$all" = 1 ]; then
		# "run _ --all": the Python tool's form, a placeholder NAME.
		[ "$name" != _ ] || name=
		if [ -n "$name" ] || [ -n "$file" ]; then
			usage run "--all runs every pipeline: give no NAME or -c"
		fi
		case ${jobs:-1} in
		'' | *[!0-9]* | 0 | 0*) usage run "-j wants a number of pipelines at a time (1 or more), not '$jobs'" ;;
		esac
		set --
		[ "$full" = 0 ] || set -- "$@" --full
		[ "$verbose" = 0 ] || set -- "$@" -v
		run_all "${jobs:-1}" "$@"
	fi
	[ -z "$jobs" ] || usage run "-j goes with --all"
	if [ -n "$file" ]; then
		[ -z "$name" ] || usage run "give NAME or -c FILE.yaml, not both"
		run_pipeline "$full" "$verbose" -c "$file"
	fi
	[ -n "$name" ] || usage run "a pipeline NAME (or -c FILE.yaml, or --all) is required"
	run_pipeline "$full" "$verbose" "$name"
}

# `run NAME` starts here, before the rest of this file is read: dash reads
# and runs a script one command at a time, and the commands below (add,
# schedule, status, the help texts) were half of a small run's start in
# instructions (issue #14).  run --all needs them: it goes on to the end.
if [ "${1:-}" = run ]; then
	_all=0
	for _a; do
		case $_a in
		--all | -a) _all=1 ;;
		esac
	done
	if [ "$_all" = 0 ]; then
		shift
		cmd_run "$@"
		exit
	fi
fi

# usage_all [REASON]: what is wrong, then every command's usage; exit 2.
usage_all() {
	[ $# -eq 0 ] || err "$1"
	cat >&2 <<USAGE
usage: $prog init
       $prog add [--tap TAP] [--config FILE] [--bucket URL] [--path PATH]
           [--compression C] [--incremental|--no-incremental] [--cron EXPR] [--yes] NAME
       $prog run [--full] [-v] NAME | -c FILE.yaml
       $prog run --all [-j N] [--full] [-v]
       $prog status [--output text|json] [NAME...]
       $prog logs [-n K] [--output text|json|jsonl] NAME
       $prog validate [--output text|json] [NAME...]
       $prog manifest [--output text|json] BUCKET
       $prog schedule install|remove|list [NAME...]
       $prog mcp [--read-only]
       $prog help [COMMAND] | --version
USAGE
	exit 2
}

# nearest WORD: the command closest to a mistyped WORD (at most 2 edits,
# a swap of neighbours counting as one), if any.
nearest() {
	printf '%s\n' "$1" | awk -v cmds='init add run status logs validate manifest schedule mcp help' '
	function dist(a, b,   i, j, la, lb, d, c, x) {
		la = length(a); lb = length(b)
		for (i = 0; i <= la; i++) d[i, 0] = i
		for (j = 0; j <= lb; j++) d[0, j] = j
		for (i = 1; i <= la; i++)
			for (j = 1; j <= lb; j++) {
				c = substr(a, i, 1) != substr(b, j, 1)
				x = d[i - 1, j] + 1
				if (d[i, j - 1] + 1 < x) x = d[i, j - 1] + 1
				if (d[i - 1, j - 1] + c < x) x = d[i - 1, j - 1] + c
				if (i > 1 && j > 1 && substr(a, i, 1) == substr(b, j - 1, 1) &&
				    substr(a, i - 1, 1) == substr(b, j, 1) && d[i - 2, j - 2] + 1 < x)
					x = d[i - 2, j - 2] + 1
				d[i, j] = x
			}
		return d[la, lb]
	}
	{
		n = split(cmds, c, " "); best = ""; bd = 3
		for (k = 1; k <= n; k++) {
			e = dist(tolower($0), c[k])
			if (e < bd && e < length(c[k])) { bd = e; best = c[k] }
		}
		if (best != "") print best
	}'
}

help_main() {
	cat <<'HELP'
usage: dataspoc-pipe COMMAND [options]

Run Singer taps and land their records in a bucket (a local directory,
S3 or Azure Blob Storage), as Parquet (or compressed JSON lines), with incremental state kept in
the bucket.

Commands:
  init              create $DATASPOC_PIPE_HOME (default ~/.dataspoc-pipe)
  add NAME          create a pipeline: a wizard, or flags for scripts
  run NAME          run pipelines/NAME.yaml (or -c FILE.yaml)
  run --all         run every pipeline, N at a time (-j N)
  status            the last run of each pipeline
  logs NAME         the last run log(s) of a pipeline
  validate [NAME]   check configs, taps and buckets
  manifest BUCKET   the catalog of the tables in a bucket
  schedule          install, remove or list crontab entries
  mcp               serve MCP (stdio) for AI agents
  help [COMMAND]    help on a command
  --version         the version

Exit status: 0 success, 1 the run (or a check) failed, 2 bad usage or config.
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
	case ${1:-} in
	-h | --help) help_init; exit 0 ;;
	esac
	[ $# -eq 0 ] || usage init "unexpected argument '$1'"
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

help_add() {
	cat <<'HELP'
usage: dataspoc-pipe add [options] NAME

Create pipelines/NAME.yaml, asking on stderr for what no option gives and
reading the answers from stdin: the tap, its config file, the bucket, the
base path, the compression, incremental extraction and a cron schedule.
A known tap (tap-postgres, tap-mysql, tap-csv, tap-github, and the built-in
dataspoc-tap-csv, dataspoc-tap-postgres, parquet and google-sheets-public)
gets a config template in sources/NAME.json (mode 0600)
to fill in; another tap gets {} there, and its --about output is shown
when it has one.  An existing sources/NAME.json is kept.  A bad bucket,
compression, y/n or cron answer is asked again (given as an option, it
exits 2 before anything is written).  The result is checked as
`pipe-state check` does and removed when it is invalid.  An existing
pipeline is never overwritten.

Options:
  --tap TAP            the Singer tap: a command on PATH, or "words with args"
  --config FILE        the tap's config file (default sources/NAME.json)
  --bucket URL         a directory, file:///abs/dir or s3://bucket[/prefix]
                       (a relative directory is made absolute); default
                       config.yaml's destination.bucket, which the pipeline
                       then leaves to config.yaml
  --path PATH          the base path in the bucket (default raw)
  --compression C      zstd (default), snappy, gzip or none
  --incremental        pass the saved state to the tap
  --no-incremental     each run replaces the stream's files (the default, as
                       in the Python DataSpoc Pipe)
  --cron EXPR          schedule.cron: five crontab fields or @daily, ...
  -y, --yes            ask nothing: defaults for what no option gives

Exit status: 0 created, 1 the pipeline exists, 2 bad usage or an invalid
config.
HELP
}

help_status() {
	cat <<'HELP'
usage: dataspoc-pipe status [--output text|json] [NAME...]

The last run of each pipeline (default: every pipelines/*.yaml), read from
the newest run log in its bucket: pipeline, last run, status, duration,
records.  A pipeline that never ran shows "never".  --output json prints a
list of {"name", "last_run", "status", "duration", "records"}; a pipeline
never run has status "never", one whose config or bucket cannot be read
"error", and nulls.

Exit status: 0, 1 when a pipeline's config or bucket could not be read, 2 bad
usage or an unknown pipeline.
HELP
}

help_logs() {
	cat <<'HELP'
usage: dataspoc-pipe logs [-n K] [--output text|json|jsonl] NAME

The last K run logs of pipeline NAME (default 1), newest first, read from
<bucket>/.dataspoc/logs/NAME/.  --output json prints them as a JSON list,
jsonl one compact JSON log a line.
HELP
}

help_validate() {
	cat <<'HELP'
usage: dataspoc-pipe validate [--output text|json] [NAME...]

Check each pipeline (default: every pipelines/*.yaml), one line per check:
  config     the pipeline file parses and its tap's config file is a
             readable JSON object (run refuses to start without that too)
  tap        the tap is on PATH and executable
  transform  transforms/NAME.jq compiles (only when there is one)
  bucket     a probe object can be written, read back, listed and deleted;
             says whether the store honours conditional creates
  secrets    WARN when the tap's config holds secrets (password, token,
             key, ...) and is readable by other users
  placeholders  WARN when the tap's config still holds values of add's
             templates (CHANGE_ME, /path/to/...), naming the members
Each line is "NAME: CHECK: ok", "NAME: CHECK: FAIL: reason" or
"NAME: CHECK: WARN: reason".  --output json prints a list of
{"pipeline", "check", "status": "ok"|"fail"|"warn", "message"}.

Exit status: 0 every check passed (warnings allowed), 1 one failed, 2 bad
usage or an unknown pipeline.
HELP
}

help_manifest() {
	cat <<'HELP'
usage: dataspoc-pipe manifest [--output text|json] BUCKET

The catalog of BUCKET (<bucket>/.dataspoc/manifest.json): each table with
its rows, extractions, last extraction and number of columns; --output
json prints the manifest as stored.  BUCKET is a directory, file:///abs/dir
or s3://bucket[/prefix].

Exit status: 0, 1 when the bucket has no manifest or cannot be read.
HELP
}

help_schedule() {
	cat <<'HELP'
usage: dataspoc-pipe schedule install|remove|list [NAME...]

Crontab entries for the pipelines with a schedule.cron (default: every
pipeline), one line each:

  CRON flock -n LOCK dataspoc-pipe run NAME >>LOG 2>&1  # dataspoc-pipe:NAME

flock keeps two runs of a pipeline on this machine from overlapping; LOCK
is $DATASPOC_PIPE_HOME/locks/NAME.lock and LOG $DATASPOC_PIPE_HOME/logs/NAME.log.
The line starts with DATASPOC_PIPE_HOME=... when that is not
~/.dataspoc-pipe.  Only lines ending in "# dataspoc-pipe:NAME" are ever
changed; the crontab is read with `crontab -l` and written with
`crontab -` only when it changes.

  install   add or update the entries; without NAME, also drop entries of
            pipelines gone or without a schedule.cron
  remove    remove the entries (all of them without NAME)
  list      print the entries

A schedule.cron that is not valid (five fields, with ranges, steps, lists
and names, or @hourly, @daily, ...) stops install before the crontab is
touched.

Exit status: 0, 1 crontab failed, 2 bad usage or an invalid config.
HELP
}

help_help() {
	cat <<'HELP'
usage: dataspoc-pipe help [COMMAND]

Help on dataspoc-pipe, or on one of its commands: init, add, run, status,
logs, validate, manifest, schedule, mcp, help, version.
HELP
}

help_mcp() {
	cat <<'HELP'
usage: dataspoc-pipe mcp [--read-only]

Serve the Model Context Protocol on stdin and stdout, for AI agents (an MCP
host starts it: {"command": "dataspoc-pipe", "args": ["mcp"]}): the tools
list_pipelines, pipeline_config, run_pipeline, pipeline_status,
pipeline_logs, show_manifest and validate_pipeline, and the resource
pipe://pipelines, answered by the commands of dataspoc-pipe, secrets masked.
run_pipeline takes the pipeline's lock, reports progress and stops cleanly
when cancelled.  --read-only serves without run_pipeline.  Logs go to
stderr.  See pipe-mcp(1).
HELP
}

help_version() {
	cat <<'HELP'
usage: dataspoc-pipe --version | -v | -V

Print "dataspoc-pipe VERSION".
HELP
}

# ---- pipelines ---------------------------------------------------------------

# valid_name NAME: status 0 when NAME is a pipeline name (the rule is
# pipe-state's, config_valid_name()).
valid_name() {
	pipe-state check-name -- "$1" 2>/dev/null
}

# Every pipeline of the home directory, one name a line, sorted (a file
# whose name is not a pipeline's is skipped with a warning).
pipelines() {
	pipe-state pipelines
}

# A value for a YAML file: single-quoted, ' doubled.
yaml_str() {
	printf "'%s'" "$(printf '%s' "$1" | sed "s/'/''/g")"
}

# ---- add ---------------------------------------------------------------------

# The config template of a known tap, from the templates installed with
# the program (share/dataspoc-pipe/templates/TAP.json beside bin/).
tap_template() {
	case $1 in
	'' | */* | .*) return 1 ;;
	esac
	[ -f "$templates/$1.json" ] && cat -- "$templates/$1.json"
}

# ask VAR PROMPT DEFAULT REQUIRED OPTION: the answer from stdin (prompt on
# stderr), the default for an empty answer; with --yes the default without
# asking.
ask() {
	_var=$1 _prompt=$2 _def=$3 _req=$4 _opt=$5
	if [ "$yes" = 1 ]; then
		[ -n "$_def" ] || [ "$_req" = 0 ] || { err "add: $_opt is needed with --yes"; exit 2; }
		eval "$_var=\$_def"
		return 0
	fi
	while :; do
		if [ -n "$_def" ]; then
			printf '%s [%s]: ' "$_prompt" "$_def" >&2
		else
			printf '%s: ' "$_prompt" >&2
		fi
		if ! IFS= read -r _ans; then
			printf '\n' >&2
			err "add: no answer for '$_prompt' (end of input)"
			exit 2
		fi
		[ -n "$_ans" ] || _ans=$_def
		if [ -n "$_ans" ] || [ "$_req" = 0 ]; then
			eval "$_var=\$_ans"
			return 0
		fi
		err "add: an answer is needed"
	done
}

# The tap's --about, shown to whoever writes its config.
show_about() {
	set -f
	# shellcheck disable=SC2086 # the tap is "words with args"
	set -- $1
	set +f
	command -v -- "$1" >/dev/null 2>&1 || return 0
	if command -v timeout >/dev/null 2>&1; then
		about=$(timeout 10 "$@" --about 2>/dev/null </dev/null) || return 0
	else
		about=$("$@" --about 2>/dev/null </dev/null) || return 0
	fi
	[ -n "$about" ] || return 0
	err "$1 --about says:"
	printf '%s\n' "$about" | sed 's/^/  | /' >&2
}

cmd_add() {
	tap= tapconf= bucket= bpath= bpath_set=0 compression= incremental= cron= cron_set=0 yes=0 name=
	while [ $# -gt 0 ]; do
		case $1 in
		--tap | --config | --bucket | --path | --compression | --cron)
			[ $# -ge 2 ] || usage add "option '$1' needs a value"
			opt=$1 val=$2
			shift ;;
		--tap=* | --config=* | --bucket=* | --path=* | --compression=* | --cron=*)
			opt=${1%%=*} val=${1#*=} ;;
		--incremental) incremental=true; opt= ;;
		--no-incremental) incremental=false; opt= ;;
		-y | --yes) yes=1; opt= ;;
		-h | --help) help_add; exit 0 ;;
		-*) usage add "unknown option '$1'" ;;
		*) [ -z "$name" ] || usage add "unexpected argument '$1'"; name=$1; opt= ;;
		esac
		case $opt in
		--tap) tap=$val ;;
		--config) tapconf=$val ;;
		--bucket) bucket=$val ;;
		--path) bpath=$val; bpath_set=1 ;;
		--compression) compression=$val ;;
		--cron) cron=$val; cron_set=1 ;;
		esac
		shift
	done
	[ -n "$name" ] || usage add "a pipeline NAME is required"
	valid_name "$name" || { err "add: invalid pipeline name '$name' (letters, digits, '.', '_', '-'; at most 64; starting with a letter or digit)"; exit 2; }
	yaml=$home/pipelines/$name.yaml
	for f in "$yaml" "$home/pipelines/$name.yml"; do
		if [ -e "$f" ]; then
			err "add: pipeline '$name' already exists: $f (remove it first, or choose another name)"
			exit 1
		fi
	done
	mkdir -p "$home/pipelines" "$home/sources" || exit 1

	[ -n "$tap" ] || ask tap "Tap (a Singer tap command, e.g. tap-postgres)" "" 1 --tap
	set -f
	# shellcheck disable=SC2086
	set -- $tap
	set +f
	tapname=${1:-}
	tapname=${tapname##*/}
	default_conf=$home/sources/$name.json
	template=0
	if [ -z "$tapconf" ]; then
		if [ ! -e "$default_conf" ]; then
			if tap_template "$tapname" >/dev/null; then
				template=1
			else
				template=2
				show_about "$tap"
			fi
		fi
		ask tapconf "Tap config file" "$default_conf" 1 --config
	fi
	case $tapconf in
	/*) ;;
	'~/'*) tapconf=${HOME:-}/${tapconf#'~/'} ;;
	*) tapconf=$PWD/$tapconf ;;
	esac
	[ "$tapconf" = "$default_conf" ] || template=0

	# config.yaml's destination.bucket, when it gives one, is the default
	# and is then left out of the pipeline
	defbucket=$(pipe-state check -b '' 2>/dev/null) || defbucket=
	given=$bucket
	while :; do
		if [ -z "$bucket" ] && [ "$yes" = 1 ] && [ -z "$defbucket" ]; then
			err "add: --bucket is required ($home/config.yaml gives no destination.bucket)"
			exit 2
		fi
		[ -n "$bucket" ] || ask bucket "Bucket (a directory, file:///abs/dir or s3://bucket[/prefix])" "$defbucket" 1 --bucket
		# checked and made absolute by the loader's own rule
		if out=$(pipe-state check -b "$bucket" 2>&1); then
			bucket=$out
			break
		fi
		err "add: ${out#pipe-state: }"
		[ "$yes" = 0 ] && [ -z "$given" ] || exit 2
		bucket=
	done
	[ "$bucket" != "$defbucket" ] || bucket=
	[ "$bpath_set" = 1 ] || ask bpath "Base path in the bucket" raw 0 --path
	given=$compression
	while :; do
		[ -n "$compression" ] || ask compression "Compression (zstd, snappy, gzip, none)" zstd 1 --compression
		case $compression in
		zstd | snappy | gzip | none) break ;;
		esac
		err "add: compression must be zstd, snappy, gzip or none, not '$compression'"
		[ "$yes" = 0 ] && [ -z "$given" ] || exit 2
		compression=
	done
	# The Python tool's default: each run replaces the stream's files.
	while [ -z "$incremental" ]; do
		ask incremental "Incremental extraction (y/n)" n 1 --incremental
		case $incremental in
		[yY] | [yY][eE][sS]) incremental=true ;;
		[nN] | [nN][oO]) incremental=false ;;
		*) err "add: answer y or n"; incremental= ;;
		esac
	done
	given=$cron_set
	while :; do
		[ "$cron_set" = 1 ] || ask cron "Cron schedule (e.g. 0 */2 * * *; empty for none)" "" 0 --cron
		[ -n "$cron" ] || break
		# checked by the loader itself, in a pipeline of its own
		open_private_dir || exit 1
	crondir=$tmp
		{
			say "source: {tap: x}"
			say "destination: {bucket: /}"
			say "schedule:"
			say "  cron: $(yaml_str "$cron")"
		} >"$crondir/cron.yaml"
		out=$(pipe-state check -c "$crondir/cron.yaml" 2>&1 >/dev/null)
		cron_rc=$?
		rm -rf "$crondir"
		[ "$cron_rc" != 0 ] || break
		err "add: ${out#"pipe-state: $crondir/cron.yaml:"*: }"
		[ "$yes" = 0 ] && [ "$given" = 0 ] || exit 2
		cron=
	done

	umask 077
	tmpyaml=$home/pipelines/.$name.yaml.$$
	trap 'rm -f "$tmpyaml"' EXIT
	{
		say "# written by dataspoc-pipe add"
		say "source:"
		say "  tap: $(yaml_str "$tap")"
		if [ "$tapconf" = "$default_conf" ]; then
			say "  config: ../sources/$name.json"
		else
			say "  config: $(yaml_str "$tapconf")"
		fi
		say "destination:"
		[ -z "$bucket" ] || say "  bucket: $(yaml_str "$bucket")"
		say "  path: $(yaml_str "$bpath")"
		say "  compression: $compression"
		say "incremental:"
		say "  enabled: $incremental"
		if [ -n "$cron" ]; then
			say "schedule:"
			say "  cron: $(yaml_str "$cron")"
		fi
	} >"$tmpyaml" || exit 1
	chmod 644 "$tmpyaml" || exit 1
	# link(2) creates it only if absent, even against a concurrent add
	if ! ln "$tmpyaml" "$yaml" 2>/dev/null; then
		err "add: pipeline '$name' already exists: $yaml (remove it first, or choose another name)"
		exit 1
	fi
	rm -f "$tmpyaml"
	wrote_conf=
	if [ "$template" = 1 ] && [ ! -e "$tapconf" ]; then
		tap_template "$tapname" >"$tapconf" && wrote_conf=$tapconf
	elif [ "$template" = 2 ] && [ ! -e "$tapconf" ]; then
		say '{}' >"$tapconf" && wrote_conf=$tapconf
	fi
	if ! out=$(pipe-state check "$name" 2>&1 >/dev/null); then
		rm -f "$yaml" ${wrote_conf:+"$wrote_conf"}
		# the file is gone: say what was wrong, not where it was
		out=${out#pipe-state: }
		case $out in
		"$yaml":*) out=${out#"$yaml":*: } ;;
		esac
		err "add: pipeline '$name' not created: $out"
		exit 2
	fi
	# its warnings but the placeholders of the template just written
	printf '%s\n' "$out" | grep -v -e '^$' -e "^pipe-state: warning: the tap's config " >&2 || :
	say "Created $yaml"
	if [ -n "$wrote_conf" ] && [ "$template" = 1 ]; then
		say "Created $wrote_conf: a template for $tapname, fill in its values"
	elif [ -n "$wrote_conf" ]; then
		say "Created $wrote_conf: an empty config, fill in what $tapname needs"
	fi
	say "Next: dataspoc-pipe validate $name && dataspoc-pipe run $name"
}

# ---- run --all ---------------------------------------------------------------

# run_all JOBS RUN-OPTIONS...: every pipeline, JOBS at a time.  Each
# pipeline's output is kept apart and printed when it finishes.
run_all() {
	jobs=$1
	shift
	names=$(pipelines)
	if [ -z "$names" ]; then
		err "run --all: no pipelines in $home/pipelines"
		say "Summary: 0 success, 0 failure(s)"
		exit 0
	fi
	open_private_dir || exit 1
	trap 'rm -rf "$tmp"' EXIT
	mkfifo "$tmp/done" || exit 1
	# Read and write: never an end of file, and no open(2) blocks.
	exec 3<>"$tmp/done"
	running=0 ok=0 failed=0 failed_names= signal= unstarted=
	# Background jobs of a script ignore SIGINT, so pass signals on as TERM.
	trap 'signal=INT; stop_all' INT
	trap 'signal=TERM; stop_all' TERM
	trap 'signal=HUP; stop_all' HUP
	for name in $names; do
		while [ "$running" -ge "$jobs" ]; do
			collect_one
		done
		if [ -n "$signal" ]; then
			unstarted="$unstarted $name"
			continue
		fi
		(
			sh "$self" run "$@" "$name" >"$tmp/$name.out" 2>"$tmp/$name.err" 3>&- &
			echo $! >"$tmp/$name.pid"
			wait $!
			echo "$? $name" >&3
		) &
		running=$((running + 1))
	done
	while [ "$running" -gt 0 ]; do
		collect_one
	done
	exec 3>&-
	say "Summary: $ok success, $failed failure(s)"
	[ -z "$failed_names" ] ||
		err "run --all: failed: $(printf '%s\n' $failed_names | LC_ALL=C sort | paste -sd ' ' -)"
	[ -z "$unstarted" ] || err "run --all: interrupted by SIG$signal, not started:$unstarted"
	case $signal in
	INT) exit 130 ;;
	TERM) exit 143 ;;
	HUP) exit 129 ;;
	esac
	[ "$failed" -eq 0 ] || exit 1
	exit 0
}

stop_all() {
	for p in "$tmp"/*.pid; do
		[ -f "$p" ] || continue
		n=${p##*/}
		n=${n%.pid}
		[ -e "$tmp/$n.done" ] || kill -s TERM "$(cat "$p")" 2>/dev/null
	done
}

collect_one() {
	IFS=' ' read -r done_rc done_name <&3 || return 0
	: >"$tmp/$done_name.done"
	running=$((running - 1))
	cat "$tmp/$done_name.out"
	cat "$tmp/$done_name.err" >&2
	if [ "$done_rc" -eq 0 ]; then
		ok=$((ok + 1))
	else
		failed=$((failed + 1))
		failed_names="$failed_names $done_name"
	fi
}

# ---- status, logs, manifest ----------------------------------------------------

# output_flag CMD VALUE ALLOWED...: VALUE when it is one of ALLOWED.
# output_flag COMMAND FORMAT ACCEPTED...: text is every command's human
# format, and table its other name (status and manifest said table).
output_flag() {
	_c=$1 _v=$2
	shift 2
	[ "$_v" != table ] || return 0
	for _a; do
		[ "$_v" != "$_a" ] || return 0
	done
	err "$_c: unknown output format '$_v' (use $*)"
	exit 2
}

cmd_status() {
	fmt=text
	while [ $# -gt 0 ]; do
		case $1 in
		--output | -o) [ $# -ge 2 ] || usage status "option '$1' needs a format"; fmt=$2; shift ;;
		--output=*) fmt=${1#*=} ;;
		-h | --help) help_status; exit 0 ;;
		--) shift; break ;;
		-*) usage status "unknown option '$1'" ;;
		*) break ;;
		esac
		shift
	done
	output_flag status "$fmt" text json
	exec pipe-state status -o "$fmt" "$@"
}

cmd_logs() {
	fmt=text n=1 name=
	while [ $# -gt 0 ]; do
		case $1 in
		--output | -o) [ $# -ge 2 ] || usage logs "option '$1' needs a format"; fmt=$2; shift ;;
		--output=*) fmt=${1#*=} ;;
		-n) [ $# -ge 2 ] || usage logs "option '-n' needs a number"; n=$2; shift ;;
		-n*) n=${1#-n} ;;
		-h | --help) help_logs; exit 0 ;;
		-*) usage logs "unknown option '$1'" ;;
		*) [ -z "$name" ] || usage logs "unexpected argument '$1'"; name=$1 ;;
		esac
		shift
	done
	[ -n "$name" ] || usage logs "a pipeline NAME is required"
	output_flag logs "$fmt" text json jsonl
	exec pipe-state logs -n "$n" -o "$fmt" "$name"
}

cmd_manifest() {
	fmt=text bucket=
	while [ $# -gt 0 ]; do
		case $1 in
		--output | -o) [ $# -ge 2 ] || usage manifest "option '$1' needs a format"; fmt=$2; shift ;;
		--output=*) fmt=${1#*=} ;;
		-h | --help) help_manifest; exit 0 ;;
		-*) usage manifest "unknown option '$1'" ;;
		*) [ -z "$bucket" ] || usage manifest "unexpected argument '$1'"; bucket=$1 ;;
		esac
		shift
	done
	[ -n "$bucket" ] || usage manifest "a BUCKET is required"
	output_flag manifest "$fmt" text json
	exec pipe-state manifest -o "$fmt" -b "$bucket"
}

# ---- validate ------------------------------------------------------------------

cmd_validate() {
	fmt=text names=
	while [ $# -gt 0 ]; do
		case $1 in
		--output | -o) [ $# -ge 2 ] || usage validate "option '$1' needs a format"; fmt=$2; shift ;;
		--output=*) fmt=${1#*=} ;;
		-h | --help) help_validate; exit 0 ;;
		-*) usage validate "unknown option '$1'" ;;
		*) valid_name "$1" || { err "validate: invalid pipeline name '$1'"; exit 2; }
		   names="$names $1" ;;
		esac
		shift
	done
	output_flag validate "$fmt" text json
	[ -n "$names" ] || names=$(pipelines)
	if [ -z "$names" ]; then
		err "validate: no pipelines in $home/pipelines"
		[ "$fmt" != json ] || say '[]'
		exit 0
	fi
	# (pipeline names hold no blanks and no glob characters)
	# shellcheck disable=SC2086
	exec pipe-state validate -o "$fmt" -- $names
}

# ---- schedule ------------------------------------------------------------------

# A word for the crontab line: quoted for sh when needed, % escaped for cron.
cron_word() {
	case $1 in
	'' | *[!A-Za-z0-9/._+@:,=-]*)
		printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g; s/%/\\\\%/g")" ;;
	*) printf '%s' "$1" ;;
	esac
}

cron_entry() {	# NAME CRON
	envs=
	[ "$home" = "${HOME:-}/.dataspoc-pipe" ] || envs="DATASPOC_PIPE_HOME=$(cron_word "$home") "
	printf '%s %sflock -n %s %s run %s >>%s 2>&1  # dataspoc-pipe:%s\n' "$2" "$envs" \
		"$(cron_word "$home/locks/$1.lock")" "$(cron_word "$self")" "$1" \
		"$(cron_word "$home/logs/$1.log")" "$1"
}

# crontab_read FILE: the current crontab (none: empty).
crontab_read() {
	if ! crontab -l >"$1" 2>"$stmp/crontab.err"; then
		if grep -qi 'no crontab' "$stmp/crontab.err"; then
			: >"$1"
		else
			err "schedule: crontab -l failed: $(head -n 1 "$stmp/crontab.err")"
			exit 1
		fi
	fi
}

# pick KEEP ALL NAMES < CRONTAB: with KEEP 1 our lines of NAMES (or ALL of
# ours), with KEEP 0 every other line.  Ours end in "  # dataspoc-pipe:NAME".
pick() {
	awk -v keep="$1" -v all="$2" -v names=" $3 " '{
		mine = 0
		if (match($0, /  # dataspoc-pipe:[A-Za-z0-9._-]+$/)) {
			n = substr($0, RSTART + 18)
			mine = all == 1 || index(names, " " n " ") > 0
		}
		if (mine == keep) print
	}'
}

crontab_write() {	# OLD NEW
	if cmp -s "$1" "$2"; then
		return 0
	fi
	crontab - <"$2" 2>"$stmp/crontab.err" || {
		err "schedule: crontab - failed: $(head -n 1 "$stmp/crontab.err")"
		exit 1
	}
}

# tap_on_cron_path NAME: warn when the pipeline's tap is found on this PATH
# but not on the one its crontab line runs with: the crontab's PATH= (cron's
# default: /usr/bin:/bin) after this script's own directory.
tap_on_cron_path() {
	_t=$(pipe-state check -p tap "$1" 2>/dev/null) || return 0
	case $_t in '' | */*) return 0 ;; esac
	_cp=$(sed -n 's/^[[:space:]]*PATH[[:space:]]*=[[:space:]]*//p' "$stmp/old" | tail -n 1)
	_cp=${self%/*}:${_cp:-/usr/bin:/bin}
	_here=$(command -v -- "$_t" 2>/dev/null) || return 0
	(PATH=$_cp; command -v -- "$_t" >/dev/null 2>&1) && return 0
	err "schedule: warning: pipeline '$1': tap '$_t' is on your PATH ($_here) but not on cron's ($_cp): add a PATH= line to the crontab or give source.tap as a full path"
}

cmd_schedule() {
	action=${1:-}
	[ $# -eq 0 ] || shift
	case $action in
	install | remove | list) ;;
	-h | --help) help_schedule; exit 0 ;;
	'') usage schedule "an action is required (install, remove or list)" ;;
	*) usage schedule "unknown action '$action' (install, remove or list)" ;;
	esac
	names=
	for a; do
		case $a in
		-h | --help) help_schedule; exit 0 ;;
		-*) usage schedule "unknown option '$a'" ;;
		esac
		valid_name "$a" || { err "schedule: invalid pipeline name '$a'"; exit 2; }
		names="$names $a"
	done
	all=0
	[ -n "$names" ] || all=1
	if ! command -v crontab >/dev/null 2>&1; then
		err "schedule: crontab not found: install cron (Debian: apt-get install cron)"
		exit 1
	fi
	open_private_dir || exit 1
	stmp=$tmp
	trap 'rm -rf "$stmp"' EXIT
	crontab_read "$stmp/old"
	case $action in
	list)
		pick 1 "$all" "$names" <"$stmp/old" >"$stmp/mine"
		[ -s "$stmp/mine" ] || err "schedule: no dataspoc-pipe entries in the crontab"
		cat "$stmp/mine"
		;;
	remove)
		pick 1 "$all" "$names" <"$stmp/old" >"$stmp/gone"
		pick 0 "$all" "$names" <"$stmp/old" >"$stmp/new"
		if [ -s "$stmp/gone" ]; then
			sed 's/.*# dataspoc-pipe:/Removed /' "$stmp/gone"
		else
			err "schedule: no dataspoc-pipe entries to remove"
		fi
		crontab_write "$stmp/old" "$stmp/new"
		;;
	install)
		[ "$all" = 0 ] || names=$(pipelines)
		: >"$stmp/entries"
		bad=0
		for n in $names; do
			if ! c=$(pipe-state check -p cron "$n"); then
				bad=1
				continue
			fi
			if [ -z "$c" ]; then
				[ "$all" = 1 ] || err "schedule: pipeline '$n' has no schedule.cron: nothing to install"
				continue
			fi
			tap_on_cron_path "$n"
			cron_entry "$n" "$c" >"$stmp/entry"
			cat "$stmp/entry" >>"$stmp/entries"
			if grep -qxF -f "$stmp/entry" "$stmp/old"; then
				printf 'Unchanged: %s (%s)\n' "$n" "$c" >>"$stmp/report"
			else
				printf 'Installed %s (%s)\n' "$n" "$c" >>"$stmp/report"
			fi
		done
		if [ "$bad" = 1 ]; then
			err "schedule: crontab left unchanged"
			exit 2
		fi
		if [ ! -s "$stmp/entries" ] && [ "$all" = 1 ]; then
			err "schedule: no pipeline has a schedule.cron"
		fi
		mkdir -p "$home/locks" "$home/logs" || exit 1
		{ pick 0 "$all" "$names" <"$stmp/old"; cat "$stmp/entries"; } >"$stmp/new"
		crontab_write "$stmp/old" "$stmp/new"
		[ ! -f "$stmp/report" ] || cat "$stmp/report"
		;;
	esac
	exit 0
}

# ---- mcp -----------------------------------------------------------------------

cmd_mcp() {
	ro=
	while [ $# -gt 0 ]; do
		case $1 in
		--read-only | -r) ro=-r ;;
		-h | --help) help_mcp; exit 0 ;;
		*) usage mcp "unexpected argument '$1'" ;;
		esac
		shift
	done
	exec pipe-mcp $ro
}

[ $# -gt 0 ] || usage_all "a command is required"
cmd=$1
shift
case $cmd in
init) cmd_init "$@" ;;
add) cmd_add "$@" ;;
run) cmd_run "$@" ;;
status) cmd_status "$@" ;;
logs) cmd_logs "$@" ;;
validate) cmd_validate "$@" ;;
manifest) cmd_manifest "$@" ;;
schedule) cmd_schedule "$@" ;;
mcp) cmd_mcp "$@" ;;
help)
	[ $# -le 1 ] || usage help "unexpected argument '$2'"
	case ${1:-} in
	'') help_main ;;
	init) help_init ;;
	add) help_add ;;
	run) help_run ;;
	status) help_status ;;
	logs) help_logs ;;
	validate) help_validate ;;
	manifest) help_manifest ;;
	schedule) help_schedule ;;
	mcp) help_mcp ;;
	help) help_help ;;
	version | --version) help_version ;;
	*) err "help: no command '$1'"; exit 2 ;;
	esac ;;
-h | --help) help_main ;;
--version | -V | -v) say "dataspoc-pipe $VERSION" ;;
*)
	case $cmd in
	-*) usage_all "unknown option '$cmd'" ;;
	esac
	near=$(nearest "$cmd")
	if [ -n "$near" ]; then
		usage_all "unknown command '$cmd': did you mean '$near'?"
	fi
	usage_all "unknown command '$cmd'" ;;
esac
