#!/bin/sh
# make demo: run the bundled sample pipeline (the built-in CSV tap on
# examples/sample/*.csv) into a fresh local directory bucket under
# build/demo/ (Parquet, the default format), then show what landed with
# scripts/lake, which reads the bucket the way DataSpoc Lens does.
set -eu
top=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd)
demo=$top/build/demo
bucket=$demo/bucket
DATASPOC_PIPE_HOME=$demo/home
PATH=$top/bin:$PATH
export DATASPOC_PIPE_HOME PATH

# The commands printed at the end, relative to the top when run from there.
if [ "$(pwd -P)" = "$(CDPATH='' cd -- "$top" && pwd -P)" ]; then
	lake=scripts/lake at=build/demo/bucket pipe=bin/dataspoc-pipe home=build/demo/home
else
	lake=$top/scripts/lake at=$bucket pipe=$top/bin/dataspoc-pipe home=$DATASPOC_PIPE_HOME
fi

for tool in node jq; do
	command -v "$tool" >/dev/null 2>&1 || {
		echo "make demo: $tool is not installed: run scripts/deps" >&2
		exit 1
	}
done

# Every `make demo` starts from an empty bucket, so the rows shown are this run's.
rm -rf "$demo"
dataspoc-pipe init >/dev/null
cat >"$DATASPOC_PIPE_HOME/pipelines/sample.yaml" <<YAML
source:
  tap: dataspoc-tap-csv
  config:
    files:
      - entity: customers
        path: $top/examples/sample/customers.csv
        keys: [id]
        replication_key: updated_at
      - entity: orders
        path: $top/examples/sample/orders.csv
        keys: [id]
        replication_key: updated_at
destination:
  bucket: $bucket
  path: raw
incremental:
  enabled: true
YAML

dataspoc-pipe run sample

cat <<EOF

The data landed in $bucket:
$(cd "$bucket" && find raw .dataspoc/state .dataspoc/manifest.json -type f | sort | sed 's/^/  /')

\$ $lake $at
EOF
"$top/scripts/lake" "$bucket"
for key in $("$top/scripts/lake" "$bucket" --json | jq -r .key); do
	printf '\n$ %s %s %s -n 5\n' "$lake" "$at" "$key"
	"$top/scripts/lake" "$bucket" "$key" -n 5
done

cat <<EOF

Query it (each table is a view named by its table, and by its key: "csv/orders"):
  $lake $at --sql 'SELECT country, count(*) AS customers FROM customers GROUP BY country ORDER BY 2 DESC, 1'
  $lake $at --sql 'SELECT c.name, sum(CAST(o.amount AS DECIMAL(12,2))) AS spent FROM orders o JOIN customers c ON c.id = o.customer_id GROUP BY 1 ORDER BY 2 DESC LIMIT 5'
  $lake $at csv/orders -n 3 --json

The saved state and the manifest:
  jq . $at/.dataspoc/state/sample/state.json
  jq . $at/.dataspoc/manifest.json

Run it again (incremental: only rows at or after the saved bookmark):
  DATASPOC_PIPE_HOME=$home $pipe run sample
EOF
