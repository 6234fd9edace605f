#!/bin/sh
# dataspoc-pipe: run Singer taps into a bucket, incrementally and safely.
# A POSIX sh driver over pipe-state, pipe-tap, pipe-sink and pipe-commit:
#   pipe-state get NAME | pipe-tap NAME | pipe-sink NAME > plan
#   then, only if every stage succeeded: pipe-commit NAME < plan
# This file keeps the dispatch and run; init, add and schedule are scripts of
# their own in libexec/dataspoc-pipe/ (git's libexec/git-core), found beside
# this file's bin/ as ../libexec, all sourcing dataspoc-pipe-sh-setup there
# (say, err, usage, the private folder).  The help of each command is the
# man page's text for it (share/dataspoc-pipe/help/, made from
# man/dataspoc-pipe.1 at build time).  See dataspoc-pipe(1).
set -u

VERSION=0.1.0

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
libexec=${here:-.}/../libexec/dataspoc-pipe
[ -r "$libexec/dataspoc-pipe-sh-setup" ] || {
	printf 'dataspoc-pipe: cannot find %s\n' "$libexec/dataspoc-pipe-sh-setup" >&2
	exit 2
}
. "$libexec/dataspoc-pipe-sh-setup"

# usage_of COMMAND: its usage lines (the driver's commands; init, add and
# schedule say theirs).
usage_of() {
	case $1 in
	run) say "usage: dataspoc-pipe run [--full] [-v] NAME
       dataspoc-pipe run [--full] [-v] -c FILE.yaml
       dataspoc-pipe run --all [-j N] [--full] [-v]   (also: run _ --all)
       dataspoc-pipe run [--full] [-v] NAME --shards N
       dataspoc-pipe run [--full] NAME --plan --shards N
       dataspoc-pipe run [-v] NAME --shard I/N --run-id ID
       dataspoc-pipe run NAME --hold --run-id ID" ;;
	commit) say "usage: dataspoc-pipe commit NAME --run-id ID [--wait SECONDS]" ;;
	compact) say "usage: dataspoc-pipe compact NAME [STREAM]" ;;
	status) say "usage: dataspoc-pipe status [--output text|json] [NAME... | -c FILE.yaml]" ;;
	logs) say "usage: dataspoc-pipe logs [-n K] [--output text|json|jsonl] NAME | -c FILE.yaml" ;;
	validate) say "usage: dataspoc-pipe validate [--output text|json] [NAME...]" ;;
	manifest) say "usage: dataspoc-pipe manifest [--output text|json] BUCKET | -c FILE.yaml" ;;
	mcp) say "usage: dataspoc-pipe mcp [--read-only]" ;;
	help) say "usage: dataspoc-pipe help [COMMAND]" ;;
	version) say "usage: dataspoc-pipe version | --version | -v | -V" ;;
	esac
}

