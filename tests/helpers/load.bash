# helpers/load.bash: what the load suite (tests/load/*.bats) shares, on top
# of tests/helpers/common.bash.  Its scale comes from the environment, so that
# a developer can run it smaller; `make test-load` runs the numbers of
# issue #6 (the defaults):
#
#   LOAD_PIPELINES   pipelines run together by `run --all`    (20)
#   LOAD_JOBS        their -j                                 (8)
#   LOAD_STREAMS     streams of each of them                  (4)
#   LOAD_RECORDS     records of the one-stream run            (10000000)
#   LOAD_WIDE        streams of the wide run                  (1000)
#   LOAD_WIDE_TURNS  turns of the wide run: files per stream  (4)
#   LOAD_RSS_MAX_MIB pipe-sink's peak RSS may not pass this   (64)
#
# The taps are tests/load/tap-load over loadgen (loadgen.c); pipe-sink's
# open files and peak RSS are sampled from /proc by procwatch (procwatch.c).
# Both are built here, with cc, into the file's temporary folder.

PIPE_BIN=${PIPE_BIN:-$BATS_TEST_DIRNAME/../../bin}
load ../helpers/common
TAPS=$BATS_TEST_DIRNAME/../taps

LOAD_PIPELINES=${LOAD_PIPELINES:-20}
LOAD_JOBS=${LOAD_JOBS:-8}
LOAD_STREAMS=${LOAD_STREAMS:-4}
LOAD_RECORDS=${LOAD_RECORDS:-10000000}
LOAD_WIDE=${LOAD_WIDE:-1000}
LOAD_WIDE_TURNS=${LOAD_WIDE_TURNS:-4}
LOAD_RSS_MAX_MIB=${LOAD_RSS_MAX_MIB:-64}
# pipe-sink keeps at most this many data files open (cmd/pipe-sink/main.c)
SINK_MAX_OPEN=256
# and has a few descriptors besides: stdin, stdout, stderr, the bucket's
# folder, and what the driver and the test's shell pass down (bats keeps
# some open; dash leaves one at 10)
load_fd_slack=16

# Figures for docs/RELIABILITY.md go to this file as well as to the test's
# output (bats shows fd 3).
LOAD_REPORT=${LOAD_REPORT:-${BATS_RUN_TMPDIR:-/tmp}/load-figures.txt}

load_build() {
	local p
	mkdir -p "$BATS_FILE_TMPDIR/loadbin"
	for p in loadgen procwatch; do
		cc -O2 -std=c11 -Wall -Wextra -Wpedantic -Werror -o "$BATS_FILE_TMPDIR/loadbin/$p" \
			"$BATS_TEST_DIRNAME/$p.c" || return 1
	done
}

load_setup() {
	pipe_setup
	export LOAD_GEN=$BATS_FILE_TMPDIR/loadbin/loadgen
	PROCWATCH=$BATS_FILE_TMPDIR/loadbin/procwatch
	export PATH=$BATS_TEST_DIRNAME:$PATH
	mkdir -p "$DATASPOC_PIPE_HOME/sources"
}

# figure TEXT: one line for the report.
figure() {
	printf '# %s: %s\n' "$BATS_TEST_DESCRIPTION" "$*" >&3
	printf '%s: %s\n' "$BATS_TEST_DESCRIPTION" "$*" >>"$LOAD_REPORT"
}

# load_pipeline NAME CONFIG-JSON [DESTINATION-LINE...]: pipelines/NAME.yaml
# over tap-load, its tap config in sources/NAME.json.
load_pipeline() {
	local name=$1
	printf '%s\n' "$2" >"$DATASPOC_PIPE_HOME/sources/$name.json"
	shift 2
	PIPELINE_CONFIG=../sources/$name.json write_pipeline "$name" tap-load true "$@"
}

