#!/usr/bin/env bats
# dataspoc-tap-csv: the built-in Singer tap for CSV files.

bats_require_minimum_version 1.5.0
bats_load_library bats-support
bats_load_library bats-assert

setup() {
	TAP="${PIPE_BIN:-$BATS_TEST_DIRNAME/../bin}/dataspoc-tap-csv"
	SAMPLE="$(cd "$BATS_TEST_DIRNAME/../examples/sample" && pwd)"
	cd "$BATS_TEST_TMPDIR" || return 1

	cat >people.csv <<-'EOF'
	id,name,updated_at
	1,Ana,2024-01-01T00:00:00Z
	2,"Smith, John",2024-01-03T00:00:00Z
	3,Zoë,2024-01-02T00:00:00Z
	EOF
	cat >pets.csv <<-'EOF'
	pet,owner
	rex,1
	tom,3
	EOF
	cat >tap.json <<-'EOF'
	{"files": [
	  {"entity": "people", "path": "people.csv", "keys": ["id"],
	   "replication_key": "updated_at"},
	  {"entity": "pets", "path": "pets.csv", "keys": ["pet"]}
	]}
	EOF
}

# The output of the last run, as a file with its final newline.
out_file() {
	printf '%s\n' "$output" >"$1"
}

one_file_config() {	# entity path [more json members]
	printf '{"files": [{"entity": "%s", "path": "%s"%s}]}\n' "$1" "$2" "${3:-}" >one.json
}

@test "a full run prints SCHEMA, RECORDs and STATE for each stream, exactly" {
	run -0 --separate-stderr "$TAP" --config tap.json
	out_file got.jsonl
	cat >want.jsonl <<-'EOF'
	{"type":"SCHEMA","stream":"people","schema":{"type":"object","properties":{"id":{"type":["null","string"]},"name":{"type":["null","string"]},"updated_at":{"type":["null","string"]}}},"key_properties":["id"],"bookmark_properties":["updated_at"]}
	{"type":"RECORD","stream":"people","record":{"id":"1","name":"Ana","updated_at":"2024-01-01T00:00:00Z"}}
	{"type":"RECORD","stream":"people","record":{"id":"2","name":"Smith, John","updated_at":"2024-01-03T00:00:00Z"}}
	{"type":"RECORD","stream":"people","record":{"id":"3","name":"Zoë","updated_at":"2024-01-02T00:00:00Z"}}
	{"type":"STATE","value":{"bookmarks":{"people":{"replication_key":"updated_at","replication_key_value":"2024-01-03T00:00:00Z"}}}}
	{"type":"SCHEMA","stream":"pets","schema":{"type":"object","properties":{"pet":{"type":["null","string"]},"owner":{"type":["null","string"]}}},"key_properties":["pet"]}
	{"type":"RECORD","stream":"pets","record":{"pet":"rex","owner":"1"}}
	{"type":"RECORD","stream":"pets","record":{"pet":"tom","owner":"3"}}
	{"type":"STATE","value":{"bookmarks":{"people":{"replication_key":"updated_at","replication_key_value":"2024-01-03T00:00:00Z"}}}}
	EOF
	diff -u want.jsonl got.jsonl
	assert_equal "$stderr" ""
}

@test "short options -c work as --config does" {
	run -0 --separate-stderr "$TAP" --config tap.json
	out_file long.jsonl
	run -0 --separate-stderr "$TAP" -c tap.json
	out_file short.jsonl
	diff -u long.jsonl short.jsonl
}

