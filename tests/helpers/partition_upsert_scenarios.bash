# partition_upsert_scenarios.bash: destination.partition_by with load_method:
# upsert (issue #28 item 6): a key stays in exactly one folder, that of its own
# value, across runs; read back as DataSpoc Lens reads the table
# (read_parquet('<location>/**/*.parquet', hive_partitioning=true,
# union_by_name=true)), the folder column kept (LENS_HIVE=1).  Loaded by
# tests/partition.bats, tests/partition-s3.bats and tests/upsert-azure.bats,
# after tests/helpers/partition_scenarios.bash.

# pu_sends TAP: a SCHEMA (updated_at a date-time, big a column a LOG_BASED
# update may leave out), the records on stdin, a STATE.
pu_sends() {
	{
		echo '{"type":"SCHEMA","stream":"orders","schema":{"type":"object","properties":{"id":{"type":"integer"},"updated_at":{"type":["null","string"],"format":"date-time"},"name":{"type":["null","string"]},"big":{"type":["null","string"]},"_sdc_deleted_at":{"type":["null","string"],"format":"date-time"}}},"key_properties":["id"]}'
		singer_records orders
		echo '{"type":"STATE","value":{"at":1}}'
	} >"$FAKE_DIR/$1/out"
}

# pu_rows TABLE: each row as Lens reads it, its folder's day beside its own
# (both days since 1970: they must be equal), sorted by id.
pu_rows() {
	LENS_HIVE=1 lens "$1" | jq -c '{id, name, big, day: (if .updated_at then (.updated_at | tonumber / 86400000000 | floor) else null end), folder: .updated_at_day}' | sort -t'"' -k4,4n
}

# pu_folders: the folders of the table's files, with how many files each.
pu_folders() {
	bucket_files | sed -E 's|/[^/]*\.parquet$||' | sort | uniq -c | awk '{print $1, $2}'
}

# A key whose value moves to another day leaves its old folder in the same
# commit; a delete removes the key from whichever folder it is in; a record
# that leaves out a property (the partition field too) keeps the table's
# value, and its folder; a run with nothing new, or the same records again,
# changes nothing.
scenario_part_upsert_moves() {
	use_tap tap-pu
	lake_pipeline pu tap-pu true 'partition_by: updated_at' 'load_method: upsert'
	pu_sends tap-pu <<-'EOF'
	{"id":1,"updated_at":"2024-01-01T10:00:00Z","name":"a","big":"B1","_sdc_deleted_at":null}
	{"id":2,"updated_at":"2024-01-01T11:00:00Z","name":"b","big":"B2","_sdc_deleted_at":null}
	{"id":3,"updated_at":"2024-01-02T10:00:00Z","name":"c","big":"B3","_sdc_deleted_at":null}
	{"id":4,"updated_at":null,"name":"d","big":"B4","_sdc_deleted_at":null}
	{"id":5,"updated_at":"2024-01-02T12:00:00Z","name":"e","big":"B5","_sdc_deleted_at":null}
	EOF
	run -0 --separate-stderr dataspoc-pipe run pu
	pu_folders >folders
	expect_file folders <<-'EOF'
	1 raw/pu/orders/updated_at_day=2024-01-01
	1 raw/pu/orders/updated_at_day=2024-01-02
	1 raw/pu/orders/updated_at_day=__HIVE_DEFAULT_PARTITION__
	EOF
	# 1 moves to a later day, leaving big out (TOAST); 2 leaves out its
	# updated_at: it keeps it, and its folder; 3 is deleted; 4 moves out of
	# the null folder; 5 is sent again unchanged
	pu_sends tap-pu <<-'EOF'
	{"id":1,"updated_at":"2024-01-03T09:00:00Z","name":"a2","_sdc_deleted_at":null}
	{"id":2,"name":"b2","big":"B2","_sdc_deleted_at":null}
	{"id":3,"_sdc_deleted_at":"2024-01-03T00:00:00Z"}
	{"id":4,"updated_at":"2024-01-02T08:00:00Z","name":"d2","big":"B4","_sdc_deleted_at":null}
	{"id":5,"updated_at":"2024-01-02T12:00:00Z","name":"e","big":"B5","_sdc_deleted_at":null}
	EOF
	run -0 --separate-stderr dataspoc-pipe run pu
	pu_folders >folders
	expect_file folders <<-'EOF'
	1 raw/pu/orders/updated_at_day=2024-01-01
	1 raw/pu/orders/updated_at_day=2024-01-02
	1 raw/pu/orders/updated_at_day=2024-01-03
	EOF
	pu_rows pu/orders >rows
	expect_file rows <<-'EOF'
	{"id":"1","name":"a2","big":"B1","day":19725,"folder":19725}
	{"id":"2","name":"b2","big":"B2","day":19723,"folder":19723}
	{"id":"4","name":"d2","big":"B4","day":19724,"folder":19724}
	{"id":"5","name":"e","big":"B5","day":19724,"folder":19724}
	EOF
	run -0 distinct_ok pu/orders
	assert_output "4 4"
	manifest_table pu/orders | jq -c '{load_method, key_properties, rows: .stats.total_rows, partition}' >m
	expect_file m <<<'{"load_method":"upsert","key_properties":["id"],"rows":4,"partition":{"by":"updated_at","granularity":"day","column":"updated_at_day"}}'
	# a run with no record: not a file changes
	bucket_files >before
	pu_sends tap-pu </dev/null
	run -0 --separate-stderr dataspoc-pipe run pu
	bucket_files >after
	diff before after
	# the same records again: the same table
	pu_sends tap-pu <<-'EOF'
	{"id":1,"updated_at":"2024-01-03T09:00:00Z","name":"a2","big":"B1","_sdc_deleted_at":null}
	{"id":2,"updated_at":"2024-01-01T11:00:00Z","name":"b2","big":"B2","_sdc_deleted_at":null}
	EOF
	run -0 --separate-stderr dataspoc-pipe run pu
	pu_rows pu/orders >rows2
	diff rows rows2
	pu_folders | awk '{print $2}' >folders
	expect_file folders <<-'EOF'
	raw/pu/orders/updated_at_day=2024-01-01
	raw/pu/orders/updated_at_day=2024-01-02
	raw/pu/orders/updated_at_day=2024-01-03
	EOF
	manifest_table pu/orders | jq -c '.stats.total_rows' >n
	expect_file n <<<4
}

