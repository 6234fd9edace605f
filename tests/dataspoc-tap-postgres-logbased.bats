#!/usr/bin/env bats
# dataspoc-tap-postgres, LOG_BASED: against a real PostgreSQL 15 started with
# wal_level=logical (tests/helpers/pg.bash), with both decoding plugins
# (wal2json, Debian's postgresql-15-wal2json, and pgoutput), compared with
# what singer-io's tap-postgres printed (../shared/fixtures/tap-postgres-log-based,
# copied in tests/fixtures/tap-postgres-log-based).

bats_require_minimum_version 1.5.0
load helpers/common
load helpers/pg

FIX=$BATS_TEST_DIRNAME/fixtures/tap-postgres-log-based

setup_file() {
	pg_start
	pg_sql "ALTER SYSTEM SET wal_level = logical"
	pg_as_owner "$PG_BINDIR/pg_ctl" -D "$PG_DIR/data" -w -t 60 restart -m fast >/dev/null
	pg_sql "CREATE DATABASE appdb"
	pg_sql "CREATE USER plain PASSWORD 'plain-pw' LOGIN"
}

teardown_file() {
	pg_stop
}

setup() {
	pipe_setup
	TAP=$PIPE_BIN/dataspoc-tap-postgres
	# each test its own table and slots
	pg_sql -d appdb "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots" >/dev/null
	pg_sql -d appdb "DROP TABLE IF EXISTS orders, customers; DROP PUBLICATION IF EXISTS stitch_appdb, slot_p"
	pg_sql -d appdb "CREATE TABLE customers(id serial primary key, name text, amount numeric(12,2),
		tags text[], meta jsonb, updated_at timestamptz);
		INSERT INTO customers(name, amount, tags, meta, updated_at) SELECT 'customer-' || i, i * 1.25,
		'{a,b}', jsonb_build_object('g', i), '2024-01-01'::timestamptz + i * interval '1 minute'
		FROM generate_series(1, 10) i"
	log_config tap.json
	cp "$FIX/properties-log-based.json" props.json
}

teardown() {
	pipe_teardown
}

# log_config FILE [JSON-MEMBERS]: the tap's config for appdb, with more members.
log_config() {
	printf '{"host": "127.0.0.1", "port": %s, "user": "postgres", "password": "%s", "dbname": "appdb", "logical_poll_total_seconds": 3%s}\n' \
		"$PG_PORT" "$PG_SUPERPASS" "${2:+, $2}" >"$1"
}

# The value of the last STATE of a run's output FILE, as a state file.
last_state() {
	grep '"type": "STATE"' "$1" | tail -n 1 | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["value"]))'
}

# The messages with what changes from run to run made constant: the version,
# time_extracted, the lsn bookmark, a delete's time.
untimed() {
	sed -E 's/"version": [0-9]+/"version": V/g; s/"time_extracted": "[^"]*"/"time_extracted": "T"/;
		s/"lsn": [0-9]+/"lsn": L/g; s/"_sdc_deleted_at": "[^"]*"/"_sdc_deleted_at": "D"/' "$@"
}

# The fixture's changes between its run 1 and run 2.
fixture_changes() {
	pg_sql -d appdb "INSERT INTO customers(name, amount, tags, meta, updated_at)
		VALUES ('new-1', 7.77, '{x}', '{\"k\": true}', '2026-12-03 07:39:58.425407+00')"
	pg_sql -d appdb "INSERT INTO customers(name, amount, tags, meta, updated_at) VALUES ('new-2', NULL, NULL, NULL, NULL)"
	pg_sql -d appdb "UPDATE customers SET name = name || '-upd', amount = amount + 0.01 WHERE id IN (3, 4)"
	pg_sql -d appdb "DELETE FROM customers WHERE id IN (5, 6)"
}

# apply FILE...: the RECORDs of the runs' outputs applied by key (id) as an
# upsert would, a delete removing the row: the rows left, sorted, as
# id|name|amount lines.
apply() {
	python3 - "$@" <<-'EOF'
	import json, os, sys
	rows = {}
	for f in sys.argv[1:]:
	    for line in open(f):
	        m = json.loads(line, parse_float=str)
	        if m["type"] != "RECORD":
	            continue
	        if os.environ.get("STREAM", m["stream"]) != m["stream"]:
	            continue
	        r = m["record"]
	        if r.get("_sdc_deleted_at"):
	            rows.pop(r["id"], None)
	        else:
	            old = rows.get(r["id"], {})
	            old.update(r)
	            rows[r["id"]] = old
	for k in sorted(rows):
	    r = rows[k]
	    a = r.get("amount")
	    print("%s|%s|%s" % (k, "" if r.get("name") is None else r["name"], "" if a is None else a))
	EOF
}

table_rows() {	# [TABLE]
	pg_sql -d appdb "SELECT id, coalesce(name, ''), coalesce(amount::text, '') FROM ${1:-customers} ORDER BY id"
}

