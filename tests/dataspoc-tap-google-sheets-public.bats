#!/usr/bin/env bats
# dataspoc-tap-google-sheets-public: the built-in tap for public Google
# Sheets, against a local stand-in for the CSV export (tests/servers/gsheets.py)
# that DATASPOC_GSHEETS_BASE_URL points it at.

bats_require_minimum_version 1.5.0
bats_load_library bats-support
bats_load_library bats-assert

load helpers/gsheets

setup_file() {
	export SHEETS_DIR=$BATS_FILE_TMPDIR/sheets SHEETS_LOG=$BATS_FILE_TMPDIR/requests
	gsheets_start "$SHEETS_DIR" "$SHEETS_LOG"
	echo "$SHEETS_PID" >"$BATS_FILE_TMPDIR/server.pid"
}

teardown_file() {
	kill "$(cat "$BATS_FILE_TMPDIR/server.pid")" 2>/dev/null || true
}

setup() {
	TAP="${PIPE_BIN:-$BATS_TEST_DIRNAME/../bin}/dataspoc-tap-google-sheets-public"
	export DATASPOC_GSHEETS_BASE_URL=http://127.0.0.1:$SHEETS_PORT
	cd "$BATS_TEST_TMPDIR" || return 1
	: >"$SHEETS_LOG"
}

# sheet ID GID < CSV: what the export of sheet GID of spreadsheet ID serves.
sheet() {
	mkdir -p "$SHEETS_DIR/$1"
	cat >"$SHEETS_DIR/$1/$2.csv"
}

config() {
	printf '%s\n' "$1" >tap.json
}

@test "a sheet's address as pasted: SCHEMA with inferred types, then the RECORDs" {
	sheet abcDEF_123-x 456 <<-'EOF'
	id,name,price,active,code,when,note
	1,Ana,10.5,TRUE,007,2024-01-01,
	2,"Smith, John",-3,false,12,2024-01-02,"a ""quote"""
	3,Zoë,1e3,True,x,2024-01-03,12345678901234567891
	,,,,,,
	EOF
	config '{"url": "https://docs.google.com/spreadsheets/d/abcDEF_123-x/edit?usp=sharing#gid=456", "stream_name": "people", "key_properties": ["id"]}'
	run -0 --separate-stderr "$TAP" -c tap.json
	assert_equal "$stderr" ""
	printf '%s\n' "$output" >got
	cat >want <<-'EOF'
	{"type":"SCHEMA","stream":"people","schema":{"type":"object","properties":{"id":{"type":["null","integer"]},"name":{"type":["null","string"]},"price":{"type":["null","number"]},"active":{"type":["null","boolean"]},"code":{"type":["null","string"]},"when":{"type":["null","string"]},"note":{"type":["null","string"]}}},"key_properties":["id"]}
	{"type":"RECORD","stream":"people","record":{"id":1,"name":"Ana","price":10.5,"active":true,"code":"007","when":"2024-01-01","note":null}}
	{"type":"RECORD","stream":"people","record":{"id":2,"name":"Smith, John","price":-3,"active":false,"code":"12","when":"2024-01-02","note":"a \"quote\""}}
	{"type":"RECORD","stream":"people","record":{"id":3,"name":"Zoë","price":1e3,"active":true,"code":"x","when":"2024-01-03","note":"12345678901234567891"}}
	{"type":"RECORD","stream":"people","record":{"id":null,"name":null,"price":null,"active":null,"code":null,"when":null,"note":null}}
	EOF
	diff -u want got
	run -0 cat "$SHEETS_LOG"
	assert_output "/spreadsheets/d/abcDEF_123-x/export?format=csv&gid=456"
}