# A value that is null or no date-time puts the row in the null folder; the
# key leaves it when its value becomes a day, and comes back when it is null
# again; --full rebuilds the table from the run's records alone.
scenario_part_upsert_null_full() {
	use_tap tap-pn
	lake_pipeline pn tap-pn true 'partition_by: {field: at, granularity: day}' 'load_method: upsert'
	{
		echo '{"type":"SCHEMA","stream":"ev","schema":{"type":"object","properties":{"id":{"type":"integer"},"at":{"type":["null","string"]}}},"key_properties":["id"]}'
		singer_records ev <<-'EOF'
		{"id":1,"at":"2024-05-01T10:00:00Z"}
		{"id":2,"at":"no date"}
		{"id":3,"at":null}
		EOF
	} >"$FAKE_DIR/tap-pn/out"
	run -0 --separate-stderr dataspoc-pipe run pn
	{
		echo '{"type":"SCHEMA","stream":"ev","schema":{"type":"object","properties":{"id":{"type":"integer"},"at":{"type":["null","string"]}}},"key_properties":["id"]}'
		singer_records ev <<-'EOF'
		{"id":1,"at":null}
		{"id":2,"at":"2024-05-02"}
		EOF
	} >"$FAKE_DIR/tap-pn/out"
	run -0 --separate-stderr dataspoc-pipe run pn
	LENS_HIVE=1 lens pn/ev | jq -c '[.id, .at, .at_day]' | sort >rows
	expect_file rows <<-'EOF'
	["1",null,null]
	["2","2024-05-02",19845]
	["3",null,null]
	EOF
	pu_folders | awk '{print $2}' >folders
	expect_file folders <<-'EOF'
	raw/pn/ev/at_day=2024-05-02
	raw/pn/ev/at_day=__HIVE_DEFAULT_PARTITION__
	EOF
	# --full: the run's records alone, in their folders
	{
		echo '{"type":"SCHEMA","stream":"ev","schema":{"type":"object","properties":{"id":{"type":"integer"},"at":{"type":["null","string"]}}},"key_properties":["id"]}'
		singer_records ev <<<'{"id":9,"at":"2024-06-01T00:00:00Z"}'
	} >"$FAKE_DIR/tap-pn/out"
	run -0 --separate-stderr dataspoc-pipe run --full pn
	LENS_HIVE=1 lens pn/ev | jq -c '[.id, .at, .at_day]' >rows
	expect_file rows <<<'["9","2024-06-01T00:00:00Z",19875]'
	pu_folders | awk '{print $2}' >folders
	expect_file folders <<<'raw/pn/ev/at_day=2024-06-01'
	manifest_table pn/ev | jq -c '.stats.total_rows' >n
	expect_file n <<<1
	# another partition_by: refused (two Hive keys in one table), until --full
	lake_pipeline pn tap-pn true 'partition_by: {field: at, granularity: month}' 'load_method: upsert'
	bucket_files >before
	run -1 --separate-stderr dataspoc-pipe run pn
	[[ $stderr == *"stream 'ev': its table 'raw/pn/ev' holds 1 file(s) in folders of another layout ('at_day=2024-06-01'): partition_by changed since they landed; run once with --full"* ]]
	bucket_files >after
	diff before after
	run -0 --separate-stderr dataspoc-pipe run --full pn
	pu_folders | awk '{print $2}' >folders
	expect_file folders <<<'raw/pn/ev/at_month=2024-06'
}

