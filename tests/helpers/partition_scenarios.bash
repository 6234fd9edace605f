# helpers/partition_scenarios.bash: destination.partition_by (issue #28, item 6):
# each record in the Hive folder of its own value, read back the way DataSpoc Lens
# reads it (lens, tests/helpers/lake_scenarios.bash), the record's own fields
# unchanged.  Loaded by tests/partition.bats (a local bucket) and
# tests/partition-s3.bats (s3rver).

# part_orders: a SCHEMA whose created_at is a date-time, and the records given on stdin.
part_orders() {
	echo '{"type":"SCHEMA","stream":"orders","schema":{"type":"object","properties":{"id":{"type":"integer"},"created_at":{"type":["null","string"],"format":"date-time"},"country":{},"dt":{"type":["null","string"]}}},"key_properties":["id"]}'
	singer_records orders
	echo '{"type":"STATE","value":{"at":1}}'
}

# Days from each record's own date-time (UTC), a null and an unparsable one in
# the null folder; a field named dt reads back as the tap sent it.
scenario_part_day() {
	use_tap tap-pd
	lake_pipeline pd tap-pd true 'partition_by: created_at'
	part_orders >"$FAKE_DIR/tap-pd/out" <<-'EOF'
	{"id":1,"created_at":"2024-01-31T23:30:00-02:00","country":"BR","dt":"2020-01-01"}
	{"id":2,"created_at":"2024-01-31T10:00:00Z","country":"US","dt":"2020-01-02"}
	{"id":3,"created_at":null,"country":"BR"}
	{"id":4,"country":"BR"}
	{"id":5,"created_at":"2024-01-30T01:00:00+00:00","country":"BR"}
	EOF
	run -0 --separate-stderr dataspoc-pipe run pd
	assert_output --partial "Done! 5 records in 1 stream(s)"
	bucket_files | sed -E 's/_[0-9]{8}T[0-9]{6}Z-[0-9a-z]+_[0-9]{4}\.parquet$//' | sort -u >folders
	expect_file folders <<-'EOF'
	raw/pd/orders/created_at_day=2024-01-30/orders
	raw/pd/orders/created_at_day=2024-01-31/orders
	raw/pd/orders/created_at_day=2024-02-01/orders
	raw/pd/orders/created_at_day=__HIVE_DEFAULT_PARTITION__/orders
	EOF
	LENS_HIVE=1 lens pd/orders | jq -c '{id, created_at, dt, created_at_day}' | sort >rows
	expect_file rows <<-'EOF'
	{"id":"1","created_at":"1706751000000000","dt":"2020-01-01","created_at_day":19754}
	{"id":"2","created_at":"1706695200000000","dt":"2020-01-02","created_at_day":19753}
	{"id":"3","created_at":null,"dt":null,"created_at_day":null}
	{"id":"4","created_at":null,"dt":null,"created_at_day":null}
	{"id":"5","created_at":"1706576400000000","dt":null,"created_at_day":19752}
	EOF
	manifest_table pd/orders | jq -c '.partition' >m
	expect_file m <<<'{"by":"created_at","granularity":"day","column":"created_at_day"}'
	# a second run appends, into the folders of its records
	part_orders >"$FAKE_DIR/tap-pd/out" <<<'{"id":6,"created_at":"2024-01-30T02:00:00Z"}'
	run -0 --separate-stderr dataspoc-pipe run pd
	[ "$(bucket_files | grep -c 'created_at_day=2024-01-30/')" -eq 2 ]
	[ "$(lens pd/orders | wc -l)" -eq 6 ]
	manifest_table pd/orders | jq -c '.stats.total_rows' >n
	expect_file n <<<6
}

# granularity value, JSON lines: strings, numbers, a value with '/' and '=',
# null, an object: folders of their values, percent-encoded, and the null folder.
scenario_part_value_jsonl() {
	use_tap tap-pv
	lake_pipeline pv tap-pv true 'format: jsonl' 'partition_by: {field: country, granularity: value}'
	part_orders >"$FAKE_DIR/tap-pv/out" <<-'EOF'
	{"id":1,"country":"BR"}
	{"id":2,"country":"a/b=c"}
	{"id":3,"country":7}
	{"id":4,"country":null}
	{"id":5,"country":{"x":1}}
	{"id":6,"country":"BR"}
	EOF
	run -0 --separate-stderr dataspoc-pipe run pv
	bucket_files | sed -E 's/_[0-9]{8}T[0-9]{6}Z-[0-9a-z]+_[0-9]{4}\.jsonl\.zst$//' | sort >folders
	expect_file folders <<-'EOF'
	raw/pv/orders/country_value=7/orders
	raw/pv/orders/country_value=BR/orders
	raw/pv/orders/country_value=__HIVE_DEFAULT_PARTITION__/orders
	raw/pv/orders/country_value=a%2Fb%3Dc/orders
	EOF
	bucket_cat "$(bucket_files | grep 'country_value=BR/')" | zstd -dc >br
	expect_file br <<-'EOF'
	{"id":1,"country":"BR"}
	{"id":6,"country":"BR"}
	EOF
	bucket_cat "$(bucket_files | grep '__HIVE_DEFAULT_PARTITION__/')" | zstd -dc >nulls
	expect_file nulls <<-'EOF'
	{"id":4,"country":null}
	{"id":5,"country":{"x":1}}
	EOF
	manifest_table pv/orders | jq -c '[.partition, .stats.total_rows]' >m
	expect_file m <<<'[{"by":"country","granularity":"value","column":"country_value"},6]'
}