# ---- run -----------------------------------------------------------------------

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
# without its "prog: " (the pipe-* programs speak as dataspoc-pipe).
first_error() {
	grep -v -e '^[a-z-]*: warning: ' -e '^[[:space:]]*|' "$1" |
		sed -n '1{s/^pipe-[a-z]*: //;s/^dataspoc-pipe: //;p;}'
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
	check_unshown | grep -v -x -F -e "$prog: $reason" >&2
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
	refresh= check_shown=0 sink_check=transform merge=merge
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
		# for pipe-state get to make) and what pipe-sink -n would have to
		# check (transform, checkpoints or none); its stderr goes to
		# check.err there.
		tmp=$(pipe-tap -n -D $$ $refresh "$@" </dev/null)
		rc=$?
		case $tmp in
		*"$nl"*) run_id=${tmp#*"$nl"} tmp=${tmp%%"$nl"*} ;;
		esac
		case $run_id in
		*"$nl"*) sink_check=${run_id#*"$nl"} run_id=${run_id%%"$nl"*} ;;
		esac
		case $sink_check in
		*"$nl"*) merge=${sink_check#*"$nl"} sink_check=${sink_check%%"$nl"*} ;;
		esac
		run_dir_taken || exit 1
	fi
	# A tap that is not there or cannot run is a config error too.
	[ $rc -eq 0 ] || checks_failed $(( rc == 2 || rc == 126 || rc == 127 ? 2 : 1 )) "$@"
	# pipe-sink -n checks a transform and prints "checkpoints" for
	# incremental.checkpoint_every (pipe-commit -k); it is started only when
	# pipe-tap -n -D's third line says there may be a transform to check
	# (with -v, whose pipe-tap -n has no such line, always).
	checkpoints=
	case $sink_check in
	none) ;;
	checkpoints) checkpoints=checkpoints ;;
	*) checkpoints=$(pipe-sink -n "$@" </dev/null 2>>"$tmp/check.err") || checks_failed 2 "$@" ;;
	esac
	check_unshown >&2

	# The run id: pipe-tap -n -D's; with -v, a program's of its own.
	case $run_id in
	[0-9]*Z-?*) ;;
	*) run_id=$(new_run_id) ;;
	esac
	# A shard runs under its run's id; its own id names its attempt, the
	# folder its files are staged in (a second attempt's replace the first's).
	if [ -n "$shard" ]; then
		DATASPOC_PIPE_SHARD=$shard DATASPOC_PIPE_SHARD_ATTEMPT=$run_id
		export DATASPOC_PIPE_SHARD DATASPOC_PIPE_SHARD_ATTEMPT
		run_id=$shard_run label="$label (shard $shard of run $shard_run)"
	fi
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

	# (run --timestamps: the run's id, which the lines after it carry)
	if [ -n "${DATASPOC_PIPE_TIMESTAMPS:-}" ]; then
		say "Running: $label (run $run_id)"
	else
		say "Running: $label"
	fi
	# (its stderr goes to check.err, whose words have been said: a file
	# made already, not one more to make and remove, issue #14)
	if [ -n "$shard" ]; then
		# the state the run's plan holds, while the run holds the lock, and
		# the snapshot a split table is read in, when a holder staged it
		# (run --hold)
		pipe-shard get -s "$shard" -r "$run_id" -S "$tmp/source.json" "$@" >"$tmp/state" 2>"$tmp/check.err"
	elif [ "$full" = 1 ]; then
		pipe-state get -f -r "$run_id" "$@" >"$tmp/state" 2>"$tmp/check.err"
	else
		pipe-state get -r "$run_id" "$@" >"$tmp/state" 2>"$tmp/check.err"
	fi
	rc=$?
	if [ $rc -ne 0 ] && [ -z "$signal" ]; then
		# Nothing ran and pipe-state let go of the lock: nothing to undo
		# (a run refused by another's lock leaves the bucket as it was).
		reason=$(first_error "$tmp/check.err")
		tmp_full && reason=$(no_space)
		grep -v -x -F -e "$prog: $reason" "$tmp/check.err" >&2
		err "run '$label' failed: ${reason:-reading the saved state failed (status $rc)}"
		# 75 (EX_TEMPFAIL): another run holds the lock; a scheduler may
		# try again later
		case $rc in 2 | 75) exit $rc ;; esac
		# A failure for status (a run at 2 a.m. whose bucket refused it):
		# logged in the bucket if it takes it, else kept in the home.
		[ -n "$shard" ] || pipe-commit -a -r "$run_id" \
			-e "${reason:-reading the saved state failed (status $rc)}" "$@" </dev/null >/dev/null 2>&1
		exit 1
	fi
	DATASPOC_RUN_ID=$run_id
	export DATASPOC_RUN_ID
	if [ -n "$shard" ] && [ -s "$tmp/source.json" ]; then
		DATASPOC_PIPE_PG_SNAPSHOT=$tmp/source.json
		export DATASPOC_PIPE_PG_SNAPSHOT
	fi
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
	tap_said= last_words=1
	[ ! -s "$tmp/check.err" ] ||
		tap_said=$(grep "^$prog: " "$tmp/check.err" | grep -v "^$prog: warning: " |
			sed -n "1{s/^$prog: //;p;}")
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
		# (the sink's own failure, a transform's too: not the tap's words)
		last_words=
		failed=$(plan_error "$tmp/plan")
		[ -n "$failed" ] || failed="pipe-sink $(status_words "$sink_rc")"
	elif [ "$tap_rc" -ne 0 ]; then
		failed=$tap_said
		[ -n "$failed" ] || failed="pipe-tap $(status_words "$tap_rc")"
		# pipe-tap's other messages (the one that says why is said below)
		grep "^$prog: " "$tmp/check.err" | grep -v -x -F -e "$prog: $failed" >&2
	elif [ "$sink_rc" -ne 0 ]; then
		failed=$(plan_error "$tmp/plan")
		[ -n "$failed" ] || failed="pipe-sink $(status_words "$sink_rc")"
	fi
	if [ -z "$failed" ] && [ -n "$shard" ]; then
		# A shard stages its plan for the run's commit (pipe-merge runs
		# there, on the run's one plan), once every process of the stages
		# has ended; nothing is published.
		[ -z "$job" ] || { stages_wait; job=; }
		[ -z "$signal" ] || failed="interrupted by SIG$signal"
		if [ -z "$failed" ] && pipe-shard put -s "$shard" -r "$run_id" "$@" <"$tmp/plan"; then
			say "Staged: shard $shard of run $run_id ($(sed -n 's/^{"type":"end".*"records":\([0-9]*\).*/\1/p' "$tmp/plan") records)"
			exit 0
		fi
		[ -n "$failed" ] || failed="the shard's plan was not staged"
	fi
	if [ -z "$failed" ] && [ "$merge" != none ]; then
		# pipe-merge (issue #27), when pipe-tap -n -D's fourth line says the
		# pipeline sets a load_method (with -v, always: it passes other
		# plans through): the upsert streams merged by key into staged
		# files, the plan rewritten once whole, after every process of the
		# stages has ended (the plan file is their lock)
		[ -z "$job" ] || { stages_wait; job=; }
		if pipe-merge -o "$tmp/plan" "$@" <"$tmp/plan" 2>"$tmp/merge.err"; then
			[ ! -s "$tmp/merge.err" ] || cat "$tmp/merge.err" >&2
		else
			failed=$(first_error "$tmp/merge.err")
			[ -n "$failed" ] || failed="pipe-merge failed"
		fi
		[ -z "$signal" ] || failed="interrupted by SIG$signal"
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
	# pipe-sink's live progress line on a terminal (not with -v) is left
	# as it was when the run failed, a signal's ^C after it: cleared, so
	# that the failure's words start a line
	[ "$verbose" = 1 ] || [ ! -t 2 ] || printf '\r\033[K' >&2
	# The tap's last words explain most failures; not an interruption's.
	if [ "$verbose" != 1 ] && [ -z "$signal" ] && [ -n "$last_words" ] && [ -s "$tmp/tap.log" ]; then
		err "the tap's last words:"
		tail -n 20 "$tmp/tap.log" | sed 's/^/  | /' >&2
	fi
	# (a shard's failure ends no run: its run's commit refuses, naming it,
	# unless the engine runs it again)
	[ -n "$shard" ] || pipe-commit -a -t "$tmp/tap.log" -e "$failed" "$@" <"$tmp/plan"
	err "run '$label' failed: $(user_terms "$failed")"
	exit_signalled "$signal"
	exit 1
}