# Checkpoints: each unit is merged whole; a key that moves between units
# of a run ends in one folder.
scenario_part_upsert_checkpoints() {
	use_tap tap-pk
	lake_pipeline pk tap-pk true 'partition_by: {field: updated_at, granularity: month}' 'load_method: upsert'
	printf '  checkpoint_every: 1B\n' >>"$DATASPOC_PIPE_HOME/pipelines/pk.yaml"
	{
		pu_sends tap-pk <<<'{"id":1,"updated_at":"2024-01-05T00:00:00Z","name":"a","big":"x","_sdc_deleted_at":null}'
		cat "$FAKE_DIR/tap-pk/out"
		pu_sends tap-pk <<<'{"id":2,"updated_at":"2024-01-06T00:00:00Z","name":"b","big":"y","_sdc_deleted_at":null}'
		tail -n +2 "$FAKE_DIR/tap-pk/out"
		pu_sends tap-pk <<<'{"id":1,"updated_at":"2024-03-05T00:00:00Z","name":"a2","_sdc_deleted_at":null}'
		tail -n +2 "$FAKE_DIR/tap-pk/out"
	} >"$BATS_TEST_TMPDIR/out"
	mv "$BATS_TEST_TMPDIR/out" "$FAKE_DIR/tap-pk/out"
	run -0 --separate-stderr dataspoc-pipe run pk
	LENS_HIVE=1 lens pk/orders | jq -c '[.id, .name, .big, .updated_at_month]' | sort >rows
	expect_file rows <<-'EOF'
	["1","a2","x","2024-03"]
	["2","b","y","2024-01"]
	EOF
	pu_folders | awk '{print $2}' >folders
	expect_file folders <<-'EOF'
	raw/pk/orders/updated_at_month=2024-01
	raw/pk/orders/updated_at_month=2024-03
	EOF
	manifest_table pk/orders | jq -c '.stats.total_rows' >n
	expect_file n <<<2
}

# compact NAME STREAM: a partitioned table landed append-only (a key in two
# folders), then upsert: compact keeps each key's last version, in the folder
# of its own value; a second compact changes nothing.
scenario_part_upsert_compact() {
	use_tap tap-pc2
	lake_pipeline pc2 tap-pc2 true 'partition_by: updated_at'
	pu_sends tap-pc2 <<-'EOF'
	{"id":1,"updated_at":"2024-01-01T10:00:00Z","name":"a","big":"x","_sdc_deleted_at":null}
	{"id":2,"updated_at":"2024-01-02T10:00:00Z","name":"b","big":"y","_sdc_deleted_at":null}
	EOF
	run -0 --separate-stderr dataspoc-pipe run pc2
	pu_sends tap-pc2 <<-'EOF'
	{"id":1,"updated_at":"2024-01-03T10:00:00Z","name":"a2","big":"x","_sdc_deleted_at":null}
	EOF
	run -0 --separate-stderr dataspoc-pipe run pc2
	[ "$(lens pc2/orders | wc -l)" -eq 3 ]
	lake_pipeline pc2 tap-pc2 true 'partition_by: updated_at' 'load_method: upsert'
	run -0 --separate-stderr dataspoc-pipe compact pc2 orders
	pu_rows pc2/orders >rows
	expect_file rows <<-'EOF'
	{"id":"1","name":"a2","big":"x","day":19725,"folder":19725}
	{"id":"2","name":"b","big":"y","day":19724,"folder":19724}
	EOF
	pu_folders | awk '{print $2}' >folders
	expect_file folders <<-'EOF'
	raw/pc2/orders/updated_at_day=2024-01-02
	raw/pc2/orders/updated_at_day=2024-01-03
	EOF
	bucket_files >before
	run -0 --separate-stderr dataspoc-pipe compact pc2 orders
	bucket_files >after
	diff before after
	# and runs merge on
	pu_sends tap-pc2 <<<'{"id":2,"updated_at":"2024-01-03T11:00:00Z","name":"b2","big":"y","_sdc_deleted_at":null}'
	run -0 --separate-stderr dataspoc-pipe run pc2
	pu_rows pc2/orders >rows
	expect_file rows <<-'EOF'
	{"id":"1","name":"a2","big":"x","day":19725,"folder":19725}
	{"id":"2","name":"b2","big":"y","day":19725,"folder":19725}
	EOF
	pu_folders | awk '{print $2}' >folders
	expect_file folders <<<'raw/pc2/orders/updated_at_day=2024-01-03'
}

