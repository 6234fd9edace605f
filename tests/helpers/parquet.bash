# tests/helpers/parquet.bash: what tests/parquet*.bats share.  Load after
# test_helper (and after s3_helper for s3://): it reads the bucket only
# through the bucket_* functions.

PQ=$BATS_TEST_DIRNAME/clients/parquet

# pq_pipeline NAME [DESTINATION-LINE...]: a parquet pipeline on tap-NAME,
# whose Singer stream is $FAKE_DIR/tap-NAME/out (pipe-tap adds the end line).
pq_pipeline() {
	local name=$1
	shift
	use_tap "tap-$name"
	write_pipeline "$name" "tap-$name" true "format: parquet" "$@"
}

# pq_files PREFIX: the landed data keys under PREFIX/, copied out of the
# bucket; their local paths, one a line, in key order.
pq_files() {
	local k n=0 dir=$BATS_TEST_TMPDIR/.pq
	mkdir -p "$dir"
	for k in $(bucket_files | grep -F "$1/"); do
		n=$((n + 1))
		bucket_cat "$k" >"$dir/$n.parquet" || return 1
		printf '%s\n' "$dir/$n.parquet"
	done
}

# pq_rows FILE...: the rows as DuckDB reads them, after checking that
# hyparquet reads exactly the same (tests/clients/parquet/*-rows.mjs).
pq_rows() {
	local d=$BATS_TEST_TMPDIR/.duckdb h=$BATS_TEST_TMPDIR/.hyparquet
	node "$PQ/duckdb-rows.mjs" "$@" >"$d" || return 1
	node "$PQ/hyparquet-rows.mjs" "$@" >"$h" || return 1
	if ! diff -u --label duckdb --label hyparquet "$d" "$h" >&2; then
		echo "pq_rows: the two readers disagree" >&2
		return 1
	fi
	cat "$d"
}

# pq_table_rows PREFIX: every row landed under PREFIX/, file after file.
pq_table_rows() {
	local files
	files=$(pq_files "$1") || return 1
	[ -n "$files" ] || return 0
	# shellcheck disable=SC2086
	pq_rows $files
}

# pq_schema FILE: its columns as each reader sees them: DuckDB's types, then
# hyparquet's physical and converted types.
pq_schema() {
	node "$PQ/duckdb-rows.mjs" --schema "$1" && node "$PQ/hyparquet-rows.mjs" --schema "$1"
}
