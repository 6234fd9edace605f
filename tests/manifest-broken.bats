#!/usr/bin/env bats
# A manifest.json that cannot be read — cut short, not JSON, another shape —
# never half-commits a run (issue #12, item 7).  The commit moves the state
# before it updates the manifest, so the update may not fail on what the
# file holds: it keeps the broken file aside as manifest.json.broken-<run>,
# rebuilds the tables from what the bucket holds (the data files of each
# folder, counted by their runs' success logs), merges the run and says so
# in one warning.  The run succeeds and is logged, its records land once,
# the state moves once, and status, manifest and DuckDB read the tables.

load helpers/common
use_local_lake

# shop_out N: what tap-shop prints on run N: orders 2N-1 and 2N, user N,
# the state {"n":N}.
shop_out() {
	local n=$1
	{
		echo '{"type":"SCHEMA","stream":"orders","schema":{"type":"object","properties":{"id":{"type":"integer"},"item":{"type":["null","string"]}}},"key_properties":["id"]}'
		singer_records orders <<-EOF
		{"id":$((2 * n - 1)),"item":"i$((2 * n - 1))"}
		{"id":$((2 * n)),"item":"i$((2 * n))"}
		EOF
		echo '{"type":"SCHEMA","stream":"users","schema":{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":["null","string"]}}},"key_properties":["id"]}'
		singer_records users <<<"{\"id\":$n,\"name\":\"u$n\"}"
		echo "{\"type\":\"STATE\",\"value\":{\"n\":$n}}"
	} >"$FAKE_DIR/tap-shop/out"
}

# shop_run N: run N of pipeline shop (Parquet, incremental), which succeeds;
# its stderr in shop-N.err.
shop_run() {
	shop_out "$1"
	run -0 --separate-stderr dataspoc-pipe run shop
	printf '%s\n' "$stderr" >"shop-$1.err"
	assert_line "Done! 3 records in 2 stream(s)"
}

# break_manifest HOW: replace .dataspoc/manifest.json by a broken one (kept
# in broken.json too).
break_manifest() {
	bucket_cat .dataspoc/manifest.json >good.json
	case $1 in
	cut) head -c 150 good.json ;;
	empty) : ;;
	not-json) printf 'manifest: see the wiki\n' ;;
	array) printf '[%s]\n' "$(cat good.json)" ;;
	nul) head -c 40 good.json && printf '\0' && tail -c +41 good.json ;;
	invalid-utf8) sed 's/"users"/"us\xffers"/' good.json ;;
	tables-string) printf '{"version": "1.0", "tables": "shop/orders"}\n' ;;
	table-number) printf '{"version": "1.0", "tables": {"shop/orders": 4}}\n' ;;
	esac >broken.json
	bucket_put .dataspoc/manifest.json <broken.json
}

# The warning of a rebuild: WHY the file was unreadable, TABLES rebuilt from
# LOGS success logs, then the rest (may be empty).
rebuild_warning() {
	printf "dataspoc-pipe: warning: %s/.dataspoc/manifest.json was unreadable (%s): kept it as '.dataspoc/manifest.json.broken-%s' and rebuilt it from the bucket: %s table(s) of earlier runs, their rows from %s success run log(s)%s\n" \
		"$(bucket_url)" "$1" "$2" "$3" "$4" "${5:-}"
}

# warnings FILE: its warning lines (the progress lines of a run aside).
warnings() {
	grep ': warning: ' "$1" || true
}