@test "quotes, escapes, unicode, embedded newlines, CRLF and a BOM" {
	printf '\357\273\277id,"we""ird",v\r\n' >q.csv
	printf '1,"a ""quoted"" word","x"\r\n' >>q.csv
	printf '2,"line one\nline two",\r\n' >>q.csv
	printf '3,back\\slash\ttab,"日本語, ok"\r\n' >>q.csv
	printf '4,\001ctl,"comma,\r\nand crlf"\r\n' >>q.csv
	printf '\r\n' >>q.csv
	printf '5,"",last line without newline' >>q.csv
	one_file_config 'q\"s' q.csv
	run -0 --separate-stderr "$TAP" --config one.json
	out_file got.jsonl
	cat >want.jsonl <<-'EOF'
	{"type":"SCHEMA","stream":"q\"s","schema":{"type":"object","properties":{"id":{"type":["null","string"]},"we\"ird":{"type":["null","string"]},"v":{"type":["null","string"]}}},"key_properties":[]}
	{"type":"RECORD","stream":"q\"s","record":{"id":"1","we\"ird":"a \"quoted\" word","v":"x"}}
	{"type":"RECORD","stream":"q\"s","record":{"id":"2","we\"ird":"line one\nline two","v":""}}
	{"type":"RECORD","stream":"q\"s","record":{"id":"3","we\"ird":"back\\slash\ttab","v":"日本語, ok"}}
	{"type":"RECORD","stream":"q\"s","record":{"id":"4","we\"ird":"\u0001ctl","v":"comma,\r\nand crlf"}}
	{"type":"RECORD","stream":"q\"s","record":{"id":"5","we\"ird":"","v":"last line without newline"}}
	{"type":"STATE","value":{}}
	EOF
	diff -u want.jsonl got.jsonl
	# and jq reads every line back to the same strings
	run -0 jq -r 'select(.type == "RECORD") | .record["we\"ird"]' got.jsonl
	assert_line --index 0 'a "quoted" word'
	assert_line --index 1 'line one'
	assert_line --index 2 'line two'
}

@test "a delimiter other than a comma" {
	printf 'a;b\n"x;y";2\n' >semi.csv
	one_file_config semi semi.csv ', "delimiter": ";"'
	run -0 --separate-stderr "$TAP" --config one.json
	assert_line --index 1 '{"type":"RECORD","stream":"semi","record":{"a":"x;y","b":"2"}}'
	printf 'a\tb\n1\t2\n' >tab.csv
	one_file_config tab tab.csv ', "delimiter": "\t"'
	run -0 --separate-stderr "$TAP" --config one.json
	assert_line --index 1 '{"type":"RECORD","stream":"tab","record":{"a":"1","b":"2"}}'
}

@test "a row with the wrong number of fields fails after what came before" {
	printf 'a,b\n1,2\n"x\ny",3,4\n5,6\n' >bad.csv
	one_file_config bad bad.csv
	run -1 --separate-stderr "$TAP" --config one.json
	assert_equal "$stderr" "dataspoc-tap-csv: bad.csv:3: expected 2 fields, got 3"
	assert_equal "${#lines[@]}" 2
	assert_line --index 1 '{"type":"RECORD","stream":"bad","record":{"a":"1","b":"2"}}'
	refute_output --partial STATE
}

@test "malformed CSV: unterminated quote, text after a closing quote, invalid UTF-8" {
	printf 'a,b\n1,2\n3,"open\n\n' >open.csv
	one_file_config open open.csv
	run -1 --separate-stderr "$TAP" --config one.json
	assert_equal "$stderr" "dataspoc-tap-csv: open.csv:3: unterminated quoted field"

	printf 'a,b\n"x"y,2\n' >after.csv
	one_file_config after after.csv
	run -1 --separate-stderr "$TAP" --config one.json
	assert_equal "$stderr" "dataspoc-tap-csv: after.csv:2: unexpected character after a closing quote"

	printf 'a,b\n1,\377\n' >latin.csv
	one_file_config latin latin.csv
	run -1 --separate-stderr "$TAP" --config one.json
	assert_equal "$stderr" "dataspoc-tap-csv: latin.csv:2: column 'b': invalid UTF-8"
}

@test "an empty file or a header alone gives a SCHEMA and no record" {
	: >empty.csv
	one_file_config empty empty.csv
	run -0 --separate-stderr "$TAP" --config one.json
	assert_equal "$output" '{"type":"SCHEMA","stream":"empty","schema":{"type":"object","properties":{}},"key_properties":[]}
{"type":"STATE","value":{}}'
	printf 'a,b\r\n' >head.csv
	one_file_config head head.csv ', "keys": ["b"]'
	run -0 --separate-stderr "$TAP" --config one.json
	assert_equal "$output" '{"type":"SCHEMA","stream":"head","schema":{"type":"object","properties":{"a":{"type":["null","string"]},"b":{"type":["null","string"]}}},"key_properties":["b"]}
{"type":"STATE","value":{}}'
}

@test "a missing CSV file is named, exit 1" {
	one_file_config gone nope.csv
	run -1 --separate-stderr "$TAP" --config one.json
	assert_equal "$stderr" "dataspoc-tap-csv: cannot open 'nope.csv': No such file or directory"
	assert_output ""
}