# A snapshot pipeline (incremental: false) with upsert: its runs merge by key
# as an incremental one's do; a key whose value moved is in its new folder only.
scenario_part_upsert_snapshot() {
	use_tap tap-ps2
	lake_pipeline ps2 tap-ps2 false 'partition_by: updated_at' 'load_method: upsert'
	pu_sends tap-ps2 <<-'EOF'
	{"id":1,"updated_at":"2024-01-01T10:00:00Z","name":"a","big":"B1","_sdc_deleted_at":null}
	{"id":2,"updated_at":"2024-01-02T10:00:00Z","name":"b","big":"B2","_sdc_deleted_at":null}
	EOF
	run -0 --separate-stderr dataspoc-pipe run ps2
	pu_sends tap-ps2 <<<'{"id":1,"updated_at":"2024-01-03T10:00:00Z","name":"a2","_sdc_deleted_at":null}'
	run -0 --separate-stderr dataspoc-pipe run ps2
	pu_rows ps2/orders >rows
	expect_file rows <<-'EOF'
	{"id":"1","name":"a2","big":"B1","day":19725,"folder":19725}
	{"id":"2","name":"b","big":"B2","day":19724,"folder":19724}
	EOF
	pu_folders | awk '{print $2}' >folders
	expect_file folders <<-'EOF'
	raw/ps2/orders/updated_at_day=2024-01-02
	raw/ps2/orders/updated_at_day=2024-01-03
	EOF
}

# pm_tickets: the tickets' SCHEMA and the records on stdin run through pipeline
# pm; its rows as Lens reads them, the folder beside, sorted into rows.
pm_tickets() {
	{
		echo '{"type":"SCHEMA","stream":"tickets","schema":{"type":"object","properties":{"id":{"type":"integer"},"status":{"type":["null","string"]},"n":{"type":["null","integer"]}}},"key_properties":["id"]}'
		singer_records tickets
	} >"$FAKE_DIR/tap-pm/out"
	run -0 --separate-stderr dataspoc-pipe run pm
	LENS_HIVE=1 lens pm/tickets | jq -c '[.id, .status, .n, .status_value]' | sort >rows
}

# A key sent more than once in a run, its value moving between folders and
# back (open, closed, open): its last record wins, whichever folder's file
# pipe-sink wrote each into; the table holds it once, in that record's folder.
scenario_part_upsert_moves_in_run() {
	use_tap tap-pm
	lake_pipeline pm tap-pm true 'partition_by: {field: status, granularity: value}' 'load_method: upsert'
	pm_tickets <<-'EOF'
	{"id":1,"status":"open","n":1}
	{"id":2,"status":"closed","n":1}
	{"id":1,"status":"closed","n":2}
	{"id":1,"status":"open","n":3}
	{"id":3,"status":"closed","n":1}
	{"id":3,"status":"open","n":2}
	{"id":3,"status":"closed","n":3}
	EOF
	expect_file rows <<-'EOF'
	["1","open","3","open"]
	["2","closed","1","closed"]
	["3","closed","3","closed"]
	EOF
	# and again in a later run, the table holding them
	pm_tickets <<-'EOF'
	{"id":2,"status":"open","n":2}
	{"id":2,"status":"closed","n":3}
	{"id":1,"status":"closed","n":4}
	{"id":1,"status":"open","n":5}
	EOF
	expect_file rows <<-'EOF'
	["1","open","5","open"]
	["2","closed","3","closed"]
	["3","closed","3","closed"]
	EOF
	manifest_table pm/tickets | jq -c '.stats.total_rows' >n
	expect_file n <<<3
}