# The committed end of run 2 after the manifest broke in manner $1, why it
# says $2: the run is logged, the state moved once, the records landed once,
# the manifest counts every row, the broken file is kept.
scenario_broken() {
	use_tap tap-shop
	lake_pipeline shop tap-shop true
	shop_run 1
	break_manifest "$1"
	shop_run 2
	local r1 r2 why=$2
	# @AT@: the 1-based offset of the first byte 0xff
	why=${why//@AT@/$(($(grep -abo $'\xff' broken.json | head -n 1 | cut -d: -f1) + 1))}
	r1=$(run_ids shop | sed -n 1p)
	r2=$(run_ids shop | sed -n 2p)
	[ -n "$r2" ]
	warnings shop-2.err >w
	rebuild_warning "$why" "$r2" 2 2 | expect_file w
	# the broken file, kept byte for byte
	bucket_cat ".dataspoc/manifest.json.broken-$r2" >kept
	cmp broken.json kept
	# logged as a success; the tap ran twice; the state is run 2's; nothing pending
	last_log shop | jq -c '[.run_id, .status, .streams, .error]' >log
	expect_file log <<<"[\"$r2\",\"success\",{\"orders\":{\"records\":2},\"users\":{\"records\":1}},null]"
	[ "$(wc -l <"$FAKE_DIR/tap-shop/runs")" -eq 2 ]
	bucket_cat .dataspoc/state/shop/state.json | jq -c . >state
	expect_file state <<<'{"n":2}'
	bucket_keys .dataspoc/state/ >left
	expect_file left <<<'.dataspoc/state/shop/state.json'
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	# one file per stream and run
	bucket_files | sed 's|/dt=[^/]*/\([a-z]*\)_\([^_]*\)_.*|/\1 \2|' >files
	expect_file files <<-EOF
	raw/shop/orders/orders $r1
	raw/shop/orders/orders $r2
	raw/shop/users/users $r1
	raw/shop/users/users $r2
	EOF
	# the manifest: both tables, every row, run 2's columns
	bucket_cat .dataspoc/manifest.json | jq -c '.version, (.tables | to_entries[] | [.key, .value.pipeline,
		.value.path, .value.stats.total_rows, .value.stats.extractions, .value.stats.last_extraction_rows,
		.value.last_run_id, [.value.columns[].name], .value.key_properties, .value.format, .value.compression])' >m
	expect_file m <<-EOF
	"1.0"
	["shop/orders","shop","raw/shop/orders",4,2,2,"$r2",["id","item","_extra"],["id"],"parquet","zstd"]
	["shop/users","shop","raw/shop/users",2,2,1,"$r2",["id","name","_extra"],["id"],"parquet","zstd"]
	EOF
}

@test "a manifest cut short: the next run rebuilds it, commits and is logged" {
	scenario_broken cut "byte 151: unexpected end of input"
}

@test "an empty manifest is rebuilt" {
	scenario_broken empty "it is empty"
}

@test "a manifest that is not JSON is rebuilt" {
	scenario_broken not-json "byte 1: unexpected character"
}

@test "a manifest that is a JSON array is rebuilt" {
	scenario_broken array "not a JSON object"
}

@test "a manifest holding a NUL byte is rebuilt" {
	scenario_broken nul "byte 41: control character in string"
}

@test "a manifest holding invalid UTF-8 is rebuilt" {
	scenario_broken invalid-utf8 "byte @AT@: invalid UTF-8"
}

@test "a manifest whose tables are not an object is rebuilt" {
	scenario_broken tables-string 'its "tables" is not an object'
}

@test "a manifest whose table is not an object is rebuilt" {
	scenario_broken table-number 'its table "shop/orders" is not an object'
}

@test "after the rebuild, status, manifest and DuckDB see the run, and the next run is a plain one" {
	scenario_broken cut "byte 151: unexpected end of input"
	local r2
	r2=$(run_ids shop | tail -n 1)
	run -0 --separate-stderr dataspoc-pipe status --output json
	jq -c '.[] | [.name, .last_run, .status, .records]' <<<"$output" >st
	expect_file st <<<"[\"shop\",\"$(last_log shop | jq -r .started_at)\",\"success\",3]"
	run -0 --separate-stderr dataspoc-pipe manifest "$(bucket_url)"
	assert_equal "$stderr" ""
	printf '%s\n' "$output" | awk '{ print $1, $2, $3, $5 }' >mf
	expect_file mf <<-'EOF'
	TABLE ROWS EXTRACTIONS EXTRACTION
	shop/orders 4 2 3
	shop/users 2 2 3
	EOF
	lens shop/orders | jq -c '[.id, .item]' >orders
	expect_file orders <<-'EOF'
	["1","i1"]
	["2","i2"]
	["3","i3"]
	["4","i4"]
	EOF
	lens shop/users | jq -c '[.id, .name]' >users
	expect_file users <<-'EOF'
	["1","u1"]
	["2","u2"]
	EOF
	# the next run finds a manifest it can read: no warning, every row counted
	shop_run 3
	warnings shop-3.err >w
	expect_file_empty w
	bucket_cat .dataspoc/manifest.json | jq -c '[.tables[] | [.stats.total_rows, .stats.extractions]]' >m
	expect_file m <<<'[[6,3],[3,3]]'
	[ "$(lens shop/orders | wc -l)" -eq 6 ]
	run -0 bucket_keys .dataspoc/manifest.json.broken-
	assert_output ".dataspoc/manifest.json.broken-$r2"
}