# exit_signalled SIGNAL: exit 128+n for INT, TERM or HUP (the signal that
# ended the work); with none, return.
exit_signalled() {
	case $1 in
	INT) exit 130 ;;
	TERM) exit 143 ;;
	HUP) exit 129 ;;
	esac
}

# hold_start NAME: the tap started in the background ($_hold) to export the
# snapshot of NAME's split table into $tmp/snapshot.json and hold it; waits
# until it is there (0) or the tap has ended (1, its words in $tmp/hold.err).
hold_start() {
	DATASPOC_PIPE_PG_HOLD=$tmp/snapshot.json DATASPOC_PIPE_PID=$$ \
		pipe-tap "$1" </dev/null >/dev/null 2>"$tmp/hold.err" &
	_hold=$!
	while [ ! -e "$tmp/snapshot.json" ] && kill -0 "$_hold" 2>/dev/null; do
		sleep 0.1
	done
	[ -e "$tmp/snapshot.json" ]
}

# hold_snapshot NAME RUN: for a run split on an engine (run --hold --run-id
# RUN), the snapshot of a table split across the shards (shard-split):
# exported and held by the tap, staged in the bucket for the shards (pipe-shard
# source), held until the run has let go of its lock (looked at every
# $DATASPOC_PIPE_HOLD_POLL seconds, default 10).  Says one line once the
# shards may start: "Holding ..." or "Nothing to hold ...".
hold_snapshot() {
	if [ -z "$(pipe-state check -p shard-split "$1")" ]; then
		say "Nothing to hold: pipeline '$1' splits no table across its shards"
		exit 0
	fi
	open_private_dir || exit 1
	trap 'rm -rf "$tmp"' EXIT
	trap '' HUP
	if ! hold_start "$1"; then
		sed 's/^/dataspoc-pipe: /' "$tmp/hold.err" >&2
		err "hold: no snapshot of run $2 of '$1' was exported"
		exit 1
	fi
	if ! pipe-shard source -r "$2" "$1" <"$tmp/snapshot.json"; then
		kill -s TERM "$_hold" 2>/dev/null
		{ wait "$_hold"; } 2>/dev/null
		err "hold: the snapshot of run $2 of '$1' is not staged"
		exit 1
	fi
	say "Holding the snapshot of run $2 of $1"
	while kill -0 "$_hold" 2>/dev/null && pipe-shard held -r "$2" "$1" 2>/dev/null; do
		sleep "${DATASPOC_PIPE_HOLD_POLL:-10}"
	done
	kill -s TERM "$_hold" 2>/dev/null
	{ wait "$_hold"; } 2>/dev/null
	exit 0
}