@test "bad config: one line naming the file, exit 2" {
	run -2 --separate-stderr "$TAP" --config absent.json
	assert_equal "$stderr" "dataspoc-tap-csv: config 'absent.json': No such file or directory"

	printf '{"files": [\n' >broken.json
	run -2 --separate-stderr "$TAP" --config broken.json
	assert_equal "${#stderr_lines[@]}" 1
	assert_regex "$stderr" "^dataspoc-tap-csv: config 'broken.json': .+"

	echo '[]' >arr.json
	run -2 --separate-stderr "$TAP" --config arr.json
	assert_equal "$stderr" "dataspoc-tap-csv: config 'arr.json': not a JSON object"

	echo '{"other": 1}' >nofiles.json
	run -2 --separate-stderr "$TAP" --config nofiles.json
	assert_equal "$stderr" "dataspoc-tap-csv: config 'nofiles.json': \"files\" or \"csv_files_definition\" is required"

	echo '{"files": [{"entity": "x"}]}' >nopath.json
	run -2 --separate-stderr "$TAP" --config nopath.json
	assert_equal "$stderr" "dataspoc-tap-csv: config 'nopath.json': x: \"path\" must be a non-empty string"

	echo '{"files": [{"entity": "x", "path": "people.csv", "delimiter": "ab"}]}' >delim.json
	run -2 --separate-stderr "$TAP" --config delim.json
	assert_equal "$stderr" "dataspoc-tap-csv: config 'delim.json': x: \"delimiter\" must be one ASCII character other than a quote or a line break"

	echo '{"files": [{"entity": "x", "path": "a.csv"}, {"entity": "x", "path": "b.csv"}]}' >twice.json
	run -2 --separate-stderr "$TAP" --config twice.json
	assert_equal "$stderr" "dataspoc-tap-csv: config 'twice.json': entity 'x' is listed twice"
	assert_output ""
}

@test "a key or replication key that is not a column is a config error" {
	one_file_config people people.csv ', "replication_key": "modified"'
	run -2 --separate-stderr "$TAP" --config one.json
	assert_equal "$stderr" "dataspoc-tap-csv: config 'one.json': people: replication_key 'modified' is not a column of 'people.csv'"
	one_file_config people people.csv ', "keys": ["id", "uuid"]'
	run -2 --separate-stderr "$TAP" --config one.json
	assert_equal "$stderr" "dataspoc-tap-csv: config 'one.json': people: key 'uuid' is not a column of 'people.csv'"
}

@test "csv_files_definition names a file holding the list, as tap-csv's does" {
	echo '[{"entity": "pets", "path": "pets.csv", "keys": ["pet"]}]' >defs.json
	echo '{"csv_files_definition": "defs.json"}' >bydef.json
	run -0 --separate-stderr "$TAP" --config bydef.json
	assert_equal "${#lines[@]}" 4
	assert_line --index 2 '{"type":"RECORD","stream":"pets","record":{"pet":"tom","owner":"3"}}'

	echo '{"csv_files_definition": "missing.json"}' >bydef.json
	run -2 --separate-stderr "$TAP" --config bydef.json
	assert_equal "$stderr" "dataspoc-tap-csv: config 'missing.json': No such file or directory"
}

@test "paths are relative to the working directory" {
	mkdir sub
	echo "{\"files\": [{\"entity\": \"pets\", \"path\": \"$BATS_TEST_TMPDIR/pets.csv\"}]}" >sub/abs.json
	echo '{"files": [{"entity": "pets", "path": "../pets.csv"}]}' >sub/rel.json
	cd sub
	run -0 --separate-stderr "$TAP" --config rel.json
	out_file rel.jsonl
	run -0 --separate-stderr "$TAP" --config abs.json
	out_file abs.jsonl
	diff -u abs.jsonl rel.jsonl
	assert_equal "$(wc -l <rel.jsonl)" 4
}