@test "LOG_BASED first run: the slot made, the copy in its snapshot, messages and bookmarks as tap-postgres's" {
	run -0 --separate-stderr "$TAP" --config tap.json --properties props.json
	printf '%s\n' "$output" >run1.jsonl
	untimed "$FIX/run-log1.jsonl" >want
	untimed run1.jsonl >got
	diff -u want got
	[ "$stderr" = "dataspoc-tap-postgres: note: slot 'stitch_appdb' decodes with wal2json (logical_plugin chooses)" ]
	run -0 pg_sql -d appdb "SELECT plugin, confirmed_flush_lsn - '0/0' FROM pg_replication_slots WHERE slot_name = 'stitch_appdb'"
	# the bookmark is the slot's consistent point
	lsn=$(last_state run1.jsonl | python3 -c 'import json, sys; print(json.load(sys.stdin)["bookmarks"]["appdb-public-customers"]["lsn"])')
	[ "$output" = "wal2json|$lsn" ]
}

@test "LOG_BASED changes: inserts, updates, deletes as tap-postgres sends them; the bookmark moves past them" {
	"$TAP" --config tap.json --properties props.json >run1.jsonl
	last_state run1.jsonl >state1.json
	fixture_changes
	run -0 --separate-stderr "$TAP" --config tap.json --properties props.json --state state1.json
	printf '%s\n' "$output" >run2.jsonl
	untimed "$FIX/run-log2.jsonl" >want
	untimed run2.jsonl >got
	diff -u want got
	[ "$stderr" = "" ]
	lsn1=$(grep -o '"lsn": [0-9]*' state1.json)
	last_state run2.jsonl >state2.json
	lsn2=$(grep -o '"lsn": [0-9]*' state2.json)
	[ "${lsn2#*: }" -gt "${lsn1#*: }" ]
	# tap-postgres's run 3 sends the same changes again; this one sends none
	run -0 --separate-stderr "$TAP" --config tap.json --properties props.json --state state2.json
	[ "${#lines[@]}" -eq 2 ]
	[[ ${lines[0]} == '{"type": "SCHEMA", '* ]]
	[ "$(printf '%s\n' "${lines[1]}" | grep -o '"lsn": [0-9]*')" = "$lsn2" ]
	apply run1.jsonl run2.jsonl >lake
	table_rows | diff -u - lake
}

@test "LOG_BASED reads the state tap-postgres saved, and continues from its lsn" {
	pg_sql -d appdb "SELECT pg_create_logical_replication_slot('stitch_appdb', 'wal2json')" >/dev/null
	lsn=$(pg_sql -d appdb "SELECT pg_current_wal_lsn() - '0/0'")
	sed -E "s/\"lsn\":[0-9]+/\"lsn\":$lsn/" "$FIX/state-after-run-log1.json" >state1.json
	fixture_changes
	run -0 --separate-stderr "$TAP" --config tap.json --properties props.json --state state1.json
	printf '%s\n' "$output" >run2.jsonl
	untimed "$FIX/run-log2.jsonl" >want
	untimed run2.jsonl >got
	diff -u want got
	grep -q '"version": 1796283595671' run2.jsonl
}

