#!/usr/bin/env bats
# destination.partition_by on a local bucket (tests/helpers/partition_scenarios.bash),
# and what only a local run shows: config errors, checkpoints.

load helpers/common
use_local_lake
load helpers/partition_scenarios

@test "partition: by a date-time's day (its SCHEMA says date-time): folders of the records' own UTC days, a null folder, the fields read back unchanged" {
	scenario_part_day
}

@test "partition: by value, JSON lines: percent-encoded folders, null and objects in the null folder" {
	scenario_part_value_jsonl
}

@test "partition: a snapshot by month replaces the whole table, every folder" {
	scenario_part_snapshot
}

@test "partition: a field named as the folders fails the run, nothing lands" {
	scenario_part_collision
}

@test "partition: changing partition_by: a run that would mix two folder keys fails, nothing published; --full lands the table anew in the new folders" {
	scenario_part_refold
}

@test "partition: checkpoints publish each unit's folders" {
	use_tap tap-pk
	lake_pipeline pk tap-pk true 'partition_by: {field: created_at, granularity: year}'
	printf '  checkpoint_every: 1B\n' >>"$DATASPOC_PIPE_HOME/pipelines/pk.yaml"
	{
		part_orders <<<'{"id":1,"created_at":"2023-05-01T00:00:00Z"}'
		part_orders <<<'{"id":2,"created_at":"2024-05-01T00:00:00Z"}' | tail -n +2
		part_orders <<<'{"id":3,"created_at":"2023-06-01T00:00:00Z"}' | tail -n +2
	} >"$FAKE_DIR/tap-pk/out"
	run -0 --separate-stderr dataspoc-pipe run pk
	bucket_files | sed -E 's/_[0-9]{8}T[0-9]{6}Z-[0-9a-z]+_[0-9]{4}\.parquet$//' | sort | uniq -c | awk '{print $1, $2}' >folders
	expect_file folders <<-'EOF'
	2 raw/pk/orders/created_at_year=2023/orders
	1 raw/pk/orders/created_at_year=2024/orders
	EOF
	LENS_HIVE=1 lens pk/orders | jq -c '[.id, .created_at_year]' | sort >rows
	expect_file rows <<-'EOF'
	["1","2023"]
	["2","2024"]
	["3","2023"]
	EOF
	manifest_table pk/orders | jq -c '.stats.total_rows' >n
	expect_file n <<<3
}

@test "partition: changing partition_by with checkpoints: refused at the first, nothing published; with --full the units wait for the run's end" {
	use_tap tap-pk
	lake_pipeline pk tap-pk true
	printf '  checkpoint_every: 1B\n' >>"$DATASPOC_PIPE_HOME/pipelines/pk.yaml"
	part_orders <<<'{"id":1,"created_at":"2023-05-01T00:00:00Z"}' >"$FAKE_DIR/tap-pk/out"
	run -0 --separate-stderr dataspoc-pipe run pk
	lake_pipeline pk tap-pk true 'partition_by: {field: created_at, granularity: year}'
	printf '  checkpoint_every: 1B\n' >>"$DATASPOC_PIPE_HOME/pipelines/pk.yaml"
	{
		part_orders <<<'{"id":1,"created_at":"2023-05-01T00:00:00Z"}'
		part_orders <<<'{"id":2,"created_at":"2024-05-01T00:00:00Z"}' | tail -n +2
		part_orders <<<'{"id":3,"created_at":"2023-06-01T00:00:00Z"}' | tail -n +2
	} >"$FAKE_DIR/tap-pk/out"
	bucket_snapshot | grep -v ' \.dataspoc/logs/' >before.snap
	run -1 --separate-stderr dataspoc-pipe run pk
	[[ $stderr == *"stream 'orders': partition_by puts its files in folders 'created_at_year='"* ]]
	bucket_snapshot | grep -v ' \.dataspoc/logs/' >after.snap
	diff before.snap after.snap
	run -0 --separate-stderr dataspoc-pipe run pk --full
	[[ $stderr == *"checkpoint 1 waits: a table moves to the folders of its new partition_by only when the run ends"* ]]
	bucket_files | sed -E 's/_[0-9]{8}T[0-9]{6}Z-[0-9a-z]+_[0-9]{4}\.parquet$//' | sort | uniq -c | awk '{print $1, $2}' >folders
	expect_file folders <<-'EOF'
	2 raw/pk/orders/created_at_year=2023/orders
	1 raw/pk/orders/created_at_year=2024/orders
	EOF
	[ "$(LENS_HIVE=1 lens pk/orders | wc -l)" -eq 3 ]
	manifest_table pk/orders | jq -c '.stats.total_rows' >n
	expect_file n <<<3
}