@test "spreadsheet_id with sheet_gid (a number too) or tab_name; the export's redirect is followed" {
	printf 'n\n1\n' | sheet S1 7
	printf 'n\nx\n' | sheet S1 'sheet-Q1 2024'
	printf 'a,b\n1,2\n' | sheet moved 3
	config '{"spreadsheet_id": "S1", "sheet_gid": 7}'
	run -0 --separate-stderr "$TAP" -c tap.json
	assert_line --index 0 '{"type":"SCHEMA","stream":"sheet","schema":{"type":"object","properties":{"n":{"type":["null","integer"]}}},"key_properties":[]}'
	assert_line --index 1 '{"type":"RECORD","stream":"sheet","record":{"n":1}}'
	# a tab by its name: the stream is named after it, unless sheet_name says
	config '{"spreadsheet_id": "S1", "tab_name": "Q1 2024"}'
	run -0 --separate-stderr "$TAP" -c tap.json
	assert_line --index 0 '{"type":"SCHEMA","stream":"Q1 2024","schema":{"type":"object","properties":{"n":{"type":["null","string"]}}},"key_properties":[]}'
	assert_line --index 1 '{"type":"RECORD","stream":"Q1 2024","record":{"n":"x"}}'
	# (over the address's gid)
	config '{"url": "https://docs.google.com/spreadsheets/d/S1/edit#gid=7", "tab_name": "Q1 2024", "sheet_name": "q1"}'
	run -0 --separate-stderr "$TAP" -c tap.json
	assert_line --index 1 '{"type":"RECORD","stream":"q1","record":{"n":"x"}}'
	config '{"url": "https://docs.google.com/spreadsheets/d/moved/edit#gid=3"}'
	run -0 --separate-stderr "$TAP" -c tap.json
	assert_line --index 1 '{"type":"RECORD","stream":"sheet","record":{"a":1,"b":2}}'
	run -0 cat "$SHEETS_LOG"
	assert_output "/spreadsheets/d/S1/export?format=csv&gid=7
/spreadsheets/d/S1/gviz/tq?tqx=out:csv&sheet=Q1%202024
/spreadsheets/d/S1/gviz/tq?tqx=out:csv&sheet=Q1%202024
/spreadsheets/d/moved/export?format=csv&gid=3
/cdn/moved/3.csv"
}

@test "the Python tool's config: url or spreadsheet_id an id or an address, the gid from sheet_gid, gid or the address, sheet_name or stream_name the stream" {
	printf 'n\n0\n' | sheet P 0
	printf 'n\n5\n' | sheet P 5
	printf 'n\n9\n' | sheet P 9
	# its howto and template: the address as pasted, sheet_name the table's name
	config '{"url": "https://docs.google.com/spreadsheets/d/P/edit?gid=5#gid=5", "sheet_name": "orders"}'
	run -0 --separate-stderr "$TAP" -c tap.json
	assert_equal "$stderr" ""
	assert_line --index 0 '{"type":"SCHEMA","stream":"orders","schema":{"type":"object","properties":{"n":{"type":["null","integer"]}}},"key_properties":[]}'
	assert_line --index 1 '{"type":"RECORD","stream":"orders","record":{"n":5}}'
	# the address in spreadsheet_id, the id in url
	config '{"spreadsheet_id": "https://docs.google.com/spreadsheets/d/P/edit#gid=5"}'
	run -0 --separate-stderr "$TAP" -c tap.json
	assert_line --index 1 '{"type":"RECORD","stream":"sheet","record":{"n":5}}'
	config '{"url": "P", "gid": 9, "stream_name": "s"}'
	run -0 --separate-stderr "$TAP" -c tap.json
	assert_line --index 1 '{"type":"RECORD","stream":"s","record":{"n":9}}'
	# sheet_gid before gid before the address; sheet_name before stream_name;
	# url before spreadsheet_id
	config '{"url": "https://docs.google.com/spreadsheets/d/P/edit#gid=5", "spreadsheet_id": "other", "sheet_gid": "9", "gid": 0, "sheet_name": "a", "stream_name": "b"}'
	run -0 --separate-stderr "$TAP" -c tap.json
	assert_equal "$stderr" ""
	assert_line --index 1 '{"type":"RECORD","stream":"a","record":{"n":9}}'
	config '{"url": "https://docs.google.com/spreadsheets/d/P/edit#gid=5", "gid": "0"}'
	run -0 --separate-stderr "$TAP" -c tap.json
	assert_line --index 1 '{"type":"RECORD","stream":"sheet","record":{"n":0}}'
	run -0 cat "$SHEETS_LOG"
	assert_output "/spreadsheets/d/P/export?format=csv&gid=5
/spreadsheets/d/P/export?format=csv&gid=5
/spreadsheets/d/P/export?format=csv&gid=9
/spreadsheets/d/P/export?format=csv&gid=9
/spreadsheets/d/P/export?format=csv&gid=0"
}