# watched CMD...: run CMD with stdout in out, stderr in err, while
# procwatch samples this test's pipe-sink processes; sets status, elapsed
# (seconds), max_fds (descriptors), max_files (of them, files in the local
# bucket), max_rss_mib (peak RSS, MiB, rounded up), procs and samples (how
# many samples saw one).
# watched_failed: what a watched command said, without its progress lines
# (one a stream), so that the reason is what a failure shows.
watched_failed() {
	grep -v ' records\.\.\.$' err >&2
	false
}

watched() {
	local pid wpid t0=$EPOCHREALTIME w
	"$@" >out 2>err &
	pid=$!
	"$PROCWATCH" -c pipe-sink -e "FAKE_DIR=$FAKE_DIR" -f "$(realpath -m "${BUCKET_DIR:-/nonexistent}")" \
		-p "$pid" -i 20 watch.out &
	wpid=$!
	status=0
	wait "$pid" || status=$?
	elapsed=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	wait "$wpid"
	read -r _ procs _ samples _ max_fds _ max_files _ w <watch.out
	max_rss_mib=$(((w + 1023) / 1024))
}

# thousands N: N with the summary's thousands separators.
thousands() {
	printf '%d\n' "$1" | sed ':a; s/\B[0-9]\{3\}\>/,&/; ta'
}

# landed_dir: a local folder holding the bucket's objects.
landed_dir() {
	printf '%s\n' "$BUCKET_DIR"
}