@test "the tables of other pipelines and paths are rebuilt from their run logs, under the keys they had" {
	use_tap tap-two
	local schema='{"type":"SCHEMA","stream":"t","schema":{"type":"object","properties":{"id":{"type":"integer"}}},"key_properties":["id"]}'
	lake_pipeline a tap-two true "path: raw"
	lake_pipeline b tap-two true "path: inc" "format: jsonl"
	{ echo "$schema"; singer_records t <<<'{"id":1}'; } >"$FAKE_DIR/tap-two/out"
	run -0 --separate-stderr dataspoc-pipe run a
	{ echo "$schema"; singer_records t <<<$'{"id":10}\n{"id":11}'; } >"$FAKE_DIR/tap-two/out"
	run -0 --separate-stderr dataspoc-pipe run b
	{ echo "$schema"; singer_records t <<<'{"id":2}'; } >"$FAKE_DIR/tap-two/out"
	run -0 --separate-stderr dataspoc-pipe run a
	bucket_cat .dataspoc/manifest.json | jq -c '.tables | to_entries[] | [.key, .value.path]' >keys.before
	break_manifest cut
	{ echo "$schema"; singer_records t <<<'{"id":3}'; } >"$FAKE_DIR/tap-two/out"
	run -0 --separate-stderr dataspoc-pipe run a
	local ra rb
	ra=$(run_ids a | tail -n 1)
	rb=$(run_ids b | tail -n 1)
	printf '%s\n' "$stderr" >a.err
	warnings a.err >w
	rebuild_warning "byte 151: unexpected end of input" "$ra" 2 3 \
		"; the columns, key properties and table version of the 1 table(s) this run did not land come back with their pipeline's next run" |
		expect_file w
	bucket_cat .dataspoc/manifest.json | jq -c '.tables | to_entries[] | [.key, .value.path]' >keys.after
	diff -u keys.before keys.after
	# b's table, from b's log and files: what they prove, no more
	manifest_table inc/two/t | jq -c 'del(.location, .last_extraction, .stats.last_extraction)' >b.json
	expect_file b.json <<<"{\"source\":\"two\",\"table\":\"t\",\"stream\":\"t\",\"path\":\"inc/two/t\",\"pipeline\":\"b\",\"columns\":[],\"key_properties\":[],\"format\":\"jsonl\",\"compression\":\"zstd\",\"stats\":{\"total_rows\":2,\"extractions\":1,\"last_extraction_rows\":2},\"last_run_id\":\"$rb\"}"
	manifest_table inc/two/t | jq -r '[.location, .last_extraction == .stats.last_extraction, .last_extraction == ($log | fromjson).finished_at] | @tsv' \
		--arg log "$(last_log b)" >b.more
	expect_file b.more <<<"inc/two/t	true	true"
	manifest_table two/t | jq -c '[.pipeline, .stats.total_rows, .stats.extractions, [.columns[].name], .key_properties]' >a.json
	expect_file a.json <<<'["a",3,3,["id","_extra"],["id"]]'
	lens two/t | jq -r .id >ids
	expect_file ids <<-'EOF'
	1
	2
	3
	EOF
	# b's next run brings its columns back and counts on
	{ echo "$schema"; singer_records t <<<'{"id":12}'; } >"$FAKE_DIR/tap-two/out"
	run -0 --separate-stderr dataspoc-pipe run b
	[[ $stderr != *warning* ]]
	manifest_table inc/two/t | jq -c '[.pipeline, .stats.total_rows, .stats.extractions, [.columns[].name], .key_properties]' >b.json
	expect_file b.json <<<'["b",3,2,["id"],["id"]]'
}

