#!/usr/bin/env bats
# Upsert by key (issue #27) against a real PostgreSQL 15 (tests/helpers/pg.bash)
# with the built-in tap: the lake, read as DataSpoc Lens reads it, equals the
# table after every run (EXCEPT both ways: the sorted rows compared), with
# INCREMENTAL (the bookmark row re-sent, updates) and LOG_BASED (deletes,
# changes re-sent).

bats_require_minimum_version 1.5.0
load helpers/common
load helpers/pg
load helpers/parquet
load helpers/lake_scenarios

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
	lens_root() {
		printf '%s\n' "$BUCKET_DIR"
	}
	pg_sql -d appdb "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots" >/dev/null
	pg_sql -d appdb "DROP TABLE IF EXISTS customers; DROP PUBLICATION IF EXISTS stitch_appdb"
	pg_sql -d appdb "CREATE TABLE customers(id serial primary key, name text, amount numeric(12,2),
		updated_at timestamptz NOT NULL);
		INSERT INTO customers(name, amount, updated_at) SELECT 'customer-' || i, i * 1.25,
		'2024-01-01'::timestamptz + i * interval '1 minute' FROM generate_series(1, 200) i"
	printf '{"host": "127.0.0.1", "port": %s, "user": "postgres", "password": "%s", "dbname": "appdb", "logical_poll_total_seconds": 2}\n' \
		"$PG_PORT" "$PG_SUPERPASS" >tap.json
}

teardown() {
	pipe_teardown
}

# pg_upsert_pipeline NAME METADATA
pg_upsert_pipeline() {
	cat >"$DATASPOC_PIPE_HOME/pipelines/$1.yaml" <<-EOF
	source:
	  tap: dataspoc-tap-postgres
	  config: $BATS_TEST_TMPDIR/tap.json
	  streams: [appdb-public-customers]
	  metadata:
	    appdb-public-customers: $2
	destination:
	$(bucket_yaml)
	  load_method: upsert
	incremental:
	  enabled: true
	EOF
}

# lake_equals_table: the table's rows (id|name) and the lake's, one set
lake_equals_table() {
	pg_sql -d appdb "SELECT id || '|' || coalesce(name, '') FROM customers ORDER BY id" >table
	lens postgres/customers | jq -r '"\(.id)|\(.name // "")"' | sort -t'|' -k1,1n >lake
	diff -u table lake
	[ "$(lens postgres/customers | jq -r .id | sort | uniq -d | wc -l)" -eq 0 ]
}

changes() {
	pg_sql -d appdb "INSERT INTO customers(name, amount, updated_at) SELECT 'new-' || i, i, '2024-02-01'::timestamptz + i * interval '1 minute' FROM generate_series(1, 5) i;
		UPDATE customers SET name = name || '-upd', updated_at = '2024-03-01' WHERE id IN (3, 100, 150)"
}

@test "postgres INCREMENTAL: inserts and updates, the bookmark row re-sent: the lake equals the table after every run" {
	pg_upsert_pipeline inc '{replication-method: INCREMENTAL, replication-key: updated_at}'
	run -0 --separate-stderr dataspoc-pipe run inc
	lake_equals_table
	changes
	run -0 --separate-stderr dataspoc-pipe run inc
	lake_equals_table
	# nothing changed: the tap re-sends the bookmark's rows (>=), which count once
	run -0 --separate-stderr dataspoc-pipe run inc
	assert_output --partial "Done! 3 records"
	lake_equals_table
	[ "$(manifest_table postgres/customers | jq .stats.total_rows)" -eq 205 ]
}

@test "postgres LOG_BASED: inserts, updates, deletes, a run with nothing new: the lake equals the table after every run" {
	pg_upsert_pipeline lb '{replication-method: LOG_BASED}'
	run -0 --separate-stderr dataspoc-pipe run lb
	lake_equals_table
	changes
	pg_sql -d appdb "DELETE FROM customers WHERE id IN (5, 6, 101)"
	run -0 --separate-stderr dataspoc-pipe run lb
	lake_equals_table
	run -0 --separate-stderr dataspoc-pipe run lb
	lake_equals_table
	pg_sql -d appdb "UPDATE customers SET name = 'again' WHERE id = 7; DELETE FROM customers WHERE id = 8"
	run -0 --separate-stderr dataspoc-pipe run lb
	lake_equals_table
	[ "$(manifest_table postgres/customers | jq .stats.total_rows)" -eq 201 ]
}