# tables_check FIRST LAST TABLE-FOLDER...: each table's files, in key
# order, hold the records of its own stream (loadgen's "s") with ids
# FIRST..LAST, each once, in order.  A record twice, one missing, out of
# order or in another stream's folder is named.  Prints "TABLE FILES" for
# each table.  (One zstd and one awk in all, through a decompressed copy:
# a thousand tables are checked in seconds.)
tables_check() {
	local first=$1 last=$2 dir copy=$BATS_TEST_TMPDIR/landed
	shift 2
	dir=$(landed_dir) || return 1
	rm -rf "$copy"
	mkdir -p "$copy"
	(cd "$dir" && zstd -qdr --output-dir-mirror "$copy" -- "$@") || return 1
	printf '%s\n' "$@" >"$copy.tables"
	(cd "$copy" && find . -type f | LC_ALL=C sort) >"$copy.files"
	LC_ALL=C awk -v first="$first" -v last="$last" -v copy="$copy" '
		FNR == NR { want[$0] = first; files[$0] = 0; order[++n] = $0; next }
		{
			f = substr($0, 3); t = f; sub(/\/dt=[^\/]*\/[^\/]*$/, "", t)
			if (!(t in want)) { print f ": a file outside the tables checked" > "/dev/stderr"; bad = 1; exit }
			files[t]++; s = t; sub(/.*\//, "", s)
			while ((r = getline line < (copy "/" f)) > 0) {
				if (!match(line, /^\{"id":[0-9]+,"s":"[^"]*",/)) { print f ": not a record: " line > "/dev/stderr"; bad = 1; exit }
				if (index(line, ",\"s\":\"" s "\",") == 0) { print f ": a record of another stream: " line > "/dev/stderr"; bad = 1; exit }
				id = substr(line, 7) + 0
				if (id != want[t]) { print f ": id " id " where " want[t] " was expected" > "/dev/stderr"; bad = 1; exit }
				want[t]++
			}
			close(copy "/" f)
			if (r < 0) { print f ": cannot read" > "/dev/stderr"; bad = 1; exit }
		}
		END {
			if (bad) exit 1
			for (i = 1; i <= n; i++) {
				t = order[i]
				if (want[t] != last + 1) { print t ": ids " first ".." want[t] - 1 ", expected up to " last > "/dev/stderr"; bad = 1 }
				print t, files[t]
			}
			exit bad
		}' "$copy.tables" "$copy.files"
}

# No run left anything behind: staging, pending commits, locks.
bucket_clean() {
	local left
	left=$(bucket_keys .dataspoc/ | grep -E '^\.dataspoc/(staging/|.*/lock$|.*/pending\.json$|manifest\.lock$)' || true)
	[ -z "$left" ] || { echo "left in the bucket: $left" >&2; return 1; }
}

# pipelines_check RUNS RECORDS: after RUNS runs of every pipeline p01..,
# each giving RECORDS new records to each of its streams.
pipelines_check() {
	local runs=$1 per=$2 i s name dir tables=
	for i in $(seq 1 "$LOAD_PIPELINES"); do
		name=$(printf 'p%02d' "$i")
		# state.json is the pipeline's last STATE, no other pipeline's
		echo "{\"pipeline\":\"$name\",\"seq\":$((runs * per))}"
		for s in $(seq 0 $((LOAD_STREAMS - 1))); do
			tables="$tables raw/load/$name-s$(printf '%04d' "$s")"
		done
	done >states.want
	dir=$(landed_dir)
	(cd "$dir/.dataspoc/state" && jq -c . p*/state.json) >states.got
	diff -u states.want states.got
	# each record of each run landed once, in order, in its stream's folder
	tables_check 1 $((runs * per)) $tables >/dev/null
	# a success log for each run of each pipeline
	for i in $(seq 1 "$LOAD_PIPELINES"); do
		printf 'p%02d success\n' "$i"
	done | awk -v n="$runs" '{ for (i = 0; i < n; i++) print }' >logs.want
	(cd "$dir/.dataspoc/logs" && jq -r '"\(.pipeline) \(.status)"' p*/*.json) >logs.got
	diff -u logs.want logs.got
	# the manifest: every table, every run counted once (no lost update)
	for i in $(seq 1 "$LOAD_PIPELINES"); do
		for s in $(seq 0 $((LOAD_STREAMS - 1))); do
			printf 'load/p%02d-s%04d %d %d\n' "$i" "$s" $((runs * per)) "$runs"
		done
	done >manifest.want
	cp "$dir/.dataspoc/manifest.json" manifest.json
	jq -r '.tables | to_entries[] | "\(.key) \(.value.stats.total_rows) \(.value.stats.extractions)"' \
		manifest.json | LC_ALL=C sort >manifest.got
	diff -u manifest.want manifest.got
	bucket_clean
}

# scenario_concurrent RECORDS: LOAD_PIPELINES pipelines p01.., each of
# LOAD_STREAMS streams of RECORDS records a run, run twice by
# `run --all -j LOAD_JOBS` into one bucket (the second run incremental).
scenario_concurrent() {
	local i name per=$1 r
	for i in $(seq 1 "$LOAD_PIPELINES"); do
		name=$(printf 'p%02d' "$i")
		load_pipeline "$name" "{\"pipeline\":\"$name\",\"streams\":$LOAD_STREAMS,\"records\":$per,\"block\":50,\"state_every\":1000}"
	done
	for r in 1 2; do
		watched dataspoc-pipe run --all -j "$LOAD_JOBS"
		[ "$status" -eq 0 ] || watched_failed
		assert_equal "$(tail -n 1 out)" "Summary: $LOAD_PIPELINES success, 0 failure(s)"
		assert_equal "$(grep -c '^Done! ' out)" "$LOAD_PIPELINES"
		[ "$r" -eq 1 ] || assert_equal "$(grep -c '^  Incremental mode' out)" "$LOAD_PIPELINES"
		[ "$samples" -gt 0 ]
		pipelines_check "$r" "$per"
		figure "run $r: $LOAD_PIPELINES pipelines x $LOAD_STREAMS streams x $per records, -j $LOAD_JOBS:" \
			"${elapsed} s, pipe-sink peak RSS ${max_rss_mib} MiB, most fds $max_fds ($max_files data files)," \
			"$(jq '.tables | length' manifest.json) tables in the manifest"
	done
}