@test "a snapshot pipeline: the rebuilt manifest counts what its last run landed" {
	use_tap tap-snap
	lake_pipeline snap tap-snap false
	local schema='{"type":"SCHEMA","stream":"t","schema":{"type":"object","properties":{"id":{"type":"integer"}}},"key_properties":["id"]}'
	{ echo "$schema"; singer_records t <<<$'{"id":1}\n{"id":2}\n{"id":3}'; } >"$FAKE_DIR/tap-snap/out"
	run -0 --separate-stderr dataspoc-pipe run snap
	break_manifest not-json
	{ echo "$schema"; singer_records t <<<$'{"id":4}\n{"id":5}'; } >"$FAKE_DIR/tap-snap/out"
	run -0 --separate-stderr dataspoc-pipe run snap
	printf '%s\n' "$stderr" >snap.err
	warnings snap.err >w
	rebuild_warning "byte 1: unexpected character" "$(run_ids snap | tail -n 1)" 0 0 | expect_file w
	manifest_table snap/t | jq -c '[.pipeline, .stats.total_rows, .stats.last_extraction_rows]' >m
	expect_file m <<<'["snap",2,2]'
	lens snap/t | jq -r .id >ids
	expect_file ids <<-'EOF'
	4
	5
	EOF
	last_log snap | jq -r .status >st
	expect_file st <<<success
}

@test "files that no success log names are not counted, and the warning says so" {
	use_tap tap-shop
	lake_pipeline shop tap-shop true
	shop_run 1
	# a copy put there by hand, under the name of a run that never logged
	local f stray
	f=$(bucket_files | grep /orders/)
	stray=$(printf '%s\n' "$f" | sed 's/_[^_]*_0000\.parquet$/_20200101T000000Z-000aaaaaa_0000.parquet/')
	bucket_cat "$f" | bucket_put "$stray"
	break_manifest array
	shop_run 2
	warnings shop-2.err >w
	rebuild_warning "not a JSON object" "$(run_ids shop | tail -n 1)" 2 2 \
		", not counting the files of 1 run(s) that no success log names" | expect_file w
	bucket_cat .dataspoc/manifest.json | jq -c '[.tables[] | .stats.total_rows]' >m
	expect_file m <<<'[4,2]'
}

@test "ACTIVATE_VERSION over a broken manifest: no version known, nothing replaced, the version recorded again" {
	lake_pipeline pg tap-postgres true
	run -0 --separate-stderr dataspoc-pipe run pg
	break_manifest cut
	run -0 --separate-stderr dataspoc-pipe run pg
	assert_output --partial "Done! 7 records in 1 stream(s)"
	printf '%s\n' "$stderr" >pg.err
	warnings pg.err >w
	{
		echo "dataspoc-pipe: warning: $(bucket_url)/.dataspoc/manifest.json is unreadable (byte 151: unterminated string): the table versions it recorded are unknown, so the earlier files of the streams that activated one are kept"
		grep "warning: kept 1 earlier file(s) of stream 'customers'" pg.err
		rebuild_warning "byte 151: unterminated string" "$(run_ids pg | tail -n 1)" 1 1
	} >want
	diff -u want w
	[ "$(lens postgres/customers | wc -l)" -eq 27 ]
	manifest_table postgres/customers | jq -c '[.stats.total_rows, .table_version]' >m
	expect_file m <<<'[27,1795998976608]'
}