# --full with checkpoints, the upsert table's records after the first
# checkpoint (another stream's published first), its partition_by changed:
# the table is rebuilt from the run's records, in the new folders.
scenario_part_upsert_full_late() {
	use_tap tap-pfl
	lake_pipeline pfl tap-pfl true 'partition_by: {field: updated_at, granularity: month}' 'load_method: upsert'
	printf '  checkpoint_every: 1B\n' >>"$DATASPOC_PIPE_HOME/pipelines/pfl.yaml"
	pu_sends tap-pfl <<-'EOF'
	{"id":1,"updated_at":"2024-01-05T00:00:00Z","name":"a","big":"x","_sdc_deleted_at":null}
	{"id":2,"updated_at":"2024-02-05T00:00:00Z","name":"b","big":"y","_sdc_deleted_at":null}
	EOF
	run -0 --separate-stderr dataspoc-pipe run pfl
	lake_pipeline pfl tap-pfl true 'partition_by: {field: updated_at, granularity: year}' 'load_method: upsert'
	printf '  checkpoint_every: 1B\n' >>"$DATASPOC_PIPE_HOME/pipelines/pfl.yaml"
	{
		echo '{"type":"SCHEMA","stream":"other","schema":{"type":"object","properties":{"k":{"type":"integer"}}},"key_properties":["k"]}'
		singer_records other <<<'{"k":1}'
		echo '{"type":"STATE","value":{"at":0}}'
		pu_sends tap-pfl <<<'{"id":1,"updated_at":"2024-03-05T00:00:00Z","name":"a2","big":"x","_sdc_deleted_at":null}'
		cat "$FAKE_DIR/tap-pfl/out"
	} >"$BATS_TEST_TMPDIR/out"
	mv "$BATS_TEST_TMPDIR/out" "$FAKE_DIR/tap-pfl/out"
	run -0 --separate-stderr dataspoc-pipe run pfl --full
	LENS_HIVE=1 lens pfl/orders | jq -c '[.id, .name, .updated_at_year]' >rows
	expect_file rows <<<'["1","a2","2024"]'
	pu_folders | grep orders | awk '{print $2}' >folders
	expect_file folders <<<'raw/pfl/orders/updated_at_year=2024'
	manifest_table pfl/orders | jq -c '[.partition.column, .stats.total_rows]' >m
	expect_file m <<<'["updated_at_year",1]'
}

# kill -9 at random moments of runs of a table partitioned by a field every
# update moves (a folder per name; keys sent more than once a run, deletes in
# the null folder): the lake is the table before or after the run, each key
# once, in its own value's folder; the next run recovers.
scenario_part_upsert_kill() {
	export DATASPOC_PIPE_MERGE_ROWS=6
	use_tap tap-pkl
	lake_pipeline pkl tap-pkl true 'partition_by: {field: name, granularity: value}' 'load_method: upsert'
	: >model
	batch 13 0 >b
	tap_sends tap-pkl <b
	run -0 --separate-stderr dataspoc-pipe run pkl
	apply model <b
	for run in 1 2 3 4 5 6; do
		batch 13 $run >b
		tap_sends tap-pkl <b
		cp model after
		apply after <b
		setsid dataspoc-pipe run pkl >/dev/null 2>&1 &
		local pid=$!
		sleep "0.$(( (run * 37) % 10 ))$(( run % 7 ))"
		kill -9 -- "-$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		run -0 --separate-stderr pipe-state get -r "$(pipe-state new-run-id)" pkl
		run -0 --separate-stderr pipe-state unlock pkl
		lake_model pkl/users >lake
		diff -q model lake >/dev/null || diff -u after lake
		run -0 --separate-stderr dataspoc-pipe run pkl
		cp after model
		lake_model pkl/users >lake
		diff -u model lake
		run -0 distinct_ok pkl/users
		LENS_HIVE=1 lens pkl/users | jq -c 'select(.name != .name_value)' >wrong
		expect_file wrong </dev/null
	done
}