@test "partition: config: a bad granularity, a folder-breaking field" {
	use_tap tap-pu
	lake_pipeline pu tap-pu true 'partition_by: {field: created_at, granularity: week}'
	run -2 --separate-stderr dataspoc-pipe run pu
	[[ $stderr == *"destination.partition_by.granularity must be day, hour, month, year or value, not 'week'"* ]]
	lake_pipeline pu tap-pu true 'partition_by: a/b'
	run -2 --separate-stderr dataspoc-pipe run pu
	[[ $stderr == *"destination.partition_by must be _extraction_date or a record field whose name can name a folder"* ]]
	# the Python tool's own line, and config.yaml's defaults: as before, dt=
	lake_pipeline pu tap-pu true 'partition_by: _extraction_date'
	printf 'defaults:\n  compression: zstd\n  partition_by: _extraction_date\n' >"$DATASPOC_PIPE_HOME/config.yaml"
	singer_records t <<<'{"id":1}' >"$FAKE_DIR/tap-pu/out"
	run -0 --separate-stderr dataspoc-pipe run pu
	run -0 bucket_files
	assert_output --regexp '^raw/pu/t/dt=[0-9-]{10}/t_[^/]*_0000\.parquet$'
	manifest_table pu/t | jq -c '.partition' >m
	expect_file m <<<'{"by":"_extraction_date","granularity":"day","column":"dt"}'
}

@test "partition: the manifest names the date folder's key: _dt for a stream with a field dt" {
	use_tap tap-pm
	lake_pipeline pm tap-pm true
	singer_records t <<<'{"id":1,"dt":"2020-01-01"}' >"$FAKE_DIR/tap-pm/out"
	run -0 --separate-stderr dataspoc-pipe run pm
	manifest_table pm/t | jq -c '.partition' >m
	expect_file m <<<'{"by":"_extraction_date","granularity":"day","column":"_dt"}'
}

@test "partition: a run that lands no record of a partitioned stream changes nothing, and the manifest keeps its partition: the next run lands as before" {
	use_tap tap-pe
	lake_pipeline pe tap-pe true 'partition_by: created_at'
	part_orders >"$FAKE_DIR/tap-pe/out" <<<'{"id":1,"created_at":"2024-01-31T10:00:00Z"}'
	run -0 --separate-stderr dataspoc-pipe run pe
	bucket_files >before
	part_orders >"$FAKE_DIR/tap-pe/out" </dev/null
	run -0 --separate-stderr dataspoc-pipe run pe
	bucket_files >after
	diff before after
	manifest_table pe/orders | jq -c '.partition' >m
	expect_file m <<<'{"by":"created_at","granularity":"day","column":"created_at_day"}'
	part_orders >"$FAKE_DIR/tap-pe/out" <<<'{"id":2,"created_at":"2024-02-01T10:00:00Z"}'
	run -0 --separate-stderr dataspoc-pipe run pe
	[ "$(lens pe/orders | wc -l)" -eq 2 ]
}

load helpers/upsert_scenarios
load helpers/partition_upsert_scenarios

@test "partition upsert: a key whose value moves leaves its old folder in the same commit; deletes, left-out properties (the partition field too), unchanged runs" {
	scenario_part_upsert_moves
}

@test "partition upsert: null and unparsable values in the null folder, a key leaving and entering it; --full rebuilds every folder" {
	scenario_part_upsert_null_full
}

@test "partition upsert: checkpoints merge each unit; a key moved between units ends in one folder" {
	scenario_part_upsert_checkpoints
}

@test "partition upsert: compact NAME STREAM merges a partitioned append-only table by key into the folders of its rows' values; again, nothing changes" {
	scenario_part_upsert_compact
}

@test "partition upsert: a snapshot pipeline merges by key too; a moved key is in its new folder only" {
	scenario_part_upsert_snapshot
}

@test "partition upsert: a key sent thrice in a run, its value moving between folders and back: its last record wins, in that record's folder" {
	scenario_part_upsert_moves_in_run
}

@test "partition upsert: a run of more than 10,000 values of partition_by fails, nothing published" {
	use_tap tap-pl
	lake_pipeline pl tap-pl true 'partition_by: {field: v, granularity: value}' 'load_method: upsert'
	{
		echo '{"type":"SCHEMA","stream":"many","schema":{"type":"object","properties":{"id":{"type":"integer"},"v":{"type":"integer"}}},"key_properties":["id"]}'
		seq 1 10001 | awk '{printf "{\"type\":\"RECORD\",\"stream\":\"many\",\"record\":{\"id\":%d,\"v\":%d}}\n", $1, $1}'
	} >"$FAKE_DIR/tap-pl/out"
	run -1 --separate-stderr dataspoc-pipe run pl
	[[ $stderr == *"stream 'many' has more than 10000 values of partition_by 'v' (v_value) in one run"* ]]
	run -0 bucket_files
	assert_output ""
}