# run_shards FULL VERBOSE N NAME: a sharded run on this machine, N shards
# as N processes, then its commit.
run_shards() {
	_plan=
	[ "$1" = 1 ] && _plan=-f
	_sv=
	[ "$2" = 1 ] && _sv=-v
	_run=$(pipe-shard plan $_plan -n "$3" "$4") || exit $?
	say "Sharded run $_run of $4: $3 shards"
	_hold=
	if [ -n "$(pipe-state check -p shard-split "$4")" ]; then
		# A table split across the shards (the PostgreSQL tap's
		# shard-split): its snapshot, exported and held by the tap in a
		# process of its own until the commit ended, every shard reading in
		# it.  Held or not, the shards run: one without it fails, and the
		# commit refuses.
		open_private_dir || exit 1
		trap 'rm -rf "$tmp"' EXIT
		if hold_start "$4"; then
			DATASPOC_PIPE_PG_SNAPSHOT=$tmp/snapshot.json
			export DATASPOC_PIPE_PG_SNAPSHOT
		else
			_hold=
			sed 's/^/dataspoc-pipe: the run'"'"'s snapshot: /' "$tmp/hold.err" >&2
		fi
	fi
	_pids= _i=0
	while [ "$_i" -lt "$3" ]; do
		"$self" run $_sv "$4" --shard "$_i/$3" --run-id "$_run" &
		_pids="$_pids $!"
		_i=$((_i + 1))
	done
	trap 'kill -s TERM $_pids 2>/dev/null' INT TERM HUP
	for _p in $_pids; do
		wait "$_p"
	done
	[ -n "$_hold" ] || exec "$self" commit "$4" --run-id "$_run"
	"$self" commit "$4" --run-id "$_run"
	_rc=$?
	kill -s TERM "$_hold" 2>/dev/null
	# (the shell's word on a job ended by a signal: not the run's)
	{ wait "$_hold"; } 2>/dev/null
	exit $_rc
}

# stamp: each line of stdin with the UTC time it came and the id of the
# run it belongs to ("-" before the run's "Running: NAME (run ID)" line),
# for a log no one watches: cron's (run --timestamps, issue #29).
stamp() {
	_id=-
	while IFS= read -r _l || [ -n "$_l" ]; do
		case $_l in
		'Running: '*' (run '*')') _id=${_l##*(run } _id=${_id%)} ;;
		esac
		printf '%s %s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$_id" "$_l"
	done
}