@test "under dataspoc-pipe, paths are relative to the file the config is written in, not to where the run starts; validate names a missing file" {
	export HOME=$BATS_TEST_TMPDIR/home
	export DATASPOC_PIPE_HOME=$HOME/.dataspoc-pipe TMPDIR=$BATS_TEST_TMPDIR
	export PATH=${PIPE_BIN:-$BATS_TEST_DIRNAME/../bin}:$PATH
	local p=$DATASPOC_PIPE_HOME/pipelines s=$DATASPOC_PIPE_HOME/sources
	mkdir -p "$p/data" "$s/lists" elsewhere
	cp people.csv "$p/data/"
	cp pets.csv "$s/"
	# an inline config: relative to the pipeline's file
	printf '%s\n' 'source:' '  tap: dataspoc-tap-csv' '  config:' '    files:' \
		'      - {entity: people, path: data/people.csv, keys: [id]}' \
		'destination:' '  bucket: ../lake' 'incremental:' '  enabled: false' >"$p/people.yaml"
	# a config file: relative to that file (the paths of the list it names too)
	echo '{"csv_files_definition": "lists/pets.json"}' >"$s/pets.json"
	echo '[{"entity": "pets", "path": "pets.csv", "keys": ["pet"]}]' >"$s/lists/pets.json"
	printf '%s\n' 'source:' '  tap: dataspoc-tap-csv' '  config: ../sources/pets.json' \
		'destination:' '  bucket: ../lake' 'incremental:' '  enabled: false' >"$p/pets.yaml"
	cd elsewhere
	run -0 --separate-stderr dataspoc-pipe run people
	assert_line --index 1 "Done! 3 records in 1 stream(s)"
	run -0 --separate-stderr dataspoc-pipe run pets
	assert_line --index 1 "Done! 2 records in 1 stream(s)"
	run -0 dataspoc-pipe validate people pets
	rm "$p/data/people.csv"
	run -1 --separate-stderr dataspoc-pipe validate people
	assert_line --index 2 "people: source: FAIL: dataspoc-tap-csv --discover failed: dataspoc-tap-csv: cannot open '$p/data/people.csv': No such file or directory"
}

@test "--discover prints a catalog shaped like real taps'" {
	run -0 --separate-stderr "$TAP" --config tap.json --discover
	out_file catalog.json
	run -0 jq -c '.streams | map(.tap_stream_id)' catalog.json
	assert_output '["people","pets"]'
	run -0 jq -c '.streams[0] | [.stream, .key_properties, .replication_key, .replication_method, (.schema.properties | keys_unsorted)]' catalog.json
	assert_output '["people",["id"],"updated_at","INCREMENTAL",["id","name","updated_at"]]'
	run -0 jq -c '.streams[0].metadata[0]' catalog.json
	assert_output '{"breadcrumb":[],"metadata":{"inclusion":"available","selected-by-default":true,"table-key-properties":["id"],"valid-replication-keys":["updated_at"],"forced-replication-method":"INCREMENTAL"}}'
	run -0 jq -c '.streams[0].metadata[1:] | map([.breadcrumb, .metadata.inclusion])' catalog.json
	assert_output '[[["properties","id"],"automatic"],[["properties","name"],"available"],[["properties","updated_at"],"automatic"]]'
	run -0 jq -c '.streams[1] | [.replication_method, has("replication_key"), .metadata[0].metadata["table-key-properties"]]' catalog.json
	assert_output '["FULL_TABLE",false,["pet"]]'
	run -0 jq -c '.streams[0].schema.properties.name' catalog.json
	assert_output '{"type":["null","string"]}'
}

@test "--state: only rows at or after the bookmark, and the new bookmark" {
	echo '{"bookmarks": {"people": {"replication_key": "updated_at", "replication_key_value": "2024-01-02T00:00:00Z"}}}' >state.json
	run -0 --separate-stderr "$TAP" --config tap.json --state state.json
	out_file got.jsonl
	run -0 jq -c 'select(.stream == "people" and .type == "RECORD") | .record.id' got.jsonl
	assert_output '"2"
"3"'
	run -0 jq -c 'select(.type == "STATE") | .value' got.jsonl
	assert_output '{"bookmarks":{"people":{"replication_key":"updated_at","replication_key_value":"2024-01-03T00:00:00Z"}}}
{"bookmarks":{"people":{"replication_key":"updated_at","replication_key_value":"2024-01-03T00:00:00Z"}}}'
	# the stream without a replication key is extracted in full
	run -0 jq -c 'select(.stream == "pets" and .type == "RECORD") | .record.pet' got.jsonl
	assert_output '"rex"
"tom"'
}