@test "partition: --full with checkpoints, the changed table's records after the first checkpoint (another stream's first): the table is laid out anew, the run succeeds" {
	use_tap tap-pf
	lake_pipeline pf tap-pf true
	printf '  checkpoint_every: 1B\n' >>"$DATASPOC_PIPE_HOME/pipelines/pf.yaml"
	other() {
		echo '{"type":"SCHEMA","stream":"other","schema":{"type":"object","properties":{"k":{"type":"integer"}}},"key_properties":["k"]}'
		singer_records other
		echo '{"type":"STATE","value":{"at":1}}'
	}
	part_orders <<<'{"id":1,"created_at":"2023-05-01T00:00:00Z"}' >"$FAKE_DIR/tap-pf/out"
	run -0 --separate-stderr dataspoc-pipe run pf
	lake_pipeline pf tap-pf true 'partition_by: {field: created_at, granularity: year}'
	printf '  checkpoint_every: 1B\n' >>"$DATASPOC_PIPE_HOME/pipelines/pf.yaml"
	{
		other <<<'{"k":1}'
		part_orders <<<'{"id":1,"created_at":"2023-05-01T00:00:00Z"}'
		part_orders <<<'{"id":2,"created_at":"2024-05-01T00:00:00Z"}' | tail -n +2
	} >"$FAKE_DIR/tap-pf/out"
	run -0 --separate-stderr dataspoc-pipe run pf --full
	bucket_files | grep orders | sed -E 's/_[0-9]{8}T[0-9]{6}Z-[0-9a-z]+_[0-9]{4}\.parquet$//' | sort >folders
	expect_file folders <<-'EOF'
	raw/pf/orders/created_at_year=2023/orders
	raw/pf/orders/created_at_year=2024/orders
	EOF
	LENS_HIVE=1 lens pf/orders | jq -c '[.id, .created_at_year]' | sort >rows
	expect_file rows <<-'EOF'
	["1","2023"]
	["2","2024"]
	EOF
	manifest_table pf/orders | jq -c '[.partition.column, .stats.total_rows]' >m
	expect_file m <<<'["created_at_year",2]'
}

@test "partition upsert: --full with checkpoints, the table's records after another stream's checkpoint, partition_by changed: rebuilt in the new folders" {
	scenario_part_upsert_full_late
}

@test "partition: an upsert table of a stream with a field dt: its files in _dt= as pipe-sink's, its dt read back as the tap sent it" {
	use_tap tap-pdt
	lake_pipeline pdt tap-pdt true 'load_method: upsert'
	part_orders >"$FAKE_DIR/tap-pdt/out" <<-'EOF'
	{"id":1,"created_at":"2024-01-31T10:00:00Z","dt":"2020-01-01"}
	{"id":2,"created_at":"2024-02-01T10:00:00Z","dt":"2020-01-02"}
	EOF
	run -0 --separate-stderr dataspoc-pipe run pdt
	part_orders >"$FAKE_DIR/tap-pdt/out" <<<'{"id":2,"created_at":"2024-02-01T11:00:00Z","dt":"2020-01-03"}'
	run -0 --separate-stderr dataspoc-pipe run pdt
	LENS_HIVE=1 lens pdt/orders | jq -c '[.id, .dt]' | sort >rows
	expect_file rows <<-'EOF'
	["1","2020-01-01"]
	["2","2020-01-03"]
	EOF
	bucket_files | grep -c '/_dt=' >n
	bucket_files | grep -c '/dt=' >>n || true
	expect_file n <<-'EOF'
	1
	0
	EOF
	manifest_table pdt/orders | jq -c '.partition.column' >m
	expect_file m <<<'"_dt"'
}

@test "partition upsert: kill -9 at random moments of runs whose keys move folders: the table before or after the run, each key once in its value's folder; the next run recovers" {
	scenario_part_upsert_kill
}