cmd_run() {
	# --timestamps: the same run, its stdout and stderr one stream, each
	# line stamped; the run's exit status (the driver again, so that every
	# program's words go through the stamp, said as they come)
	case " $* " in
	*' --timestamps '*)
		for _a; do
			shift
			[ "$_a" = --timestamps ] || set -- "$@" "$_a"
		done
		exec 4>&1
		_rc=$( { { DATASPOC_PIPE_TIMESTAMPS=1 "$self" run "$@" 2>&1 3>&- 4>&-; echo $? >&3; } |
			stamp >&4; } 3>&1 )
		exit "${_rc:-1}" ;;
	esac
	full=0 verbose=0 file= name= all=0 jobs= shard= shard_run= shards= plan=0 hold=0
	while [ $# -gt 0 ]; do
		case $1 in
		--shards) [ $# -ge 2 ] || usage run "option '--shards' needs a number"; shards=$2; shift ;;
		--shard) [ $# -ge 2 ] || usage run "option '--shard' needs I/N"; shard=$2; shift ;;
		--run-id) [ $# -ge 2 ] || usage run "option '--run-id' needs an ID"; shard_run=$2; shift ;;
		--plan) plan=1 ;;
		--hold) hold=1 ;;
		--full | -f) full=1 ;;
		-v | --verbose) verbose=1 ;;
		--refresh-catalog) refresh_catalog=1 ;;
		-c) [ $# -ge 2 ] || usage run "option '-c' needs a FILE.yaml"; file=$2; shift ;;
		--all | -a) all=1 ;;
		-j) [ $# -ge 2 ] || usage run "option '-j' needs a number"; jobs=$2; shift ;;
		-j*) jobs=${1#-j} ;;
		--jobs=*) jobs=${1#*=} ;;
		-h | --help) show_help run; exit 0 ;;
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
	if [ -n "$shards$shard$shard_run" ] || [ "$plan" = 1 ] || [ "$hold" = 1 ]; then
		[ -n "$name" ] && [ -z "$file" ] || usage run "a sharded run takes a pipeline NAME"
		if [ "$hold" = 1 ]; then
			[ -n "$shard_run" ] && [ -z "$shards$shard" ] && [ "$plan" = 0 ] && [ "$full" = 0 ] ||
				usage run "--hold goes with --run-id ID alone"
			hold_snapshot "$name" "$shard_run"
		fi
		if [ -n "$shard" ]; then
			[ -n "$shard_run" ] && [ -z "$shards" ] && [ "$plan" = 0 ] && [ "$full" = 0 ] ||
				usage run "--shard I/N goes with --run-id ID alone (--full is the plan's)"
			case $shard in
			*[!0-9/]* | */*/*) usage run "--shard wants I/N, not '$shard'" ;;
			[0-9]*/[0-9]*) ;;
			*) usage run "--shard wants I/N, not '$shard'" ;;
			esac
			run_pipeline 0 "$verbose" "$name"
		fi
		[ -n "$shards" ] && [ -z "$shard_run" ] || usage run "--shards N, or --shard I/N --run-id ID"
		case $shards in
		'' | *[!0-9]* | 0 | 0*) usage run "--shards wants a number of shards (1 or more), not '$shards'" ;;
		esac
		if [ "$plan" = 1 ]; then
			_plan=
			[ "$full" = 0 ] || _plan=-f
			exec pipe-shard plan $_plan -n "$shards" "$name"
		fi
		run_shards "$full" "$verbose" "$shards" "$name"
	fi
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

# ---- the other commands (dash has not read them for run NAME) ----------------

