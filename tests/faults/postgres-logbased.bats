#!/usr/bin/env bats
# postgres-logbased.bats: kill -9 at random moments of `dataspoc-pipe run`
# with dataspoc-tap-postgres LOG_BASED and load_method: upsert, against a
# real PostgreSQL 15 (tests/helpers/pg.bash), both decoding plugins, writers
# changing the table while the runs go (inserts, updates of keys and of other
# columns, deletes, a transaction rolled back).  Each trial: a run killed
# (its process group) after a random delay, the first trial's once the tap
# has made the slot (in the first copy, or its commit); the writers stopped;
# the next run; then the lake, read by
# DuckDB, equals the table, EXCEPT ALL both ways (no row missing, none twice,
# none stale).  Each plugin without checkpoints (a killed run commits
# nothing: the next copies again) and with checkpoint_every: 64KiB (a run
# killed in the first copy leaves its checkpoints' rows and a bookmark with
# xmin and lsn: the next run resumes the copy by xmin, then the changes).
# A few trials each (FAULT_PG_TRIALS, default 3): about three minutes.  Run
# by `make test-faults`.

bats_require_minimum_version 1.5.0
load ../helpers/common
load ../helpers/pg

DUCK=$BATS_TEST_DIRNAME/../clients/parquet-read/duckdb.mjs

setup_file() {
	pg_start
	pg_sql "ALTER SYSTEM SET wal_level = logical"
	pg_as_owner "$PG_BINDIR/pg_ctl" -D "$PG_DIR/data" -w -t 60 restart -m fast >/dev/null
	pg_sql "CREATE DATABASE appdb"
}

teardown_file() {
	pg_stop
}

setup() {
	pipe_setup
}

teardown() {
	pipe_teardown
}

# writer SEED: changes until the file 'stop' exists, a transaction at a time
writer() {
	local i=0 k
	RANDOM=$1
	while [ ! -e stop ]; do
		i=$((i + 1))
		k=$((RANDOM % 20000 + 1))
		case $((RANDOM % 6)) in
		0 | 1) pg_sql -d appdb "INSERT INTO customers(name, amount, note) VALUES ('w$1-$i', $i * 0.5, repeat('n', $RANDOM % 3000))" ;;
		2) pg_sql -d appdb "UPDATE customers SET name = name || '+', amount = amount + 1 WHERE id BETWEEN $k AND $k + 40" ;;
		3) pg_sql -d appdb "DELETE FROM customers WHERE id BETWEEN $k AND $k + 20" ;;
		4) pg_sql -d appdb "UPDATE customers SET id = id + 1000000 WHERE id = $k" || true ;;
		5) pg_sql -d appdb "BEGIN; INSERT INTO customers(name) VALUES ('rolled back'); DELETE FROM customers WHERE id = $k; ROLLBACK" ;;
		esac >/dev/null 2>&1
	done
}

# except_both_ways: the table's rows EXCEPT ALL the lake's, and the lake's
# EXCEPT ALL the table's, by DuckDB: nothing either way
except_both_ways() {
	pg_sql -d appdb "COPY (SELECT id, coalesce(name, ''), coalesce(amount::text, ''), length(coalesce(note, ''))
		FROM customers) TO STDOUT WITH (FORMAT csv)" >table.csv
	run -0 node "$DUCK" sql "CREATE TABLE t AS SELECT * FROM read_csv('table.csv', header = false,
			columns = {'id': 'BIGINT', 'name': 'VARCHAR', 'amount': 'VARCHAR', 'note': 'BIGINT'})" \
		"CREATE TABLE l AS SELECT id::BIGINT AS id, coalesce(name, '') AS name,
			coalesce(CAST(amount AS DECIMAL(12,2))::VARCHAR, '') AS amount, length(coalesce(note, ''))::BIGINT AS note
			FROM read_parquet('$BUCKET_DIR/raw/postgres/customers/**/*.parquet', union_by_name = true)" \
		"SELECT 'missing' AS side, * FROM (SELECT * FROM t EXCEPT ALL SELECT * FROM l)
		 UNION ALL SELECT 'extra', * FROM (SELECT * FROM l EXCEPT ALL SELECT * FROM t) ORDER BY 3 LIMIT 20"
	[ -z "$output" ] || { echo "the lake differs from the table ($(wc -l <table.csv) rows):" >&2; echo "$output" >&2; return 1; }
	[ "$(wc -l <table.csv)" -gt 10000 ]
}