@test "--state past every row keeps the bookmark and prints no record" {
	echo '{"bookmarks": {"people": {"replication_key": "updated_at", "replication_key_value": "2025-01-01T00:00:00Z"}}}' >state.json
	one_file_config people people.csv ', "replication_key": "updated_at"'
	run -0 --separate-stderr "$TAP" --config one.json --state state.json
	assert_equal "${#lines[@]}" 2
	assert_line --index 1 '{"type":"STATE","value":{"bookmarks":{"people":{"replication_key":"updated_at","replication_key_value":"2025-01-01T00:00:00Z"}}}}'
}

@test "--state keeps other streams' bookmarks and other members untouched" {
	cat >state.json <<-'EOF'
	{"currently_syncing": "elsewhere",
	 "bookmarks": {
	   "ledger": {"replication_key": "seq", "replication_key_value": 12345678901234567891, "v": [1, 2.50]},
	   "people": {"replication_key": "updated_at", "replication_key_value": "2024-01-03T00:00:00Z"},
	   "pets": {"replication_key_value": "kept"}}}
	EOF
	run -0 --separate-stderr "$TAP" --config tap.json --state state.json
	out_file got.jsonl
	run -0 grep -c '"type":"RECORD","stream":"people"' got.jsonl
	assert_output 1
	run -0 tail -n 1 got.jsonl
	assert_output '{"type":"STATE","value":{"currently_syncing":"elsewhere","bookmarks":{"ledger":{"replication_key":"seq","replication_key_value":12345678901234567891,"v":[1,2.50]},"people":{"replication_key":"updated_at","replication_key_value":"2024-01-03T00:00:00Z"},"pets":{"replication_key_value":"kept"}}}}'
}

@test "--state accepts a whole STATE message" {
	echo '{"type": "STATE", "value": {"bookmarks": {"people": {"replication_key": "updated_at", "replication_key_value": "2024-01-03T00:00:00Z"}}}}' >msg.json
	run -0 --separate-stderr "$TAP" --config tap.json --state msg.json
	run -0 jq -c 'select(.type == "RECORD" and .stream == "people") | .record.id' <(printf '%s\n' "$output")
	assert_output '"2"'
}

@test "--state: invalid JSON or shape is exit 2" {
	printf '{"bookmarks": \n  nope}' >bad.json
	run -2 --separate-stderr "$TAP" --config tap.json --state bad.json
	assert_equal "$stderr" "dataspoc-tap-csv: state 'bad.json': line 2, column 3: unexpected character"
	assert_output ""
	echo '{"bookmarks": []}' >bad.json
	run -2 --separate-stderr "$TAP" --config tap.json --state bad.json
	assert_equal "$stderr" "dataspoc-tap-csv: state 'bad.json': \"bookmarks\" is not an object"
	echo '[1]' >bad.json
	run -2 --separate-stderr "$TAP" --config tap.json --state bad.json
	assert_equal "$stderr" "dataspoc-tap-csv: state 'bad.json': not a JSON object"
	run -2 --separate-stderr "$TAP" --config tap.json --state nostate.json
	assert_equal "$stderr" "dataspoc-tap-csv: state 'nostate.json': No such file or directory"
}

@test "a bookmark on another column is ignored with a warning" {
	echo '{"bookmarks": {"people": {"replication_key": "id", "replication_key_value": "9"}}}' >state.json
	run -0 --separate-stderr "$TAP" --config tap.json --state state.json
	assert_equal "$stderr" "dataspoc-tap-csv: warning: state 'state.json': people was bookmarked on 'id', not 'updated_at': extracting every row"
	run -0 grep -c '"type":"RECORD","stream":"people"' <(printf '%s\n' "$output")
	assert_output 3
}

@test "a STATE every 10,000 records keeps the bookmark the stream started with" {
	awk 'BEGIN { print "id,seq"; for (i = 25000; i >= 1; i--) printf "%d,%06d\n", i, i }' >many.csv
	one_file_config many many.csv ', "replication_key": "seq"'
	echo '{"bookmarks": {"many": {"replication_key": "seq", "replication_key_value": "000001"}}}' >state.json
	run -0 --separate-stderr "$TAP" --config one.json --state state.json
	out_file got.jsonl
	run -0 grep -c '"type":"RECORD"' got.jsonl
	assert_output 25000
	run -0 jq -c 'select(.type == "STATE") | .value.bookmarks.many.replication_key_value' got.jsonl
	assert_output '"000001"
"000001"
"025000"'
	run -0 grep -n '"type":"STATE"' got.jsonl
	assert_line --index 0 --regexp '^10002:'
	assert_line --index 1 --regexp '^20003:'
}