# usage_all [REASON]: what is wrong, then every command's usage; exit 2.
usage_all() {
	[ $# -eq 0 ] || err "$1"
	cat >&2 <<USAGE
usage: $prog init
       $prog add [--tap TAP] [--config FILE] [--bucket URL] [--path PATH]
           [--compression C] [--incremental|--no-incremental] [--cron EXPR] [--yes] NAME
       $prog run [--full] [-v] NAME | -c FILE.yaml
       $prog run --all [-j N] [--full] [-v]
       $prog run [--full] NAME --shards N | --plan --shards N | --shard I/N --run-id ID
       $prog run NAME --hold --run-id ID
       $prog commit NAME --run-id ID [--wait SECONDS]
       $prog compact NAME [STREAM]
       $prog status [--output text|json] [NAME... | -c FILE.yaml]
       $prog logs [-n K] [--output text|json|jsonl] NAME | -c FILE.yaml
       $prog validate [--output text|json] [NAME...]
       $prog manifest [--output text|json] BUCKET | -c FILE.yaml
       $prog schedule install|remove|list [NAME...]
       $prog export slurm|kubernetes|systemd [options] [NAME...]
       $prog mcp [--read-only]
       $prog help [COMMAND] | version
USAGE
	exit 2
}

# nearest WORD: the command closest to a mistyped WORD (at most 2 edits,
# a swap of neighbours counting as one), if any.
nearest() {
	printf '%s\n' "$1" | awk -v cmds='init add run commit compact status logs validate manifest schedule export mcp help version' '
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
  commit NAME       publish a sharded run (run NAME --shards N, --plan, --shard I/N)
  compact NAME      merge a pipeline's small files; one row per key for upsert
  status            the last run of each pipeline
  logs NAME         the last run log(s) of a pipeline
  validate [NAME]   check configs, taps and buckets
  manifest BUCKET   the catalog of the tables in a bucket
  schedule          install, remove or list crontab entries
  export ENGINE     Slurm, Kubernetes or systemd jobs of the pipelines
  mcp               serve MCP (stdio) for AI agents
  help [COMMAND]    help on a command
  version           the version (also --version)

Exit status: 0 success, 1 the run (or a check) failed, 2 bad usage or config,
75 the pipeline is locked by another run (try later).
HELP
}

# ---- run --all ---------------------------------------------------------------

# run_all JOBS RUN-OPTIONS...: every pipeline, JOBS at a time.  Each
# pipeline's output is kept apart and printed when it finishes.
run_all() {
	jobs=$1
	shift
	names=$(pipelines)
	if [ -z "$names" ]; then
		err "run --all: no pipelines in $home/pipelines (dataspoc-pipe add NAME makes one)"
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
	exit_signalled "$signal"
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
	# (a run that failed its checks ended before its header: every
	# pipeline's lines start with one)
	IFS= read -r _first <"$tmp/$done_name.out" 2>/dev/null || _first=
	[ "$_first" = "Running: $done_name" ] || say "Running: $done_name"
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

# output_flag COMMAND FORMAT: FORMAT when it is one of COMMAND's output
# formats (pipe-state's rule: text and table, json, and jsonl for logs);
# else say which are, exit 2.
output_flag() {
	_why=$(pipe-state check-format "$1" "$2" 2>&1) && return 0
	err "${_why#"$prog: "}"
	exit 2
}

cmd_status() {
	fmt=text fmt_set= file=
	while [ $# -gt 0 ]; do
		case $1 in
		--output | -o) [ $# -ge 2 ] || usage status "option '$1' needs a format"; fmt=$2 fmt_set=1; shift ;;
		--output=*) fmt=${1#*=} fmt_set=1 ;;
		-c) [ $# -ge 2 ] || usage status "option '-c' needs a file"
			[ -z "$file" ] || usage status "-c is given once"
			file=$2; shift ;;
		-h | --help) show_help status; exit 0 ;;
		--) shift; break ;;
		-*) usage status "unknown option '$1'" ;;
		*) break ;;
		esac
		shift
	done
	[ -z "$file" ] || [ $# -eq 0 ] || usage status "give NAMEs or -c FILE.yaml, not both"
	[ -z "$fmt_set" ] || output_flag status "$fmt"
	[ -z "$file" ] || exec pipe-state status -o "$fmt" -c "$file"
	exec pipe-state status -o "$fmt" "$@"
}

cmd_logs() {
	fmt=text fmt_set= n= n_set= name= file=
	while [ $# -gt 0 ]; do
		case $1 in
		--output | -o) [ $# -ge 2 ] || usage logs "option '$1' needs a format"; fmt=$2 fmt_set=1; shift ;;
		--output=*) fmt=${1#*=} fmt_set=1 ;;
		-n) [ $# -ge 2 ] || usage logs "option '-n' needs a number"; n=$2 n_set=1; shift ;;
		-n*) n=${1#-n} n_set=1 ;;
		-c) [ $# -ge 2 ] || usage logs "option '-c' needs a file"
			[ -z "$file" ] || usage logs "-c is given once"
			file=$2; shift ;;
		-h | --help) show_help logs; exit 0 ;;
		-*) usage logs "unknown option '$1'" ;;
		*) [ -z "$name" ] || usage logs "unexpected argument '$1'"; name=$1 ;;
		esac
		shift
	done
	[ -z "$name" ] || [ -z "$file" ] || usage logs "give a NAME or -c FILE.yaml, not both"
	[ -n "$name$file" ] || usage logs "a pipeline NAME (or -c FILE.yaml) is required"
	[ -z "$fmt_set" ] || output_flag logs "$fmt"
	# (no -n: --output json prints the newest log as one object, as the
	# Python tool does; -n K: a list)
	[ -z "$file" ] || exec pipe-state logs ${n_set:+-n "$n"} -o "$fmt" -c "$file"
	exec pipe-state logs ${n_set:+-n "$n"} -o "$fmt" "$name"
}

