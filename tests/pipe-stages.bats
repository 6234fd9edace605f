#!/usr/bin/env bats
# pipe-stages.bats: the driver's stages, run by pipe-stages in a session of
# their own, with stand-ins for pipe-tap, pipe-sink and pipe-commit first on
# PATH (each notes its arguments, its session and its parent); the whole run
# through them is tested in dataspoc-pipe.bats, stages.bats and signals.bats.

load helpers/common

setup() {
	pipe_setup
	D=$BATS_TEST_TMPDIR/run
	mkdir -p "$D"
	printf '{}\n' >"$D/state"
	B=$BATS_TEST_TMPDIR/bin
	# A stand-in: notes "NAME ARGS" and its session and parent, then runs
	# the body of $FAKE_<NAME> (default: copy stdin to stdout).
	for p in pipe-tap pipe-sink pipe-commit; do
		v=FAKE_$(printf '%s' "${p#pipe-}" | tr a-z A-Z)
		cat >"$B/$p" <<SH
#!/bin/bash
echo "$p \$*" >>"$D/args"
read -r st </proc/\$\$/stat; st=\${st##*) }; set -- \$st "\$@"
echo "$p session \$4 parent \$2" >>"$D/ps"
shift \$(( \$# - \$# ))
eval "\${$v:-cat}"
SH
		chmod +x "$B/$p"
	done
}

teardown() {
	pipe_teardown
}

@test "pipe-stages: the stages in a session of its own, a stage's status in its line of the rc file" {
	export FAKE_TAP='printf "a\nb\n"; echo "tap says" >&2; exit 3'
	export FAKE_SINK='sed s/^/sunk-/'
	# (what the checks and pipe-state get wrote there, the driver has said)
	echo 'pipe-state: warning: said before' >"$D/check.err"
	run --separate-stderr "$PIPE_BIN/pipe-stages" -d "$D" orders
	assert_success
	assert_output ''
	# (the stages start at once: their lines come in any order)
	sort "$D/args" >args
	expect_file args <<EOF2
pipe-sink orders
pipe-tap -l $D/tap.log orders
EOF2
	sort "$D/rc" >rc
	expect_file rc <<<$'sink 0\ntap 3'
	expect_file "$D/plan" <<<$'sunk-a\nsunk-b'
	expect_file "$D/check.err" <<<'tap says'
	# every stage's session is pipe-stages', its parent
	awk '{ if ($3 != $5) { print "not in its parent'\''s session: " $0; bad = 1 } } END { exit bad }' "$D/ps"
	[ "$(awk '{ print $3 }' "$D/ps" | sort -u | wc -l)" -eq 1 ]
}

@test "pipe-stages -k -f -c FILE: pipe-tap | pipe-sink -f | pipe-commit -k > plan, the ck line; a stage killed by signal n: 128+n" {
	export FAKE_TAP='echo one'
	export FAKE_SINK='cat; kill -9 $$'
	export FAKE_COMMIT='sed s/^/ck-/; exit 4'
	run --separate-stderr "$PIPE_BIN/pipe-stages" -k -f -d "$D" -c p.yaml
	assert_equal "$status" 4
	sort "$D/args" >args
	expect_file args <<EOF2
pipe-commit -k -c p.yaml
pipe-sink -f -c p.yaml
pipe-tap -l $D/tap.log -c p.yaml
EOF2
	sort "$D/rc" >rc
	expect_file rc <<<$'ck 4\nsink 137\ntap 0'
	expect_file "$D/plan" <<<'ck-one'
}

@test "pipe-stages -v: pipe-tap's own lines to check.err, emptied first, the tap's to stderr, a last line without its newline given one" {
	export FAKE_TAP='printf "pipe-tap: warning: one\ntap line\npipe-tap: two\npipe-tap:no\n" >&2; printf "last" >&2'
	echo 'pipe-state: warning: said before' >"$D/check.err"
	run --separate-stderr "$PIPE_BIN/pipe-stages" -v -d "$D" orders
	assert_success
	grep -qxF "pipe-tap -v -l $D/tap.log orders" "$D/args"
	expect_file "$D/check.err" <<<$'pipe-tap: warning: one\npipe-tap: two'
	assert_equal "$stderr" $'tap line\npipe-tap:no\nlast'
	grep -qxF 'tap 0' "$D/rc"
}

@test "pipe-stages -v under the driver (DATASPOC_PIPE_PROG): pipe-tap's lines, said as dataspoc-pipe, go to check.err" {
	export DATASPOC_PIPE_PROG=dataspoc-pipe
	export FAKE_TAP='printf "dataspoc-pipe: warning: one\ntap line\npipe-tap: not ours now\n" >&2'
	run --separate-stderr "$PIPE_BIN/pipe-stages" -v -d "$D" orders
	assert_success
	expect_file "$D/check.err" <<<'dataspoc-pipe: warning: one'
	assert_equal "$stderr" $'tap line\npipe-tap: not ours now'
}

@test "the pipe-* programs: PROG --version says the version, as dataspoc-pipe --version does; each help names it" {
	local p want
	want=$("$PIPE_BIN/dataspoc-pipe" --version)
	for p in pipe-state pipe-tap pipe-sink pipe-commit pipe-merge pipe-shard pipe-stages pipe-mcp; do
		# (under the driver's name too: the version is the program's own)
		DATASPOC_PIPE_PROG=dataspoc-pipe run -0 --separate-stderr "$PIPE_BIN/$p" --version
		assert_output "$p ${want#dataspoc-pipe }"
		assert_equal "$stderr" ""
	done
	for p in pipe-state pipe-tap pipe-sink pipe-commit pipe-merge pipe-stages pipe-mcp; do
		run -0 "$PIPE_BIN/$p" --help
		assert_line --regexp '^  --version +its version$'
	done
}

@test "pipe-stages -v: a tap line longer than the buffer goes whole, where its start went" {
	export FAKE_TAP='head -c 200000 /dev/zero | tr "\0" x >&2; echo >&2; { printf "pipe-tap: "; head -c 100000 /dev/zero | tr "\0" y; echo; } >&2'
	run --separate-stderr "$PIPE_BIN/pipe-stages" -v -d "$D" orders
	assert_success
	assert_equal "${#stderr}" 200000
	[ "$(wc -c <"$D/check.err")" -eq 100011 ]
	[ "$(tr -d 'y' <"$D/check.err")" = "pipe-tap: " ]
}

@test "pipe-stages: a stage not on PATH 127, a state that cannot be opened 2, each said" {
	rm "$D/state" "$B/pipe-sink"
	# (bin is first on PATH; the real pipe-sink beside pipe-stages is not looked for)
	PATH=$B:/usr/bin:/bin run -127 --separate-stderr "$PIPE_BIN/pipe-stages" -d "$D" orders
	sort "$D/rc" >rc
	expect_file rc <<<$'sink 127\ntap 2'
	[[ $stderr == *"pipe-stages: cannot open '$D/state': No such file or directory"* ]]
	[[ $stderr == *"pipe-stages: cannot run pipe-sink: No such file or directory"* ]]
}

@test "pipe-stages: bad usage 2, --help" {
	run --separate-stderr "$PIPE_BIN/pipe-stages" orders
	assert_equal "$status" 2
	assert_stderr "usage: pipe-stages [-fhkv] -d DIR NAME | -c FILE.yaml"
	run --separate-stderr "$PIPE_BIN/pipe-stages" -d "$D"
	assert_equal "$status" 2
	run --separate-stderr "$PIPE_BIN/pipe-stages" -d "$D" -c a.yaml orders
	assert_equal "$status" 2
	run --separate-stderr "$PIPE_BIN/pipe-stages" --help
	assert_success
	assert_line --index 0 "usage: pipe-stages [-fhkv] -d DIR NAME"
	[ ! -e "$D/args" ]
}