@test "LOG_BASED with upsert, kill -9 at random moments (the first copy's included), writers running: after the next run the lake equals the table" {
	local trials=${FAULT_PG_TRIALS:-3} seed=${FAULT_SEED:-$RANDOM} plugin every
	echo "# FAULT_SEED=$seed" >&3
	for mode in wal2json pgoutput wal2json/64KiB pgoutput/64KiB; do
		plugin=${mode%/*} every=
		[ "$plugin" = "$mode" ] || every=${mode#*/}
		pg_sql -d appdb "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots" >/dev/null
		pg_sql -d appdb "DROP TABLE IF EXISTS customers; DROP PUBLICATION IF EXISTS stitch_appdb;
			CREATE TABLE customers(id serial primary key, name text, amount numeric(12,2), note text);
			INSERT INTO customers(name, amount, note) SELECT 'c' || i, i * 1.25, CASE WHEN i % 100 = 0
				THEN repeat(md5(i::text), 300) END FROM generate_series(1, 20000) i"
		rm -rf "$BUCKET_DIR" "$DATASPOC_PIPE_HOME/pipelines/"*
		printf '{"host": "127.0.0.1", "port": %s, "user": "postgres", "password": "%s", "dbname": "appdb", "logical_poll_total_seconds": 2, "logical_plugin": "%s"}\n' \
			"$PG_PORT" "$PG_SUPERPASS" "$plugin" >tap.json
		cat >"$DATASPOC_PIPE_HOME/pipelines/lb.yaml" <<-EOF
		source:
		  tap: dataspoc-tap-postgres
		  config: $BATS_TEST_TMPDIR/tap.json
		  streams: [appdb-public-customers]
		  metadata:
		    appdb-public-customers: {replication-method: LOG_BASED}
		destination:
		$(bucket_yaml)
		  load_method: upsert
		incremental:
		  enabled: true
		${every:+  checkpoint_every: $every}
		EOF
		for t in $(seq 1 "$trials"); do
			RANDOM=$((seed + t))
			rm -f stop
			writer $((seed * 10 + t)) &
			local w=$!
			BG_PIDS="$BG_PIDS $w"
			setsid dataspoc-pipe run lb >"run-$t.log" 2>&1 &
			local pid=$!
			local delay=$((RANDOM % 3)).$((RANDOM % 10)) what=
			if [ "$t" = 1 ]; then
				# the first trial's kill falls in the first copy: once the tap has made the slot
				for _ in $(seq 1 200); do
					[ "$(pg_sql -d appdb "SELECT count(*) FROM pg_replication_slots")" != 0 ] && break
					sleep 0.05
				done
				delay=0.0$((RANDOM % 10))
				what=" the slot made, then"
			fi
			sleep "$delay"
			kill -9 -- "-$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
			echo "# $mode trial $t:$what killed after $delay s; the state then: $(pipe-state get lb 2>/dev/null |
				jq -c '.bookmarks[] | with_entries(select(.key == "xmin" or .key == "lsn")) | map_values(. != null)' 2>/dev/null)" >&3
			sleep 0.5
			: >stop
			wait "$w"
			# the slot is let go by the server once it sees the killed reader's connection closed
			for _ in $(seq 1 100); do
				[ "$(pg_sql -d appdb "SELECT count(*) FROM pg_replication_slots WHERE active")" = 0 ] && break
				sleep 0.1
			done
			run -0 --separate-stderr pipe-state get -r "$(pipe-state new-run-id)" lb
			run -0 --separate-stderr pipe-state unlock lb
			run -0 --separate-stderr dataspoc-pipe run lb
			except_both_ways
		done
	done
}