# manifest BUCKET: the bucket as a pipeline's destination.bucket is taken
# (pipe-state -b); -c FILE.yaml: the pipeline's, with its endpoint_url.
cmd_manifest() {
	fmt=text fmt_set= bucket= file=
	while [ $# -gt 0 ]; do
		case $1 in
		--output | -o) [ $# -ge 2 ] || usage manifest "option '$1' needs a format"; fmt=$2 fmt_set=1; shift ;;
		--output=*) fmt=${1#*=} fmt_set=1 ;;
		-c) [ $# -ge 2 ] || usage manifest "option '-c' needs a file"
			[ -z "$file" ] || usage manifest "-c is given once"
			file=$2; shift ;;
		-h | --help) show_help manifest; exit 0 ;;
		-*) usage manifest "unknown option '$1'" ;;
		*) [ -z "$bucket" ] || usage manifest "unexpected argument '$1'"; bucket=$1 ;;
		esac
		shift
	done
	[ -z "$bucket" ] || [ -z "$file" ] || usage manifest "give a BUCKET or -c FILE.yaml, not both"
	[ -n "$bucket$file" ] || usage manifest "a BUCKET (or -c FILE.yaml) is required"
	[ -z "$fmt_set" ] || output_flag manifest "$fmt"
	[ -z "$file" ] || exec pipe-state manifest -o "$fmt" -c "$file"
	exec pipe-state manifest -o "$fmt" -b "$bucket"
}

# ---- validate ------------------------------------------------------------------

cmd_validate() {
	fmt=text fmt_set= names=
	while [ $# -gt 0 ]; do
		case $1 in
		--output | -o) [ $# -ge 2 ] || usage validate "option '$1' needs a format"; fmt=$2 fmt_set=1; shift ;;
		--output=*) fmt=${1#*=} fmt_set=1 ;;
		-h | --help) show_help validate; exit 0 ;;
		-*) usage validate "unknown option '$1'" ;;
		*) valid_name "$1" || { err "validate: invalid pipeline name '$1'"; exit 2; }
		   names="$names $1" ;;
		esac
		shift
	done
	[ -z "$fmt_set" ] || output_flag validate "$fmt"
	[ -n "$names" ] || names=$(pipelines)
	if [ -z "$names" ]; then
		err "validate: no pipelines in $home/pipelines (dataspoc-pipe add NAME makes one)"
		[ "$fmt" != json ] || say '[]'
		exit 0
	fi
	# (pipeline names hold no blanks and no glob characters)
	# shellcheck disable=SC2086
	exec pipe-state validate -o "$fmt" -- $names
}

# ---- mcp -----------------------------------------------------------------------

# commit NAME --run-id ID: publish a sharded run once every shard staged
# its part (pipe-shard join; --wait: waiting up to SECONDS for them), else
# end it, naming the missing shards.
cmd_commit() {
	name= run= wait=
	while [ $# -gt 0 ]; do
		case $1 in
		--run-id) [ $# -ge 2 ] || usage commit "option '--run-id' needs an ID"; run=$2; shift ;;
		--wait) [ $# -ge 2 ] || usage commit "option '--wait' needs SECONDS"; wait=$2; shift ;;
		-h | --help) show_help commit; exit 0 ;;
		-*) usage commit "unknown option '$1'" ;;
		*) [ -z "$name" ] || usage commit "unexpected argument '$1'"; name=$1 ;;
		esac
		shift
	done
	[ -n "$name" ] && [ -n "$run" ] || usage commit "a pipeline NAME and --run-id ID are required"
	case $wait in
	*[!0-9]*) usage commit "--wait wants a number of seconds, not '$wait'" ;;
	esac
	open_private_dir || exit 1
	trap 'rm -rf "$tmp"' EXIT
	DATASPOC_RUN_ID=$run
	export DATASPOC_RUN_ID
	pipe-shard join ${wait:+-w "$wait"} -r "$run" "$name" >"$tmp/plan" || {
		err "commit of run $run of '$name' refused"
		exit 1
	}
	# pipe-merge passes a plan without upsert streams through
	if ! pipe-merge -o "$tmp/plan" "$name" <"$tmp/plan"; then
		pipe-commit -a -e "pipe-merge failed" "$name" <"$tmp/plan"
		err "commit of run $run of '$name' failed: pipe-merge failed"
		exit 1
	fi
	pipe-commit "$name" <"$tmp/plan" && exit 0
	pipe-commit -a -e "the commit did not finish" "$name" <"$tmp/plan"
	err "commit of run $run of '$name' failed"
	exit 1
}