@test "pgoutput and wal2json send the same records for the same changes" {
	log_config w.json '"logical_plugin": "wal2json", "logical_slot": "slot_w"'
	log_config p.json '"logical_plugin": "pgoutput", "logical_slot": "slot_p"'
	"$TAP" --config w.json --properties props.json >w1.jsonl
	"$TAP" --config p.json --properties props.json >p1.jsonl
	last_state w1.jsonl >w1.state
	last_state p1.jsonl >p1.state
	run -0 pg_sql -d appdb "SELECT slot_name, plugin FROM pg_replication_slots ORDER BY 1"
	[ "$output" = $'slot_p|pgoutput\nslot_w|wal2json' ]
	fixture_changes
	pg_sql -d appdb "ALTER TABLE customers ADD COLUMN big text, ADD COLUMN f float8, ADD COLUMN ok boolean,
		ADD COLUMN d date, ADD COLUMN ts timestamp, ADD COLUMN n numeric, ADD COLUMN b bigint"
	# NULLs and values in every type, a large (TOASTed) value, a rolled back transaction
	pg_sql -d appdb "INSERT INTO customers(id, name, big, f, ok, d, ts, n, b, tags) VALUES
		(100000, E'q\"uote\\\\ \\n é 🚀', (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 3000) i), 1.5e-7, true, '2024-02-29', '2024-01-01 10:00:00.5',
		 123456789012345678901234567890.000001, 9223372036854775807, '{\"a,b\",NULL,c}'),
		(100001, NULL, NULL, 'NaN', NULL, NULL, NULL, 'NaN', NULL, NULL)"
	pg_sql -d appdb "BEGIN; INSERT INTO customers(id, name) VALUES (200, 'rolled back'); ROLLBACK"
	pg_sql -d appdb "UPDATE customers SET name = 'toast kept' WHERE id = 100000"
	pg_sql -d appdb "UPDATE customers SET id = 1000000 WHERE id = 1"
	pg_sql -d appdb "BEGIN; INSERT INTO customers(name) SELECT 'bulk-' || i FROM generate_series(1, 1500) i;
		DELETE FROM customers WHERE id = 2; COMMIT"
	run -0 --separate-stderr "$TAP" --config w.json --properties props.json --state w1.state
	printf '%s\n' "$output" >w2.jsonl
	run -0 --separate-stderr "$TAP" --config p.json --properties props.json --state p1.state
	printf '%s\n' "$output" >p2.jsonl
	grep RECORD w2.jsonl | untimed >w
	grep RECORD p2.jsonl | untimed >p
	diff -u w p
	[ "$(wc -l <w)" -eq 1512 ]
	# a new column's values are sent, after a SCHEMA that has it
	[ "$(grep -c '"type": "SCHEMA"' p2.jsonl)" -eq 2 ]
	grep '"type": "SCHEMA"' p2.jsonl | tail -n 1 | grep -q '"big": {"type": \["null", "string"\]}'
	grep -q '"id": 100000, "name": "q\\"uote\\\\ \\n \\u00e9 \\ud83d\\ude80", .*"f": 1.5e-07, "ok": true, "d": "2024-02-29T00:00:00+00:00", "ts": "2024-01-01T10:00:00.500000+00:00", "n": 123456789012345678901234567890.000001, "b": 9223372036854775807, "_sdc_deleted_at": null}' w
	grep -q '"id": 100001, "name": null, "amount": null, "tags": \[\], "meta": null, "updated_at": null, "big": null, "f": null, "ok": null, "d": null, "ts": null, "n": null, "b": null, "_sdc_deleted_at": null}' w
	grep -q '"tags": \["a,b", null, "c"\]' w
	# the update that kept the large value: the record lacks it, and a warning says so
	grep -q '"id": 100000, "name": "toast kept", "amount": null, "tags": \["a,b", null, "c"\], "meta": null, "updated_at": null, "f"' w
	[[ $stderr == *"the record lacks the column"*"REPLICA IDENTITY FULL"* ]]
	! grep -q 'rolled back' w
	# the key moved: the old key's delete, then the new row
	grep -n '"id": 1, "_sdc_deleted_at": "D"' w
	grep -q '"id": 1000000, "name": "customer-1"' w
	# a STATE inside the run, at a transaction's end, for checkpoint_every
	[ "$(grep -c '"type": "STATE"' p2.jsonl)" -ge 2 ]
	apply w1.jsonl w2.jsonl | diff -u <(table_rows) -
	apply p1.jsonl p2.jsonl | diff -u <(table_rows) -
}

@test "the first copy and the stream meet exactly while writers run: no row missing, none twice" {
	for plugin in wal2json pgoutput; do
		pg_sql -d appdb "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots" >/dev/null
		pg_sql -d appdb "TRUNCATE customers; INSERT INTO customers(id, name) SELECT i, 'r' || i FROM generate_series(1, 20000) i"
		log_config c.json "\"logical_plugin\": \"$plugin\""
		(for i in $(seq 1 60); do
			pg_sql -d appdb "INSERT INTO customers(id, name) VALUES (100000 + $i, 'w$i');
				UPDATE customers SET name = name || '+' WHERE id = $i; DELETE FROM customers WHERE id = 20000 - $i"
		done) &
		writer=$!
		BG_PIDS="$BG_PIDS $writer"
		"$TAP" --config c.json --properties props.json >r1.jsonl
		wait "$writer"
		last_state r1.jsonl >s1.json
		"$TAP" --config c.json --properties props.json --state s1.json >r2.jsonl
		apply r1.jsonl r2.jsonl | diff -u <(table_rows) -
		# an inserted row comes once: in the copy or in the stream
		dup=$(cat r1.jsonl r2.jsonl | grep -o '"id": 1000[0-9][0-9], "name": "w[0-9]*"' | sort | uniq -d)
		[ -z "$dup" ]
	done
}