@test "partition: a first run that lands no record of a partitioned stream, then one that does: it lands in the folders of partition_by" {
	use_tap tap-p0
	lake_pipeline p0 tap-p0 true 'partition_by: created_at'
	part_orders </dev/null >"$FAKE_DIR/tap-p0/out"
	run -0 --separate-stderr dataspoc-pipe run p0
	part_orders <<<'{"id":1,"created_at":"2024-01-31T10:00:00Z"}' >"$FAKE_DIR/tap-p0/out"
	run -0 --separate-stderr dataspoc-pipe run p0
	LENS_HIVE=1 lens p0/orders | jq -c '[.id, .created_at_day]' >rows
	expect_file rows <<<'["1",19753]'
	manifest_table p0/orders | jq -c '.partition.column' >m
	expect_file m <<<'"created_at_day"'
}

@test "partition: a stream without partition_by whose records come to have a field dt (date folders _dt=, the table's dt=): refused, naming the field, nothing published; --full lands it anew in _dt=" {
	use_tap tap-pdn
	lake_pipeline pdn tap-pdn true
	{
		echo '{"type":"SCHEMA","stream":"orders","schema":{"type":"object","properties":{"id":{"type":"integer"}}},"key_properties":["id"]}'
		singer_records orders <<<'{"id":1}'
		echo '{"type":"STATE","value":{"at":0}}'
	} >"$FAKE_DIR/tap-pdn/out"
	run -0 --separate-stderr dataspoc-pipe run pdn
	part_orders <<<'{"id":2,"created_at":"2024-01-31T10:00:00Z","dt":"2020-01-01"}' >"$FAKE_DIR/tap-pdn/out"
	bucket_snapshot | grep -v ' \.dataspoc/logs/' >before.snap
	run -1 --separate-stderr dataspoc-pipe run pdn
	[[ $stderr == *"stream 'orders': its records now have a field 'dt', so its files go in date folders '_dt=', but the table in 'raw/pdn/orders' has its files in folders 'dt='"*"run once with --full"* ]]
	bucket_snapshot | grep -v ' \.dataspoc/logs/' >after.snap
	diff before.snap after.snap
	part_orders >"$FAKE_DIR/tap-pdn/out" <<-'EOF'
	{"id":1,"created_at":"2024-01-30T10:00:00Z","dt":"2020-01-01"}
	{"id":2,"created_at":"2024-01-31T10:00:00Z","dt":"2020-01-02"}
	EOF
	run -0 --separate-stderr dataspoc-pipe run pdn --full
	LENS_HIVE=1 lens pdn/orders | jq -c '[.id, .dt]' | sort >rows
	expect_file rows <<-'EOF'
	["1","2020-01-01"]
	["2","2020-01-02"]
	EOF
	bucket_files | sed -E 's|/[^/]*$||; s|=.*||' | sort -u >folders
	expect_file folders <<<'raw/pdn/orders/_dt'
}

@test "partition: changing partition_by while the manifest is unreadable: the table's folders tell, the run is refused, nothing published; --full lands it anew, the old folders gone" {
	use_tap tap-pb
	lake_pipeline pb tap-pb true 'partition_by: created_at'
	part_orders <<<'{"id":1,"created_at":"2024-01-31T10:00:00Z"}' >"$FAKE_DIR/tap-pb/out"
	run -0 --separate-stderr dataspoc-pipe run pb
	printf 'manifest: see the wiki\n' | bucket_put .dataspoc/manifest.json
	lake_pipeline pb tap-pb true 'partition_by: {field: created_at, granularity: month}'
	part_orders <<<'{"id":2,"created_at":"2024-02-01T10:00:00Z"}' >"$FAKE_DIR/tap-pb/out"
	bucket_snapshot | grep -v ' \.dataspoc/logs/' >before.snap
	run -1 --separate-stderr dataspoc-pipe run pb
	[[ $stderr == *"stream 'orders': partition_by puts its files in folders 'created_at_month=', but the table in 'raw/pb/orders' has its files in folders 'created_at_day='"* ]]
	bucket_snapshot | grep -v ' \.dataspoc/logs/' >after.snap
	diff before.snap after.snap
	part_orders >"$FAKE_DIR/tap-pb/out" <<-'EOF'
	{"id":1,"created_at":"2024-01-31T10:00:00Z"}
	{"id":2,"created_at":"2024-02-01T10:00:00Z"}
	EOF
	run -0 --separate-stderr dataspoc-pipe run pb --full
	bucket_files | sed -E 's|/[^/]*$||' | sort -u >folders
	expect_file folders <<-'EOF'
	raw/pb/orders/created_at_month=2024-01
	raw/pb/orders/created_at_month=2024-02
	EOF
	LENS_HIVE=1 lens pb/orders | jq -c '[.id, .created_at_month]' | sort >rows
	expect_file rows <<-'EOF'
	["1","2024-01"]
	["2","2024-02"]
	EOF
}