@test "--properties: a stream with selected false is skipped" {
	run -0 --separate-stderr "$TAP" --config tap.json --discover
	out_file catalog.json
	jq '(.streams[] | select(.stream == "people") | .metadata[] | select(.breadcrumb == []) | .metadata.selected) = false' catalog.json >props.json
	run -0 --separate-stderr "$TAP" --config tap.json --properties props.json
	out_file got.jsonl
	run -0 jq -r '.stream // "-"' got.jsonl
	assert_output 'pets
pets
pets
-'
	# selected true, or no "selected" at all, extracts the stream
	jq '(.streams[] | .metadata[] | select(.breadcrumb == []) | .metadata.selected) = true' catalog.json >props.json
	run -0 --separate-stderr "$TAP" --config tap.json -p props.json
	assert_equal "${#lines[@]}" 9
	run -0 --separate-stderr "$TAP" --config tap.json --catalog catalog.json
	assert_equal "${#lines[@]}" 9
}

@test "--catalog: streams it does not list are skipped, deselected columns left out" {
	run -0 --separate-stderr "$TAP" --config tap.json --discover
	out_file catalog.json
	jq '.streams |= map(select(.stream == "people")) | (.streams[0].metadata[] | select(.breadcrumb == ["properties", "name"] or .breadcrumb == ["properties", "id"]) | .metadata.selected) = false' catalog.json >cat.json
	run -0 --separate-stderr "$TAP" --config tap.json --catalog cat.json
	out_file got.jsonl
	cat >want.jsonl <<-'EOF'
	{"type":"SCHEMA","stream":"people","schema":{"type":"object","properties":{"id":{"type":["null","string"]},"updated_at":{"type":["null","string"]}}},"key_properties":["id"],"bookmark_properties":["updated_at"]}
	{"type":"RECORD","stream":"people","record":{"id":"1","updated_at":"2024-01-01T00:00:00Z"}}
	{"type":"RECORD","stream":"people","record":{"id":"2","updated_at":"2024-01-03T00:00:00Z"}}
	{"type":"RECORD","stream":"people","record":{"id":"3","updated_at":"2024-01-02T00:00:00Z"}}
	{"type":"STATE","value":{"bookmarks":{"people":{"replication_key":"updated_at","replication_key_value":"2024-01-03T00:00:00Z"}}}}
	EOF
	diff -u want.jsonl got.jsonl
}

@test "a bad catalog is exit 2" {
	echo '{"streams": 1}' >cat.json
	run -2 --separate-stderr "$TAP" --config tap.json --catalog cat.json
	assert_equal "$stderr" "dataspoc-tap-csv: catalog 'cat.json': not a catalog: {\"streams\": [...]} expected"
	run -2 --separate-stderr "$TAP" --config tap.json --properties nocat.json
	assert_equal "$stderr" "dataspoc-tap-csv: properties 'nocat.json': No such file or directory"
}

@test "a full disk on stdout is exit 1 with a message" {
	run -1 --separate-stderr sh -c 'exec "$0" --config tap.json >/dev/full' "$TAP"
	assert_equal "$stderr" "dataspoc-tap-csv: cannot write 'standard output': No space left on device"
	run -1 --separate-stderr sh -c 'exec "$0" --config tap.json --discover >/dev/full' "$TAP"
	assert_equal "$stderr" "dataspoc-tap-csv: cannot write 'standard output': No space left on device"
}

@test "--about prints name, description and capabilities as JSON" {
	run -0 --separate-stderr "$TAP" --about
	out_file about.json
	run -0 jq -c '[.name, .capabilities, (.description | length > 0), (.settings.properties | keys)]' about.json
	assert_output '["dataspoc-tap-csv",["discover","catalog","properties","state"],true,["csv_files_definition","files"]]'
}

