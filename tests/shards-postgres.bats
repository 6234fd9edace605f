#!/usr/bin/env bats
# One PostgreSQL table split across the shards of a sharded run
# (docs/SCALE.md): the built-in tap reads shard I of N's page range (ctid) of
# a FULL_TABLE table whose metadata sets shard-split, every shard in the
# snapshot a holder exported for the run.  A real PostgreSQL 15
# (tests/helpers/pg.bash); the lake read back with DuckDB.

bats_require_minimum_version 1.5.0
load helpers/common
load helpers/pg

setup_file() {
	pg_start
	pg_sql "CREATE DATABASE appdb"
}

teardown_file() {
	pg_stop
}

setup() {
	pipe_setup
	TAP=$PIPE_BIN/dataspoc-tap-postgres
	pg_config_json tap.json
	pg_sql -d appdb "DROP TABLE IF EXISTS big;
		CREATE TABLE big(id int primary key, t text);
		INSERT INTO big SELECT i, md5(i::text) FROM generate_series(1, 50000) i"
}

teardown() {
	pipe_teardown
}

# big_pipeline NAME: table big, FULL_TABLE, split across the shards.
big_pipeline() {
	cat >"$DATASPOC_PIPE_HOME/pipelines/$1.yaml" <<-EOF
	source:
	  tap: dataspoc-tap-postgres
	  config: $BATS_TEST_TMPDIR/tap.json
	  streams: [appdb-public-big]
	  metadata:
	    appdb-public-big: {replication-method: FULL_TABLE, shard-split: true}
	destination:
	$(bucket_yaml)
	  format: parquet
	  path: $1
	incremental:
	  enabled: true
	EOF
}

# The lake's rows under path NAME, "id|t" a line, sorted by id.
lake() {
	local files
	files=$(find "$BUCKET_DIR/$1" -name '*.parquet' | sort)
	[ -n "$files" ] || return 0
	# shellcheck disable=SC2086
	node "$BATS_TEST_DIRNAME/clients/parquet/duckdb-rows.mjs" $files |
		jq -r '"\(.id)|\(.t)"' | sort -t'|' -k1,1n
}

table() {
	pg_sql -d appdb "SELECT id || '|' || t FROM big ORDER BY id"
}

@test "postgres shards: one FULL_TABLE table split in 3 page ranges lands every row once, in one commit; the next run replaces it" {
	big_pipeline big
	run -0 dataspoc-pipe run big --shards 3
	assert_line "Done! 50,000 records in 1 stream(s)"
	[ "$(grep -c '^Staged: shard ' <<<"$output")" -eq 3 ]
	refute_output --partial Terminated
	# each shard read a part of the table, none all of it
	run -0 bash -c "grep '^Staged: shard ' <<<'$output' | sed -E 's/.*\\(([0-9]+) records\\)/\\1/'"
	for n in "${lines[@]}"; do
		[ "$n" -gt 0 ] && [ "$n" -lt 50000 ]
	done
	table >want
	lake big >got
	diff -u want got
	[ "$(find "$BUCKET_DIR/big" -name '*.parquet' | wc -l)" -eq 3 ]
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	run -1 bucket_exists .dataspoc/state/big/lock
	# the snapshot's holder is gone with the run
	[ "$(pg_sql "SELECT count(*) FROM pg_stat_activity WHERE datname = 'appdb' AND state LIKE 'idle in transaction%'")" -eq 0 ]
	# a second run: a new table version, which replaces the first's rows
	pg_sql -d appdb "DELETE FROM big WHERE id % 10 = 0; INSERT INTO big SELECT i, 'new' FROM generate_series(50001, 50100) i"
	run -0 dataspoc-pipe run big --shards 2
	assert_line "Done! 45,100 records in 1 stream(s)"
	table >want
	lake big >got
	diff -u want got
}

@test "postgres shards: every shard reads the holder's snapshot: rows updated, inserted and deleted after it are not seen, none twice, none missed" {
	"$TAP" --config tap.json --discover >discovered.json
	jq '.streams |= map(select(.tap_stream_id == "appdb-public-big")
		| .metadata |= map(if .breadcrumb == [] then .metadata += {"selected": true,
			"replication-method": "FULL_TABLE", "shard-split": true} else . end))' \
		discovered.json >catalog.json
	table >want
	DATASPOC_PIPE_PG_HOLD=$PWD/snap.json "$TAP" --config tap.json --catalog catalog.json \
		</dev/null >/dev/null 2>hold.err &
	local hold=$!
	for _ in $(seq 100); do
		[ -e snap.json ] && break
		sleep 0.1
	done
	run -0 jq -c '.pages | keys' snap.json
	assert_output '["appdb-public-big"]'
	# after the snapshot: updates move rows to new pages (beyond the
	# snapshot's last), deletes, inserts
	pg_sql -d appdb "UPDATE big SET t = 'moved' WHERE id % 3 = 0; DELETE FROM big WHERE id % 7 = 0;
		INSERT INTO big SELECT i, 'late' FROM generate_series(50001, 60000) i"
	local i
	for i in 0 1 2 3; do
		DATASPOC_PIPE_SHARD=$i/4 DATASPOC_PIPE_PG_SNAPSHOT=$PWD/snap.json \
			"$TAP" --config tap.json --catalog catalog.json >"shard-$i.out"
	done
	kill "$hold"
	wait "$hold" || true
	cat shard-*.out | jq -r 'select(.type == "RECORD") | "\(.record.id)|\(.record.t)"' |
		sort -t'|' -k1,1n >got
	diff -u want got
	# one table version, activated by every shard
	[ "$(cat shard-*.out | jq -r 'select(.type == "ACTIVATE_VERSION") | .version' | sort -u | wc -l)" -eq 1 ]
	# with the holder gone, a shard cannot read in its snapshot: it fails
	DATASPOC_PIPE_SHARD=0/4 DATASPOC_PIPE_PG_SNAPSHOT=$PWD/snap.json \
		run -1 "$TAP" --config tap.json --catalog catalog.json
	assert_output --partial "snapshot"
	# and a shard given no snapshot refuses
	DATASPOC_PIPE_SHARD=0/4 run -1 --separate-stderr "$TAP" --config tap.json --catalog catalog.json
	assert_equal "$stderr" "dataspoc-tap-postgres: stream 'appdb-public-big' is split across the shards (shard-split): the run's snapshot is not given (DATASPOC_PIPE_PG_SNAPSHOT), and shards in snapshots of their own could read a row twice or miss one"
}

@test "postgres shards: shard-split on an INCREMENTAL stream is refused: each shard would read all of it" {
	big_pipeline inc
	sed -i 's/{replication-method: FULL_TABLE, shard-split: true}/{replication-method: INCREMENTAL, replication-key: id, shard-split: true}/' \
		"$DATASPOC_PIPE_HOME/pipelines/inc.yaml"
	run -1 dataspoc-pipe run inc --shards 2
	assert_output --partial "stream 'appdb-public-big': shard-split splits a FULL_TABLE table, not INCREMENTAL (each shard would read all of it)"
	[ -z "$(bucket_files)" ]
	run -1 bucket_exists .dataspoc/state/inc/state.json
	run -1 bucket_exists .dataspoc/state/inc/lock
}