@test "a table added to a slot that streams: copied in a temporary slot's snapshot, its changes from there" {
	for plugin in wal2json pgoutput; do
		pg_sql -d appdb "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots" >/dev/null
		pg_sql -d appdb "DROP TABLE IF EXISTS orders; DROP PUBLICATION IF EXISTS stitch_appdb;
			CREATE TABLE orders (LIKE customers INCLUDING ALL); INSERT INTO orders SELECT * FROM customers"
		log_config c.json "\"logical_plugin\": \"$plugin\""
		python3 -c 'import json, copy
c = json.load(open("props.json"))
o = copy.deepcopy(c["streams"][0])
o["table_name"] = o["stream"] = "orders"
o["tap_stream_id"] = "appdb-public-orders"
c["streams"].append(o)
json.dump(c, open("props2.json", "w"))'
		"$TAP" --config c.json --properties props.json >r1.jsonl
		last_state r1.jsonl >s1.json
		pg_sql -d appdb "UPDATE customers SET name = 'c-upd' WHERE id = 1; UPDATE orders SET name = 'o-upd-before' WHERE id = 1"
		(for i in $(seq 1 40); do
			pg_sql -d appdb "INSERT INTO orders(id, name) VALUES (1000 + $i, 'w$i'); UPDATE orders SET name = name || '+' WHERE id = 2;
				DELETE FROM orders WHERE id = 1000 + $i - 20"
		done) &
		writer=$!
		BG_PIDS="$BG_PIDS $writer"
		"$TAP" --config c.json --properties props2.json --state s1.json >r2.jsonl
		wait "$writer"
		last_state r2.jsonl >s2.json
		run -0 pg_sql -d appdb "SELECT count(*) FROM pg_replication_slots"
		[ "$output" = 1 ]
		pg_sql -d appdb "DELETE FROM orders WHERE id = 3; UPDATE customers SET name = 'c-upd2' WHERE id = 2"
		"$TAP" --config c.json --properties props2.json --state s2.json >r3.jsonl
		STREAM=orders apply r2.jsonl r3.jsonl | diff -u <(table_rows orders) -
		STREAM=customers apply r1.jsonl r2.jsonl r3.jsonl | diff -u <(table_rows customers) -
		# the orders' changes before their copy's snapshot are not sent again
		! grep -q '"stream": "orders", "record": {"id": 1, "name": "o-upd-before", .*"_sdc_deleted_at"' r3.jsonl
		dup=$(cat r2.jsonl r3.jsonl | grep -o '"stream": "orders", "record": {"id": 10[0-9][0-9], "name": "w[0-9]*"' | sort | uniq -d)
		[ -z "$dup" ]
	done
}

@test "a run that is not committed confirms nothing: the next run from the same state reads the same changes" {
	log_config c.json '"logical_plugin": "pgoutput"'
	"$TAP" --config c.json --properties props.json >r1.jsonl
	last_state r1.jsonl >s1.json
	pg_sql -d appdb "INSERT INTO customers(name) SELECT 'k-' || i FROM generate_series(1, 50000) i"
	fixture_changes
	# killed halfway: its output never committed
	"$TAP" --config c.json --properties props.json --state s1.json >killed.jsonl &
	pid=$!
	for _ in $(seq 1 200); do [ -s killed.jsonl ] && break; sleep 0.05; done
	kill -9 "$pid"
	wait "$pid" || true
	"$TAP" --config c.json --properties props.json --state s1.json >r2.jsonl
	"$TAP" --config c.json --properties props.json --state s1.json >r3.jsonl
	[ "$(grep -c RECORD r2.jsonl)" -eq 50006 ]
	diff -u <(grep RECORD r2.jsonl | untimed) <(grep RECORD r3.jsonl | untimed)
	apply r1.jsonl r2.jsonl | diff -u <(table_rows) -
	# the slot was confirmed up to the saved state only
	run -0 pg_sql -d appdb "SELECT confirmed_flush_lsn - '0/0' FROM pg_replication_slots"
	[ "$output" = "$(grep -o '"lsn": [0-9]*' s1.json | cut -d' ' -f2)" ]
	# the next run, given run 2's state, confirms it and reads nothing again
	last_state r2.jsonl >s2.json
	"$TAP" --config c.json --properties props.json --state s2.json >r4.jsonl
	[ "$(grep -c RECORD r4.jsonl)" -eq 0 ]
	run -0 pg_sql -d appdb "SELECT confirmed_flush_lsn - '0/0' FROM pg_replication_slots"
	[ "$output" = "$(grep -o '"lsn": [0-9]*' s2.json | cut -d' ' -f2)" ]
}

@test "a first copy interrupted (xmin and lsn in the bookmark) is resumed by xmin, then the changes follow" {
	"$TAP" --config tap.json --properties props.json >r1.jsonl
	last_state r1.jsonl >s1.json
	x=$(pg_sql -d appdb "SELECT xmin FROM customers WHERE id = 5")
	python3 -c 'import json, sys
s = json.load(open("s1.json"))
s["bookmarks"]["appdb-public-customers"]["xmin"] = int(sys.argv[1])
s["currently_syncing"] = "appdb-public-customers"
json.dump(s, open("s1x.json", "w"))' "$x"
	pg_sql -d appdb "DELETE FROM customers WHERE id = 9"
	run -0 --separate-stderr "$TAP" --config tap.json --properties props.json --state s1x.json
	printf '%s\n' "$output" >r2.jsonl
	# the copy again (same version: no ACTIVATE_VERSION first), then the delete from the stream
	run -0 jq -c 'select(.type != "RECORD") | [.type, .value.bookmarks["appdb-public-customers"].xmin]' r2.jsonl
	assert_output "$(printf '%s\n' '["SCHEMA",null]' '["STATE",'"$x"']' '["ACTIVATE_VERSION",null]' '["STATE",null]' '["SCHEMA",null]' '["STATE",null]')"
	[ "$(grep -c '"_sdc_deleted_at"' r2.jsonl)" -eq 2 ]
	grep -q '"record": {"id": 9, "_sdc_deleted_at": "' r2.jsonl
	apply r1.jsonl r2.jsonl | diff -u <(table_rows) -
}