# A snapshot pipeline partitioned by month: each run replaces the whole table,
# every folder of it; Parquet, a value read back unchanged beside its folder's.
scenario_part_snapshot() {
	use_tap tap-ps
	lake_pipeline ps tap-ps false 'partition_by:' '  field: created_at' '  granularity: month'
	part_orders >"$FAKE_DIR/tap-ps/out" <<-'EOF'
	{"id":1,"created_at":"2024-01-31T10:00:00Z","country":"a/b=c"}
	{"id":2,"created_at":"2024-02-01T10:00:00Z"}
	EOF
	run -0 --separate-stderr dataspoc-pipe run ps
	[ "$(bucket_files | wc -l)" -eq 2 ]
	part_orders >"$FAKE_DIR/tap-ps/out" <<-'EOF'
	{"id":3,"created_at":"2024-03-05T10:00:00Z","country":"a/b=c"}
	EOF
	run -0 --separate-stderr dataspoc-pipe run ps
	run -0 bucket_files
	assert_output --regexp '^raw/ps/orders/created_at_month=2024-03/orders_[^/]*_0000\.parquet$'
	LENS_HIVE=1 lens ps/orders | jq -c '{id, country, created_at_month}' >rows
	expect_file rows <<<'{"id":"3","country":"\"a/b=c\"","created_at_month":"2024-03"}'
	manifest_table ps/orders | jq -c '.stats.total_rows' >n
	expect_file n <<<1
}

# A field named as the folders would hide it: the run fails, nothing lands.
scenario_part_collision() {
	use_tap tap-pc
	lake_pipeline pc tap-pc true 'partition_by: {field: created_at, granularity: hour}'
	{
		echo '{"type":"SCHEMA","stream":"ev","schema":{"type":"object","properties":{"id":{"type":"integer"},"created_at":{"type":"string"},"created_at_hour":{"type":"integer"}}}}'
		singer_records ev <<<'{"id":1,"created_at":"2024-01-31T10:00:00Z","created_at_hour":10}'
	} >"$FAKE_DIR/tap-pc/out"
	run -1 --separate-stderr dataspoc-pipe run pc
	[[ $stderr == *"stream 'ev' has a field 'created_at_hour', the name of the folders of partition_by 'created_at' (created_at_hour=...): readers that take Hive folders as columns (DuckDB, Lens) would show the folder's value instead of the field's"* ]]
	run -0 bucket_files
	assert_output ""
}

# Changing partition_by of an incremental table: a run that would put its files
# in folders of another key beside the old ones (a table DuckDB refuses: "Hive
# partition mismatch") fails, nothing published, the state kept; --full lands
# the whole table anew in the new folders, the old ones gone, in one commit.
scenario_part_refold() {
	use_tap tap-pr
	lake_pipeline pr tap-pr true
	part_orders >"$FAKE_DIR/tap-pr/out" <<-'EOF'
	{"id":1,"created_at":"2024-01-31T10:00:00Z"}
	{"id":2,"created_at":"2024-02-01T10:00:00Z"}
	EOF
	run -0 --separate-stderr dataspoc-pipe run pr
	lake_pipeline pr tap-pr true 'partition_by: created_at'
	part_orders >"$FAKE_DIR/tap-pr/out" <<<'{"id":3,"created_at":"2024-02-02T10:00:00Z"}'
	bucket_snapshot | grep -v ' \.dataspoc/logs/' >before.snap
	run -1 --separate-stderr dataspoc-pipe run pr
	[[ $stderr == *"stream 'orders': partition_by puts its files in folders 'created_at_day=', but the table in 'raw/pr/orders' has its files in folders '_dt=', and DuckDB cannot read a table of both"*"run once with --full to land the whole table anew in the new folders"* ]]
	bucket_snapshot | grep -v ' \.dataspoc/logs/' >after.snap
	diff before.snap after.snap
	[ "$(lens pr/orders | wc -l)" -eq 2 ]
	# --full: the whole table in the new folders, the _dt= ones gone (part_orders has a field dt)
	part_orders >"$FAKE_DIR/tap-pr/out" <<-'EOF'
	{"id":1,"created_at":"2024-01-31T10:00:00Z"}
	{"id":2,"created_at":"2024-02-01T10:00:00Z"}
	{"id":3,"created_at":"2024-02-02T10:00:00Z"}
	EOF
	run -0 --separate-stderr dataspoc-pipe run pr --full
	bucket_files | sed -E 's/_[0-9]{8}T[0-9]{6}Z-[0-9a-z]+_[0-9]{4}\.parquet$//' | sort >folders
	expect_file folders <<-'EOF'
	raw/pr/orders/created_at_day=2024-01-31/orders
	raw/pr/orders/created_at_day=2024-02-01/orders
	raw/pr/orders/created_at_day=2024-02-02/orders
	EOF
	LENS_HIVE=1 lens pr/orders | jq -c '[.id, .created_at_day]' | sort >rows
	expect_file rows <<-'EOF'
	["1",19753]
	["2",19754]
	["3",19755]
	EOF
	manifest_table pr/orders | jq -c '[.partition.column, .stats.total_rows]' >m
	expect_file m <<<'["created_at_day",3]'
	# and the next incremental run appends as before
	part_orders >"$FAKE_DIR/tap-pr/out" <<<'{"id":4,"created_at":"2024-02-02T11:00:00Z"}'
	run -0 --separate-stderr dataspoc-pipe run pr
	[ "$(LENS_HIVE=1 lens pr/orders | wc -l)" -eq 4 ]
}