# compact NAME [STREAM] (issue #27): the pipeline's tables rewritten by
# pipe-merge -C, under its run lock and through pipe-commit, as a run is:
# an upsert table not merged by key yet becomes one row per key; an
# append-only table's small files are merged into files of max_file_size.
# The state stays; the run log says what it rewrote.
cmd_compact() {
	name= stream=
	while [ $# -gt 0 ]; do
		case $1 in
		-h | --help) show_help compact; exit 0 ;;
		-*) usage compact "unknown option '$1'" ;;
		*) if [ -z "$name" ]; then
			name=$1
		   elif [ -z "$stream" ]; then
			stream=$1
		   else
			usage compact "unexpected argument '$1'"
		   fi ;;
		esac
		shift
	done
	[ -n "$name" ] || usage compact "a pipeline NAME is required"
	valid_name "$name" || { err "compact: invalid pipeline name '$name'"; exit 2; }
	open_private_dir || exit 1
	trap 'rm -rf "$tmp"' EXIT
	# A signal ends the compact through its failure path (the foreground
	# program gets it too, from the terminal), which lets go of the lock.
	signal=
	trap 'signal=INT' INT
	trap 'signal=TERM' TERM
	trap 'signal=HUP' HUP
	run_id=$(new_run_id) || exit 1
	say "Compacting: $name${stream:+ (stream $stream)}"
	pipe-state get -r "$run_id" "$name" >/dev/null 2>"$tmp/err"
	rc=$?
	if [ $rc -ne 0 ]; then
		reason=$(first_error "$tmp/err")
		grep -v -x -F -e "$prog: $reason" "$tmp/err" >&2
		err "compact '$name' failed: ${reason:-reading the saved state failed (status $rc)}"
		# 75: another run holds the lock
		case $rc in 2 | 75) exit $rc ;; esac
		exit 1
	fi
	[ ! -s "$tmp/err" ] || cat "$tmp/err" >&2
	DATASPOC_RUN_ID=$run_id
	export DATASPOC_RUN_ID
	failed=
	if pipe-merge -C ${stream:+-s "$stream"} -o "$tmp/plan" "$name" </dev/null 2>"$tmp/err"; then
		grep "^$prog: warning: " "$tmp/err" >&2
	else
		failed=$(first_error "$tmp/err")
		failed=${failed#compact: }
		[ -n "$failed" ] || failed="pipe-merge failed"
	fi
	[ -z "$signal" ] || failed="interrupted by SIG$signal"
	if [ -z "$failed" ]; then
		pipe-commit "$name" <"$tmp/plan" && exit 0
		failed="the commit did not finish"
		[ -z "$signal" ] || failed="interrupted by SIG$signal"
	else
		: >"$tmp/plan"
	fi
	pipe-commit -a -e "$failed" "$name" <"$tmp/plan" >/dev/null
	err "compact '$name' failed: $failed"
	exit_signalled "$signal"
	exit 1
}

cmd_mcp() {
	ro=
	while [ $# -gt 0 ]; do
		case $1 in
		--read-only | -r) ro=-r ;;
		-h | --help) show_help mcp; exit 0 ;;
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
init | add | schedule | export)
	DATASPOC_PIPE_SELF=$self
	export DATASPOC_PIPE_SELF
	exec "$libexec/dataspoc-pipe-$cmd" "$@" ;;
run) cmd_run "$@" ;;
commit) cmd_commit "$@" ;;
compact) cmd_compact "$@" ;;
status) cmd_status "$@" ;;
logs) cmd_logs "$@" ;;
validate) cmd_validate "$@" ;;
manifest) cmd_manifest "$@" ;;
mcp) cmd_mcp "$@" ;;
help)
	[ $# -le 1 ] || usage help "unexpected argument '$2'"
	case ${1:-} in
	'') help_main ;;
	init | add | schedule | export)
		DATASPOC_PIPE_SELF=$self
		export DATASPOC_PIPE_SELF
		exec "$libexec/dataspoc-pipe-$1" --help ;;
	run | commit | compact | status | logs | validate | manifest | mcp | help | version) show_help "$1" ;;
	--version) show_help version ;;
	*) err "help: no command '$1'"; exit 2 ;;
	esac ;;
-h | --help) help_main ;;
--version | -V | -v) say "dataspoc-pipe $VERSION" ;;
version)
	# (git version's form: help help names it among the commands)
	case ${1:-} in
	'') ;;
	-h | --help) show_help version; exit 0 ;;
	*) usage version "unexpected argument '$1'" ;;
	esac
	say "dataspoc-pipe $VERSION" ;;
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