@test "postgres LOG_BASED, the catalog cached: a column added and one dropped between runs and while the changes are read: the lake equals the table" {
	pg_upsert_pipeline lb '{replication-method: LOG_BASED}'
	run -0 --separate-stderr dataspoc-pipe run lb
	pg_sql -d appdb "ALTER TABLE customers ADD COLUMN note text; UPDATE customers SET note = 'n' || id WHERE id <= 3"
	pg_sql -d appdb "UPDATE customers SET amount = 99 WHERE id = 9; ALTER TABLE customers DROP COLUMN amount;
		UPDATE customers SET name = 'after-drop' WHERE id = 4; INSERT INTO customers(name, updated_at, note) VALUES ('new', now(), 'nn')"
	run -0 --separate-stderr dataspoc-pipe run lb
	assert_output --partial "Done! 6 records"
	[[ $stderr == *"stream 'appdb-public-customers': column 'note' added, column 'amount' gone"* ]]
	pg_sql -d appdb "SELECT id || '|' || coalesce(name, '') || '|' || coalesce(note, '') FROM customers ORDER BY id" >table
	lens postgres/customers | jq -r '"\(.id)|\(.name // "")|\(.note // "")"' | sort -t'|' -k1,1n >lake
	diff -u table lake
	# the update before the drop kept its value
	[ "$(lens postgres/customers | jq -r 'select((.id | tostring) == "9") | .amount')" = 99 ]
	[ "$(lens postgres/customers | jq -r .id | sort | uniq -d | wc -l)" -eq 0 ]
	pg_sql -d appdb "DELETE FROM customers WHERE id = 1; UPDATE customers SET note = 'later' WHERE id = 2"
	run -0 --separate-stderr dataspoc-pipe run lb
	pg_sql -d appdb "SELECT id || '|' || coalesce(name, '') || '|' || coalesce(note, '') FROM customers ORDER BY id" >table
	lens postgres/customers | jq -r '"\(.id)|\(.name // "")|\(.note // "")"' | sort -t'|' -k1,1n >lake
	diff -u table lake
}

@test "postgres LOG_BASED: an update leaves a large (TOASTed) column unchanged: the change stream omits it, the lake keeps its value; one set to null is null" {
	pg_sql -d appdb "ALTER TABLE customers ADD COLUMN doc text;
		UPDATE customers SET doc = (SELECT string_agg(md5(id::text || '-' || g::text), '') FROM generate_series(1, 400) g)
		WHERE id <= 5"
	pg_upsert_pipeline lb '{replication-method: LOG_BASED}'
	run -0 --separate-stderr dataspoc-pipe run lb
	# out of line: the value is TOASTed (12,800 bytes of hex, stored compressed or not, beyond the page)
	[ "$(pg_sql -d appdb "SELECT pg_column_size(doc) > 2000 FROM customers WHERE id = 1")" = t ]
	pg_sql -d appdb "UPDATE customers SET name = 'toast kept' WHERE id IN (1, 2);
		UPDATE customers SET name = 'twice' WHERE id = 3; UPDATE customers SET amount = 7 WHERE id = 3;
		UPDATE customers SET doc = NULL, name = 'doc gone' WHERE id = 4"
	run -0 --separate-stderr dataspoc-pipe run lb
	pg_sql -d appdb "SELECT id || '|' || coalesce(name, '') || '|' || coalesce(md5(doc), '') FROM customers ORDER BY id" >table
	lens postgres/customers | jq -r '"\(.id)|\(.name // "")|\(.doc // "")"' |
		while IFS='|' read -r id name doc; do
			printf '%s|%s|%s\n' "$id" "$name" "$([ -z "$doc" ] || printf '%s' "$doc" | md5sum | cut -c1-32)"
		done | sort -t'|' -k1,1n >lake
	diff -u table lake
	[ "$(lens postgres/customers | jq -r .id | sort | uniq -d | wc -l)" -eq 0 ]
}