@test "DDL while streaming: a column added, dropped or retyped sends a new SCHEMA before the next records, both plugins" {
	for plugin in wal2json pgoutput; do
		pg_sql -d appdb "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots" >/dev/null
		pg_sql -d appdb "DROP TABLE customers; CREATE TABLE customers(id serial primary key, name text,
			amount numeric(12,2), tags text[], meta jsonb, updated_at timestamptz);
			INSERT INTO customers(name, tags) VALUES ('a', '{x}'), ('b', '{y}')"
		log_config c.json "\"logical_plugin\": \"$plugin\""
		"$TAP" --config c.json --properties props.json >r1.jsonl
		last_state r1.jsonl >s1.json
		pg_sql -d appdb "ALTER TABLE customers ADD COLUMN extra int; INSERT INTO customers(name, extra) VALUES ('c', 5)"
		pg_sql -d appdb "ALTER TABLE customers DROP COLUMN tags; INSERT INTO customers(name) VALUES ('d')"
		pg_sql -d appdb "ALTER TABLE customers ALTER COLUMN name TYPE integer USING length(name);
			INSERT INTO customers(name) VALUES (7); UPDATE customers SET amount = 1 WHERE id = 1"
		run -0 --separate-stderr "$TAP" --config c.json --properties props.json --state s1.json
		printf '%s\n' "$output" >r2.jsonl
		run -0 jq -c 'if .type == "SCHEMA" then [.type, (.schema.properties | to_entries | map(.key + ":" + (.value.type | join(","))))]
			elif .type == "RECORD" then [.type, .record.id, .record.name, (.record | keys)] else [.type] end' r2.jsonl
		printf '%s\n' "$output" >got
		cat >want <<-'EOF'
		["SCHEMA",["id:integer","name:null,string","amount:null,number","tags:null,array","meta:null,string","updated_at:null,string","_sdc_deleted_at:null,string"]]
		["SCHEMA",["id:integer","name:null,string","amount:null,number","tags:null,array","meta:null,string","updated_at:null,string","extra:null,integer","_sdc_deleted_at:null,string"]]
		["RECORD",3,"c",["_sdc_deleted_at","amount","extra","id","meta","name","tags","updated_at"]]
		["SCHEMA",["id:integer","name:null,string","amount:null,number","meta:null,string","updated_at:null,string","extra:null,integer","_sdc_deleted_at:null,string"]]
		["RECORD",4,"d",["_sdc_deleted_at","amount","extra","id","meta","name","updated_at"]]
		["SCHEMA",["id:integer","name:null,integer","amount:null,number","meta:null,string","updated_at:null,string","extra:null,integer","_sdc_deleted_at:null,string"]]
		["RECORD",5,7,["_sdc_deleted_at","amount","extra","id","meta","name","updated_at"]]
		["RECORD",1,1,["_sdc_deleted_at","amount","extra","id","meta","name","updated_at"]]
		["STATE"]
		EOF
		diff -u want got
		[[ $stderr == *"warning: stream 'appdb-public-customers': column 'tags' was dropped from the table at LSN "*": the records follow a new SCHEMA without it"* ]]
		[[ $stderr == *"warning: stream 'appdb-public-customers': column 'name' changed type from text to integer at LSN "*": its records follow a new SCHEMA; the rows the change rewrote are not in the change stream (run the pipeline with --full to copy them anew)"* ]]
		# the next run starts from the catalog's schema again, and the table's changes say the rest
		last_state r2.jsonl >s2.json
		pg_sql -d appdb "DELETE FROM customers WHERE id = 2; INSERT INTO customers(name, extra) VALUES (8, 9)"
		"$TAP" --config c.json --properties props.json --state s2.json >r3.jsonl
		run -0 jq -c 'select(.type == "SCHEMA") | .schema.properties | keys' r3.jsonl
		# (a delete carries the key only: with wal2json, the insert after it says what the table lost)
		[ "${lines[-1]}" = '["_sdc_deleted_at","amount","extra","id","meta","name","updated_at"]' ]
		run -0 jq -c 'select(.type == "RECORD") | .record' r3.jsonl
		[ "${lines[-1]}" = '{"id":6,"name":8,"amount":null,"meta":null,"updated_at":null,"extra":9,"_sdc_deleted_at":null}' ]
	done
}