@test "--help, --version, and bad usage" {
	run -0 --separate-stderr "$TAP" --help
	assert_line --index 0 'usage: dataspoc-tap-csv [-d] -c config [-s state] [-p properties | --catalog catalog]'
	assert_output --partial '--discover'
	assert_equal "$stderr" ""
	run -0 --separate-stderr "$TAP" --version
	assert_output --regexp '^dataspoc-tap-csv [0-9]+\.[0-9]+'

	run -2 --separate-stderr "$TAP"
	assert_equal "$stderr" "dataspoc-tap-csv: --config is required
usage: dataspoc-tap-csv [-d] -c config [-s state] [-p properties | --catalog catalog]"
	assert_output ""
	run -2 --separate-stderr "$TAP" --config tap.json --bogus
	assert_equal "$stderr" "dataspoc-tap-csv: unknown option '--bogus'
usage: dataspoc-tap-csv [-d] -c config [-s state] [-p properties | --catalog catalog]"
	assert_output ""
	run -2 --separate-stderr "$TAP" --config tap.json extra
	assert_equal "$stderr" "dataspoc-tap-csv: unexpected argument 'extra'
usage: dataspoc-tap-csv [-d] -c config [-s state] [-p properties | --catalog catalog]"
	run -2 --separate-stderr "$TAP" --config
	assert_equal "${stderr_lines[0]}" "dataspoc-tap-csv: option '--config' needs an argument"
	run -2 --separate-stderr "$TAP" --config tap.json --catalog a.json --properties b.json
	assert_equal "${stderr_lines[0]}" "dataspoc-tap-csv: --catalog and --properties are exclusive"
}

@test "the sample files extract to 20 customers and 50 orders" {
	cat >sample.json <<-EOF
	{"files": [
	  {"entity": "customers", "path": "$SAMPLE/customers.csv", "keys": ["id"], "replication_key": "updated_at"},
	  {"entity": "orders", "path": "$SAMPLE/orders.csv", "keys": ["id"], "replication_key": "updated_at"}
	]}
	EOF
	run -0 --separate-stderr "$TAP" --config sample.json
	out_file got.jsonl
	run -0 jq -c -s 'map(select(.type == "RECORD")) | group_by(.stream) | map([.[0].stream, length])' got.jsonl
	assert_output '[["customers",20],["orders",50]]'
	run -0 jq -r 'select(.type == "RECORD" and .stream == "customers" and .record.id == "4") | .record.name' got.jsonl
	assert_output 'Patrick "Paddy" O'"'"'Brien'
	run -0 jq -c 'select(.type == "STATE") | .value.bookmarks | map_values(.replication_key_value)' got.jsonl
	assert_line --index 1 '{"customers":"2024-01-22T19:15:00Z","orders":"2024-02-22T10:50:00Z"}'
}

@test "a row that never ends (/dev/zero, no newline) stops at the documented maximum, naming the file and line; memory stays near it" {
	one_file_config zero /dev/zero
	run -1 --separate-stderr /usr/bin/time -f 'maxrss %M' timeout 60 "$TAP" --config one.json
	assert_equal "$(sed -n 1p <<<"$stderr")" "dataspoc-tap-csv: /dev/zero:1: a row over 256 MiB (the most a row may hold)"
	# (KiB) well under what an unbounded row reaches before the limit of a machine
	[ "$(sed -n 's/^maxrss //p' <<<"$stderr")" -lt $((700 * 1024)) ]
	{ printf 'a,b\n1,2\n3,'; head -c $((257 * 1024 * 1024)) /dev/zero | tr '\0' x; } >long.csv
	one_file_config long long.csv
	run -1 --separate-stderr timeout 60 "$TAP" --config one.json
	assert_equal "$stderr" "dataspoc-tap-csv: long.csv:3: a row over 256 MiB (the most a row may hold)"
}

@test "a header of 200,000 columns is read in linear time; a column twice is still named" {
	awk 'BEGIN { n = 200000; for (i = 1; i <= n; i++) printf "c%d%s", i, (i < n ? "," : "\n");
		for (i = 1; i <= n; i++) printf "%d%s", i, (i < n ? "," : "\n") }' >wide.csv
	one_file_config wide wide.csv
	# (timed alone: bats' run is slow with a 10 MB line; quadratic took > 30 s)
	local t0=$SECONDS
	timeout 60 "$TAP" --config one.json >wide.out
	[ $((SECONDS - t0)) -le 10 ]
	assert_equal "$(jq -c '.record.c200000 // empty' wide.out)" '"200000"'
	{ printf 'a,b,c,b,a\n1,2,3,4,5\n'; } >twice.csv
	one_file_config twice twice.csv
	run -1 --separate-stderr "$TAP" --config one.json
	assert_equal "$stderr" "dataspoc-tap-csv: twice.csv:1: column 'b' appears twice"
}