@test "a sheet that is not public, one not found, a server error and no server are clear errors" {
	config '{"url": "https://docs.google.com/spreadsheets/d/private/edit"}'
	run -1 --separate-stderr "$TAP" -c tap.json
	assert_output ""
	assert_equal "$stderr" "dataspoc-tap-google-sheets-public: cannot fetch '$DATASPOC_GSHEETS_BASE_URL/spreadsheets/d/private/export?format=csv': the sheet is not public (Google asks to sign in): share it as 'Anyone with the link' or publish it to the web"
	config '{"spreadsheet_id": "nosuch", "sheet_gid": "9"}'
	run -1 --separate-stderr "$TAP" -c tap.json
	assert_equal "$stderr" "dataspoc-tap-google-sheets-public: cannot fetch '$DATASPOC_GSHEETS_BASE_URL/spreadsheets/d/nosuch/export?format=csv&gid=9': HTTP 404: no such spreadsheet or sheet (check the id and the gid or name)"
	config '{"spreadsheet_id": "broken"}'
	run -1 --separate-stderr "$TAP" -c tap.json
	assert_equal "$stderr" "dataspoc-tap-google-sheets-public: cannot fetch '$DATASPOC_GSHEETS_BASE_URL/spreadsheets/d/broken/export?format=csv': HTTP 500"
	# A port nothing listens on (the server's own, once it is gone, is not
	# known to be free): port 9 on 127.0.0.1, refused.
	DATASPOC_GSHEETS_BASE_URL=http://127.0.0.1:9 run -1 --separate-stderr "$TAP" -c tap.json
	assert_regex "$stderr" "^dataspoc-tap-google-sheets-public: cannot fetch 'http://127.0.0.1:9/spreadsheets/d/broken/export\?format=csv': .*(refused|connect)"
}

@test "a server that drips bytes for ever: the fetch ends at timeout_seconds, saying so; a bad timeout is a config error" {
	config '{"spreadsheet_id": "drip", "timeout_seconds": 3}'
	SECONDS=0
	run -1 --separate-stderr timeout 60 "$TAP" -c tap.json
	[ "$SECONDS" -lt 20 ]
	assert_regex "$stderr" "^dataspoc-tap-google-sheets-public: cannot fetch '.*/spreadsheets/d/drip/export\?format=csv': Operation timed out after [0-9]+ milliseconds"
	config '{"spreadsheet_id": "drip", "timeout_seconds": 0}'
	run -2 --separate-stderr "$TAP" -c tap.json
	assert_regex "$stderr" "\"timeout_seconds\" must be 1 to 86400, not '0'"
}

@test "a header of 100,000 columns is read in linear time" {
	mkdir -p "$SHEETS_DIR/wide"
	awk 'BEGIN { n = 100000; for (i = 1; i <= n; i++) printf "c%d%s", i, (i < n ? "," : "\n");
		for (i = 1; i <= n; i++) printf "%d%s", i, (i < n ? "," : "\n") }' >"$SHEETS_DIR/wide/0.csv"
	config '{"spreadsheet_id": "wide"}'
	# (timed alone: bats' run is slow with a 5 MB line; quadratic took 16.5 s)
	SECONDS=0
	timeout 60 "$TAP" -c tap.json >wide.out
	[ "$SECONDS" -le 8 ]
	assert_equal "$(jq -c '.record.c100000 // empty' wide.out)" '100000'
}

@test "a catalog leaves columns or the stream out; discovery lists the columns" {
	printf 'id,secret,v\n1,s,2.5\n' | sheet C 0
	config '{"spreadsheet_id": "C", "stream_name": "t", "key_properties": ["id"]}'
	run -0 --separate-stderr "$TAP" -c tap.json --discover
	printf '%s\n' "$output" >cat.json
	run -0 jq -c '.streams[0] | [.stream, .schema, .key_properties, [.metadata[] | .metadata.inclusion]]' cat.json
	assert_output '["t",{"type":"object","properties":{"id":{"type":["null","integer"]},"secret":{"type":["null","string"]},"v":{"type":["null","number"]}}},["id"],["available","automatic","available","available"]]'
	jq '.streams[0].metadata[2].metadata.selected = false | .streams[0].metadata[1].metadata.selected = false' cat.json >sel.json
	run -0 --separate-stderr "$TAP" -c tap.json --catalog sel.json
	assert_line --index 1 '{"type":"RECORD","stream":"t","record":{"id":1,"v":2.5}}'
	jq '.streams[0].metadata[0].metadata.selected = false' cat.json >off.json
	run -0 --separate-stderr "$TAP" -c tap.json -p off.json
	assert_output ""
}