@test "a first copy cut short after a STATE (a checkpoint landed it) is resumed from its xmin: rows changed since come again, and applied by key the table has each row once" {
	for plugin in wal2json pgoutput; do
		pg_sql -d appdb "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots" >/dev/null
		pg_sql -d appdb "TRUNCATE customers"
		# five transactions of 1,000 rows: five xmins, the copy in their order
		for b in 0 1 2 3 4; do
			pg_sql -d appdb "INSERT INTO customers(id, name) SELECT i, 'r' || i FROM generate_series($b * 1000 + 1, $b * 1000 + 1000) i"
		done
		log_config c.json "\"logical_plugin\": \"$plugin\""
		"$TAP" --config c.json --properties props.json >r1.jsonl
		# what a checkpoint at the second STATE landed: the run cut there
		n=$(grep -n '"type": "STATE".*"xmin"' r1.jsonl | sed -n 2p | cut -d: -f1)
		head -n "$n" r1.jsonl >cut.jsonl
		last_state cut.jsonl >s1.json
		grep -q '"xmin": [0-9]' s1.json
		grep -q '"lsn": [0-9]' s1.json
		# changes before the resume: to rows landed and rows not yet
		pg_sql -d appdb "UPDATE customers SET name = name || '-u' WHERE id IN (5, 1500, 2500, 4500);
			DELETE FROM customers WHERE id IN (6, 1600, 2600, 4600); UPDATE customers SET id = 9002 WHERE id = 7;
			INSERT INTO customers(id, name) VALUES (9001, 'new')"
		"$TAP" --config c.json --properties props.json --state s1.json >r2.jsonl
		apply cut.jsonl r2.jsonl | diff -u <(table_rows) -
		# the rows of the transactions before the bookmark's xmin, unchanged, are not sent again
		! grep -q '"record": {"id": 8, ' r2.jsonl
		! grep -q '"record": {"id": 999, ' r2.jsonl
		# the next run: nothing again
		last_state r2.jsonl >s2.json
		"$TAP" --config c.json --properties props.json --state s2.json >r3.jsonl
		[ "$(grep -c '"type": "RECORD"' r3.jsonl)" -eq 0 ]
	done
}

@test "a change with a value over 1 MiB is written out in pieces and is exact, both plugins" {
	M=1048576
	for plugin in wal2json pgoutput; do
		pg_sql -d appdb "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots" >/dev/null
		log_config c.json "\"logical_plugin\": \"$plugin\""
		"$TAP" --config c.json --properties props.json >r1.jsonl
		last_state r1.jsonl >s1.json
		pg_sql -d appdb "UPDATE customers SET name = repeat('a', $M - 2) || '🚀' || repeat(E'é\"\\\\\\n\\t', 300000) WHERE id = 1;
			DELETE FROM customers WHERE id = 100; INSERT INTO customers(id, name) VALUES (100, repeat('b', 3 * $M))"
		"$TAP" --config c.json --properties props.json --state s1.json >r2.jsonl
		grep '"type": "RECORD"' r2.jsonl | python3 -c 'import hashlib, json, sys
for l in sys.stdin:
    r = json.loads(l)["record"]
    if not r["_sdc_deleted_at"]:
        print("%d|%s|%d" % (r["id"], hashlib.md5(r["name"].encode()).hexdigest(), len(r["name"])))' >got
		pg_sql -d appdb "SELECT id, md5(name), length(name) FROM customers WHERE id IN (1, 100) ORDER BY id" >want
		diff -u want got
	done
}

@test "values over 1 MiB in an update's new and old rows (REPLICA IDENTITY FULL) and a delete's, exact, both plugins" {
	pg_sql -d appdb "ALTER TABLE customers REPLICA IDENTITY FULL"
	for plugin in wal2json pgoutput; do
		pg_sql -d appdb "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots" >/dev/null
		log_config c.json "\"logical_plugin\": \"$plugin\""
		"$TAP" --config c.json --properties props.json >r1.jsonl
		last_state r1.jsonl >s1.json
		pg_sql -d appdb "UPDATE customers SET name = repeat(E'\\u00e9\\\\\"\\n' || md5(random()::text), 100000) WHERE id = 2"
		pg_sql -d appdb "SELECT id, md5(name), length(name) FROM customers WHERE id = 2" >want
		pg_sql -d appdb "UPDATE customers SET name = name || E'\\\\x', amount = 99 WHERE id = 2"
		pg_sql -d appdb "SELECT id, md5(name), length(name) FROM customers WHERE id = 2" >>want
		pg_sql -d appdb "DELETE FROM customers WHERE id = 2"
		echo "deleted ['_sdc_deleted_at', 'id']" >>want
		"$TAP" --config c.json --properties props.json --state s1.json >r2.jsonl
		grep '"type": "RECORD"' r2.jsonl | python3 -c 'import hashlib, json, sys
for l in sys.stdin:
    r = json.loads(l)["record"]
    if not r["_sdc_deleted_at"]:
        print("%d|%s|%d" % (r["id"], hashlib.md5(r["name"].encode()).hexdigest(), len(r["name"])))
    else:
        print("deleted %s" % sorted(r))' >got
		diff -u want got
		pg_sql -d appdb "INSERT INTO customers(id, name) VALUES (2, 'back')"
	done
}