@test "s3: a manifest cut short is rebuilt on S3 too" {
	load helpers/s3
	s3_start
	S3_STARTED=1
	bucket_setup
	[[ $(bucket_url) == s3://* ]]
	lens_root() {
		s3_sync && printf '%s\n' "$S3_MIRROR"
	}
	scenario_broken cut "byte 151: unexpected end of input"
	[ "$(lens shop/orders | wc -l)" -eq 4 ]
	[ "$(lens shop/users | wc -l)" -eq 2 ]
}

# --- a manifest lock from the future; a manifest that cannot be written (issue #30)

@test "a manifest lock from another machine that claims years: taken over with a warning naming its holder, the run commits" {
	use_tap tap-shop
	lake_pipeline shop tap-shop true
	printf '{"run_id": "20260101T000000Z-f0f0f0", "host": "skewed.example", "pid": 77, "started_at": "2031-01-01T00:00:00Z", "expires_at": "2031-01-01T00:02:00Z"}\n' |
		bucket_put .dataspoc/manifest.lock
	shop_out 1
	SECONDS=0
	run -0 --separate-stderr dataspoc-pipe run shop
	[ "$SECONDS" -lt 60 ]
	grep -qF "dataspoc-pipe: warning: the manifest: taking over the lock of run 20260101T000000Z-f0f0f0 (pid 77 on skewed.example), which claims it until 2031-01-01T00:02:00Z, longer than any lease granted (" <<<"$stderr"
	run -1 bucket_exists .dataspoc/manifest.lock
	bucket_cat .dataspoc/manifest.json | jq -c '[.tables[].stats.total_rows]' >m
	expect_file m <<<'[2,1]'
	no_pending shop
}

@test "a live manifest lock's advice names the command that clears it, and that command does" {
	use_tap tap-shop
	lake_pipeline shop tap-shop true
	run -0 --separate-stderr pipe-state unlock -b "$(bucket_url)"
	assert_stderr "the manifest of $(bucket_url) is not locked"
	printf '{"run_id": "20260101T000000Z-f0f0f0", "host": "elsewhere.example", "pid": 77, "started_at": "2026-01-01T00:00:00Z", "expires_at": "%s"}\n' "$LIVE_UNTIL" |
		bucket_put .dataspoc/manifest.lock
	# a commit waits for it, then names the command; its run is committed all the same
	shop_out 1
	DATASPOC_PIPE_MANIFEST_WAIT=1 run -0 --separate-stderr dataspoc-pipe run shop
	grep -qxF "dataspoc-pipe: the manifest is locked by run 20260101T000000Z-f0f0f0 (pid 77 on elsewhere.example, since 2026-01-01T00:00:00Z, until $LIVE_UNTIL); if that run is gone, use 'pipe-state unlock -b $(bucket_url)'" <<<"$stderr"
	grep -qF "but the manifest was not updated; the next run of 'shop' brings it up to date" <<<"$stderr"
	last_log shop | jq -r .status >st
	expect_file st <<<success
	run -0 --separate-stderr pipe-state unlock -b "$(bucket_url)"
	grep -qF "removed the manifest lock of $(bucket_url): {\"run_id\": \"20260101T000000Z-f0f0f0\"" <<<"$stderr"
	run -1 bucket_exists .dataspoc/manifest.lock
	shop_run 2
	bucket_cat .dataspoc/manifest.json | jq -c '[.tables[].stats.total_rows]' >m
	expect_file m <<<'[4,2]'
	no_pending shop
}

@test "a manifest that cannot be updated: the run is committed and logged, said as a warning; the next run brings the manifest up to date" {
	use_tap tap-shop
	lake_pipeline shop tap-shop true
	shop_run 1
	local r1 r2
	r1=$(run_ids shop)
	# a folder where the manifest should be: it cannot be read or written
	bucket_rm .dataspoc/manifest.json
	mkdir "$BUCKET_DIR/.dataspoc/manifest.json"
	shop_out 2
	run -0 --separate-stderr dataspoc-pipe run shop
	assert_line "Done! 3 records in 2 stream(s)"
	r2=$(run_ids shop | sed -n 2p)
	grep -qxF "dataspoc-pipe: warning: run $r2 is committed (its data and state are published), but the manifest was not updated; the next run of 'shop' brings it up to date" <<<"$stderr"
	last_log shop | jq -c '[.run_id, .status]' >log
	expect_file log <<<"[\"$r2\",\"success\"]"
	bucket_cat .dataspoc/state/shop/state.json | jq -c . >state
	expect_file state <<<'{"n":2}'
	run -0 dataspoc-pipe status shop
	assert_output --partial success
	# the next run, with the manifest writable again
	rmdir "$BUCKET_DIR/.dataspoc/manifest.json"
	shop_run 3
	grep -qxF "dataspoc-pipe: warning: bringing the manifest up to date with run $r2, whose commit could not update it" shop-3.err
	bucket_cat .dataspoc/manifest.json | jq -c '[.tables[].stats.total_rows]' >m
	expect_file m <<<'[4,2]'
	no_pending shop
	[ "$(run_ids shop | wc -l)" -eq 3 ]
}
