#!/bin/sh
# make demo: run the bundled sample pipeline (the built-in CSV tap on
# examples/sample/*.csv) into a local directory bucket under build/demo/,
# then say where the data landed and how to read it.
set -eu
top=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
demo=$top/build/demo
DATASPOC_PIPE_HOME=$demo/home
PATH=$top/bin:$PATH
export DATASPOC_PIPE_HOME PATH

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
  bucket: $demo/bucket
  path: raw
  compression: zstd
incremental:
  enabled: true
YAML

dataspoc-pipe run sample

first=$(find "$demo/bucket/raw" -name '*.jsonl.zst' | sort | head -n 1)
cat <<EOF

The data landed in $demo/bucket:
$(cd "$demo/bucket" && find raw .dataspoc/state -type f | sort | sed 's/^/  /')

Read it:
  zstd -dc $first | jq .
  jq . $demo/bucket/.dataspoc/state/sample/state.json
  jq . $demo/bucket/.dataspoc/manifest.json

Run it again (incremental: only rows at or after the saved bookmark):
  DATASPOC_PIPE_HOME=$DATASPOC_PIPE_HOME bin/dataspoc-pipe run sample
EOF