@test "debug_lsn: _sdc_lsn in the records and the schema" {
	log_config c.json '"debug_lsn": "true"'
	"$TAP" --config c.json --properties props.json >r1.jsonl
	last_state r1.jsonl >s1.json
	pg_sql -d appdb "DELETE FROM customers WHERE id = 3"
	run -0 --separate-stderr "$TAP" --config c.json --properties props.json --state s1.json
	[[ ${lines[0]} == *'"_sdc_deleted_at": {"type": ["null", "string"], "format": "date-time"}, "_sdc_lsn": {"type": ["null", "string"]}}'* ]]
	[[ ${lines[1]} =~ '"record": {"id": 3, "_sdc_deleted_at": "'[^\"]*'", "_sdc_lsn": "'[0-9]+'"}' ]]
}

@test "wal2json_message_format 2: a delete's time is its transaction's commit, 1: the run's start" {
	for f in 1 2; do
		pg_sql -d appdb "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots" >/dev/null
		log_config c.json "\"wal2json_message_format\": $f"
		"$TAP" --config c.json --properties props.json >r1.jsonl
		last_state r1.jsonl >s1.json
		pg_sql -d appdb "DELETE FROM customers WHERE id = 3 + $f"
		sleep 1.1
		"$TAP" --config c.json --properties props.json --state s1.json >r2.jsonl
		run -0 python3 -c 'import json, sys, datetime
m = [json.loads(l) for l in open("r2.jsonl")][1]
d = datetime.datetime.fromisoformat(m["record"]["_sdc_deleted_at"])
t = datetime.datetime.fromisoformat(m["time_extracted"].replace("Z", "+00:00"))
print((t - d).total_seconds() > 1)'
		[ "$output" = "$([ $f = 2 ] && echo True || echo False)" ]
	done
}

@test "errors name host, database, slot and table, say what to do, never the password" {
	"$TAP" --config tap.json --properties props.json >r1.jsonl
	last_state r1.jsonl >s1.json
	# a truncate
	pg_sql -d appdb "TRUNCATE customers"
	run -1 --separate-stderr "$TAP" --config tap.json --properties props.json --state s1.json
	[[ $stderr =~ ^"dataspoc-tap-postgres: cannot replicate: the table was truncated at LSN "[0-9A-F/]+" (host '127.0.0.1' port $PG_PORT database 'appdb' slot 'stitch_appdb' table 'public.customers'): run the pipeline with --full to copy the table anew"$ ]]
	[[ $stderr != *"$PG_SUPERPASS"* ]]
	# the same with pgoutput
	log_config p.json '"logical_plugin": "pgoutput", "logical_slot": "slot_p"'
	"$TAP" --config p.json --properties props.json >p1.jsonl
	last_state p1.jsonl >p1.json
	pg_sql -d appdb "INSERT INTO customers(name) VALUES ('x'); TRUNCATE customers"
	run -1 --separate-stderr "$TAP" --config p.json --properties props.json --state p1.json
	[[ $stderr =~ ^"dataspoc-tap-postgres: cannot replicate: the table was truncated at LSN "[0-9A-F/]+" (host '127.0.0.1' port $PG_PORT database 'appdb' slot 'slot_p' table 'public.customers'): run the pipeline with --full to copy the table anew"$ ]]
	pg_sql -d appdb "SELECT pg_drop_replication_slot('slot_p')" >/dev/null
	# the slot missing
	pg_sql -d appdb "SELECT pg_drop_replication_slot('stitch_appdb')" >/dev/null
	run -1 --separate-stderr "$TAP" --config tap.json --properties props.json --state s1.json
	[[ $stderr == "dataspoc-tap-postgres: cannot replicate: the replication slot is missing (the saved state is at LSN "*") (host '127.0.0.1' port $PG_PORT database 'appdb' slot 'stitch_appdb'): the changes since are lost to it; run the pipeline with --full"* ]]
	# the same with a new stream beside it: no copy, no slot made that would hide the loss
	pg_sql -d appdb "CREATE TABLE orders (LIKE customers)"
	python3 -c 'import json, copy
c = json.load(open("props.json"))
o = copy.deepcopy(c["streams"][0])
o["table_name"] = o["stream"] = "orders"
o["tap_stream_id"] = "appdb-public-orders"
c["streams"].append(o)
json.dump(c, open("props2.json", "w"))'
	run -1 --separate-stderr "$TAP" --config tap.json --properties props2.json --state s1.json
	assert_output ''
	[[ $stderr == "dataspoc-tap-postgres: cannot replicate: the replication slot is missing (the saved state is at LSN "* ]]
	[ "$(pg_sql -d appdb "SELECT count(*) FROM pg_replication_slots")" = 0 ]
	# the slot taken by another reader
	pg_sql -d appdb "SELECT pg_create_logical_replication_slot('stitch_appdb', 'wal2json')" >/dev/null
	PGPASSWORD=$PG_SUPERPASS pg_recvlogical -h 127.0.0.1 -p "$PG_PORT" -U postgres -d appdb -S stitch_appdb --start -f /dev/null &
	BG_PIDS="$BG_PIDS $!"
	for _ in $(seq 1 100); do
		[ "$(pg_sql -d appdb "SELECT active FROM pg_replication_slots")" = t ] && break
		sleep 0.05
	done
	run -1 --separate-stderr "$TAP" --config tap.json --properties props.json --state s1.json
	[[ $stderr == *"cannot replicate: another reader holds the slot (host '127.0.0.1' port $PG_PORT database 'appdb' slot 'stitch_appdb'): stop it, or wait for its run to end"* ]]
	kill "${BG_PIDS##* }"
	wait "${BG_PIDS##* }" || true
	# the slot invalidated: the server removed the WAL it needed
	pg_sql "ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'"
	pg_sql "SELECT pg_reload_conf()" >/dev/null
	for _ in 1 2 3; do
		pg_sql -d appdb "CREATE TABLE IF NOT EXISTS junk(x text); INSERT INTO junk SELECT repeat('x', 1000)
			FROM generate_series(1, 20000); SELECT pg_switch_wal()" >/dev/null
	done
	pg_sql "CHECKPOINT"
	pg_sql "ALTER SYSTEM RESET max_slot_wal_keep_size"
	pg_sql "SELECT pg_reload_conf()" >/dev/null
	pg_sql -d appdb "DROP TABLE junk"
	run -1 --separate-stderr "$TAP" --config tap.json --properties props.json --state s1.json
	[ "$stderr" = "dataspoc-tap-postgres: cannot replicate: the slot was invalidated (max_slot_wal_keep_size) (host '127.0.0.1' port $PG_PORT database 'appdb' slot 'stitch_appdb'): the WAL it needed is gone; drop it (SELECT pg_drop_replication_slot('stitch_appdb')) and run the pipeline with --full" ]
	# no replication privilege
	pg_sql -d appdb "GRANT SELECT ON customers TO plain"
	printf '{"host": "127.0.0.1", "port": %s, "user": "plain", "password": "plain-pw", "dbname": "appdb", "logical_slot": "other"}\n' "$PG_PORT" >plain.json
	run -1 --separate-stderr "$TAP" --config plain.json --properties props.json
	[[ $stderr == *"(host '127.0.0.1' port $PG_PORT database 'appdb' slot 'other')"*"REPLICATION"* ]]
	[[ $stderr != *plain-pw* ]]
}

@test "a LOG_BASED view is refused" {
	python3 -c 'import json
c = json.load(open("props.json"))
c["streams"][0]["metadata"][0]["metadata"]["is-view"] = True
json.dump(c, open("props.json", "w"))'
	run -2 --separate-stderr "$TAP" --config tap.json --properties props.json
	[ "$stderr" = "dataspoc-tap-postgres: properties 'props.json': stream 'appdb-public-customers': LOG_BASED replication is not supported for views; use FULL_TABLE or INCREMENTAL for it" ]
}

# --- through dataspoc-pipe ----------------------------------------------------

@test "dataspoc-pipe run: the first copy, then the changes, land in Parquet that DuckDB reads" {
	load helpers/parquet
	cat >"$DATASPOC_PIPE_HOME/pipelines/lb.yaml" <<-EOF
	source:
	  tap: dataspoc-tap-postgres
	  config: $BATS_TEST_TMPDIR/tap.json
	  streams: [appdb-public-customers]
	  metadata:
	    appdb-public-customers: {replication-method: LOG_BASED}
	destination:
	$(bucket_yaml)
	  path: raw
	incremental:
	  enabled: true
	EOF
	run -0 --separate-stderr dataspoc-pipe run lb
	assert_output --partial "Done! 10 records in 1 stream(s)"
	fixture_changes
	run -0 --separate-stderr dataspoc-pipe run lb
	assert_output --partial "Done! 6 records in 1 stream(s)"
	run -0 --separate-stderr dataspoc-pipe run lb
	assert_output --partial "Done! 0 records"
	run -0 pq_table_rows raw
	printf '%s\n' "$output" >rows
	[ "$(wc -l <rows)" -eq 16 ]
	# the lake's rows applied by key give the table (upsert itself is issue 27's)
	python3 -c 'import json, sys
for l in open("rows"):
    r = json.loads(l)
    print(json.dumps({"type": "RECORD", "stream": "customers", "record": {"id": int(r["id"]), "name": r["name"],
        "amount": None if r["amount"] is None else float(r["amount"]), "_sdc_deleted_at": r.get("_sdc_deleted_at")}}))' >records.jsonl
	apply records.jsonl | sed -E 's/\|([0-9]+)\.([0-9])$/|\1.\20/' >lake
	table_rows | diff -u - lake
	# --full: a new copy (the slot is there: a temporary one's snapshot), a new version
	# that replaces the lake's rows, then the changes from the new copy's point
	pg_sql -d appdb "UPDATE customers SET name = 'before-full' WHERE id = 1"
	run -0 --separate-stderr dataspoc-pipe run lb --full
	assert_output --partial "Done! 10 records in 1 stream(s)"
	pg_sql -d appdb "DELETE FROM customers WHERE id = 2"
	run -0 --separate-stderr dataspoc-pipe run lb
	assert_output --partial "Done! 1 record in 1 stream(s)"
	run -0 pq_table_rows raw
	[ "${#lines[@]}" -eq 11 ]
	assert_line --partial '"before-full"'
	run -0 pg_sql -d appdb "SELECT count(*) FROM pg_replication_slots"
	[ "$output" = 1 ]
}
