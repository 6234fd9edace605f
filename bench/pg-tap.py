#!/usr/bin/python3
# bench/pg-tap.py: a Singer tap on one PostgreSQL table, for bench/tap-overhead.
# It writes as singer-python's write_message() does (one write and one flush
# per message) and reads as singer-io's tap-postgres does a FULL_TABLE sync (a
# named server-side cursor of 20,000 rows, SCHEMA, ACTIVATE_VERSION, RECORDs
# with version and time_extracted, a STATE every 1,000 records).  Run it with
# Debian's /usr/bin/python3 (python3-psycopg2).
#
#   pg-tap.py --config FILE [--state FILE] [--properties FILE | --catalog FILE]
#
# FILE: {"host", "port", "user", "dbname", "table"}; the table's columns are
# id integer, name text, amount numeric, created timestamptz, doc jsonb.
import argparse
import datetime
import decimal
import json
import sys

import psycopg2
import psycopg2.extras

SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": ["integer"]},
        "name": {"type": ["null", "string"]},
        "amount": {"type": ["null", "number"]},
        "created": {"type": ["null", "string"], "format": "date-time"},
        "doc": {"type": ["null", "object", "array"]},
    },
}


def write_message(msg):
    # singer-python: format_message() + "\n", then flush
    sys.stdout.write(json.dumps(msg, default=encode) + "\n")
    sys.stdout.flush()


def encode(v):
    if isinstance(v, decimal.Decimal):
        return float(v)
    raise TypeError(type(v))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-c", "--config", required=True)
    ap.add_argument("-s", "--state")
    ap.add_argument("-p", "--properties")
    ap.add_argument("--catalog")
    ap.add_argument("-d", "--discover", action="store_true")
    args = ap.parse_args()
    with open(args.config) as f:
        cfg = json.load(f)
    table = cfg["table"]
    stream = "%s-public-%s" % (cfg["dbname"], table)
    if args.discover:
        json.dump({"streams": [{"tap_stream_id": stream, "stream": table, "schema": SCHEMA,
                                "metadata": [{"breadcrumb": [], "metadata": {
                                    "table-key-properties": ["id"]}}]}]}, sys.stdout)
        sys.stdout.write("\n")
        return
    conn = psycopg2.connect(host=cfg["host"], port=cfg["port"], user=cfg["user"],
                            dbname=cfg["dbname"])
    version = int(datetime.datetime.now(datetime.timezone.utc).timestamp() * 1000)
    write_message({"type": "SCHEMA", "stream": stream, "schema": SCHEMA,
                   "key_properties": ["id"]})
    write_message({"type": "ACTIVATE_VERSION", "stream": stream, "version": version})
    state = {"currently_syncing": stream, "bookmarks": {stream: {"version": version}}}
    n = 0
    with conn.cursor(name="pipelinewise", cursor_factory=psycopg2.extras.DictCursor) as cur:
        cur.itersize = 20000
        cur.execute('SELECT id, name, amount, created, doc FROM "public"."%s" ORDER BY id' % table)
        for row in cur:
            extracted = datetime.datetime.now(datetime.timezone.utc).isoformat()
            rec = {}
            for k in ("id", "name", "amount", "created", "doc"):
                v = row[k]
                if isinstance(v, datetime.datetime):
                    v = v.isoformat()
                rec[k] = v
            write_message({"type": "RECORD", "stream": stream, "record": rec,
                           "version": version, "time_extracted": extracted})
            n += 1
            if n % 1000 == 0:
                state["bookmarks"][stream]["xmin"] = n
                write_message({"type": "STATE", "value": state})
    conn.close()
    state["currently_syncing"] = None
    state["bookmarks"][stream].pop("xmin", None)
    write_message({"type": "ACTIVATE_VERSION", "stream": stream, "version": version})
    write_message({"type": "STATE", "value": state})


if __name__ == "__main__":
    main()