@test "bad CSV, invalid UTF-8 and a row longer than the header fail and say where" {
	printf 'a,b\n1,"x\n' | sheet B 0
	config '{"spreadsheet_id": "B"}'
	run -1 --separate-stderr "$TAP" -c tap.json
	assert_equal "$stderr" "dataspoc-tap-google-sheets-public: $DATASPOC_GSHEETS_BASE_URL/spreadsheets/d/B/export?format=csv:2: unterminated quoted field"
	printf 'a,b\n1,\377\n' | sheet B 0
	run -1 --separate-stderr "$TAP" -c tap.json
	assert_equal "$stderr" "dataspoc-tap-google-sheets-public: $DATASPOC_GSHEETS_BASE_URL/spreadsheets/d/B/export?format=csv:2: column 'b': invalid UTF-8"
	printf 'a,b\n1,2,3\n1,2,\n' | sheet B 0
	run -1 --separate-stderr "$TAP" -c tap.json
	assert_equal "$stderr" "dataspoc-tap-google-sheets-public: $DATASPOC_GSHEETS_BASE_URL/spreadsheets/d/B/export?format=csv:2: 3 fields, the header has 2"
	# Empty cells past the header, and a blank header cell, are fine.
	printf 'a,,c\n1,2,3,,\n' | sheet B 0
	run -0 --separate-stderr "$TAP" -c tap.json
	assert_line --index 1 '{"type":"RECORD","stream":"sheet","record":{"a":1,"column_2":2,"c":3}}'
	# An empty sheet: a SCHEMA with no column.
	: | sheet B 0
	run -0 --separate-stderr "$TAP" -c tap.json
	assert_output '{"type":"SCHEMA","stream":"sheet","schema":{"type":"object","properties":{}},"key_properties":[]}'
}

@test "config errors exit 2 and say what is wrong" {
	config '{}'
	run -2 --separate-stderr "$TAP" -c tap.json
	assert_equal "$stderr" "dataspoc-tap-google-sheets-public: config 'tap.json': give \"url\" (the sheet's address) or \"spreadsheet_id\""
	config '{"url": "https://example.com/x"}'
	run -2 --separate-stderr "$TAP" -c tap.json
	assert_equal "$stderr" "dataspoc-tap-google-sheets-public: config 'tap.json': \"url\" 'https://example.com/x' is neither a spreadsheet id nor a Google Sheets address (https://docs.google.com/spreadsheets/d/ID/edit#gid=N)"
	config '{"spreadsheet_id": "a/b"}'
	run -2 --separate-stderr "$TAP" -c tap.json
	assert_equal "$stderr" "dataspoc-tap-google-sheets-public: config 'tap.json': \"spreadsheet_id\" 'a/b' is neither a spreadsheet id nor a Google Sheets address (https://docs.google.com/spreadsheets/d/ID/edit#gid=N)"
	config '{"spreadsheet_id": "a", "sheet_gid": 1, "tab_name": "x"}'
	run -2 --separate-stderr "$TAP" -c tap.json
	assert_equal "$stderr" "dataspoc-tap-google-sheets-public: config 'tap.json': give \"sheet_gid\" or \"tab_name\", not both"
	config '{"spreadsheet_id": "a", "gid": "x1"}'
	run -2 --separate-stderr "$TAP" -c tap.json
	assert_equal "$stderr" "dataspoc-tap-google-sheets-public: config 'tap.json': \"gid\" must be digits, not 'x1'"
	printf 'id\n1\n' | sheet K 0
	config '{"spreadsheet_id": "K", "key_properties": ["nope"]}'
	run -2 --separate-stderr "$TAP" -c tap.json
	assert_equal "$stderr" "dataspoc-tap-google-sheets-public: config 'tap.json': key property 'nope' is not a column of the sheet"
	run -2 --separate-stderr "$TAP"
	assert_equal "$stderr" "dataspoc-tap-google-sheets-public: --config is required
usage: dataspoc-tap-google-sheets-public [-d] -c config [-s state] [-p properties | --catalog catalog]"
}

@test "--help, --version, --about; a full stdout is an error" {
	run -0 "$TAP" --help
	assert_line --index 0 "usage: dataspoc-tap-google-sheets-public [-d] -c config [-s state] [-p properties | --catalog catalog]"
	run -0 "$TAP" --version
	assert_output --regexp '^dataspoc-tap-google-sheets-public [0-9]'
	run -0 "$TAP" --about
	printf '%s\n' "$output" >about
	run -0 jq -r .name about
	assert_output dataspoc-tap-google-sheets-public
	printf 'id\n1\n' | sheet F 0
	config '{"spreadsheet_id": "F"}'
	run -1 --separate-stderr sh -c '"$0" -c tap.json >/dev/full' "$TAP"
	assert_equal "$stderr" "dataspoc-tap-google-sheets-public: cannot write 'standard output': No space left on device"
}
