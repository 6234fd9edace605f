#!/usr/bin/env bats
# pipe-mcp, the MCP server (issue 17): driven by the official MCP SDK client
# (tests/clients/mcp/client.mjs: Client over StdioClientTransport), and by raw lines
# for the requests no SDK would send.

load helpers/common

CLIENT=$BATS_TEST_DIRNAME/clients/mcp/client.mjs
INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}'
INITIALIZED='{"jsonrpc":"2.0","method":"notifications/initialized"}'

setup() {
	pipe_setup
	export PIPE_MCP=$PIPE_BIN/pipe-mcp
	export PIPE_MCP_STDERR=$BATS_TEST_TMPDIR/mcp.err
	export PIPE_MCP_ARGS=
	use_tap tap-orders
	{
		printf '{"type":"SCHEMA","stream":"orders","schema":{"properties":{"id":{"type":"integer"}}},"key_properties":["id"]}\n'
		printf '{"id":1}\n{"id":2}\n{"id":3}\n' | singer_records orders
		printf '{"type":"STATE","value":{"bookmark":3}}\n'
	} >"$FAKE_DIR/tap-orders/out"
	write_pipeline orders tap-orders true
}

teardown() {
	pipe_teardown
	# (the SDK's client does not look at the server's exit: its stderr says
	# what ASan and UBSan found)
	[ ! -e "$PIPE_MCP_STDERR" ] || run -1 grep -e 'Sanitizer' -e 'runtime error' "$PIPE_MCP_STDERR"
}

# mcp STEP...: one JSON line per step (client.mjs says which steps there are).
mcp() {
	node "$CLIENT" "$@"
}

# raw LINE...: the lines on pipe-mcp's stdin, its stdout in $output (its
# stderr appended to $PIPE_MCP_STDERR).
raw() {
	run -0 --separate-stderr sh -c 'printf "%s\n" "$@" | "$PIPE_MCP" 2>>"$PIPE_MCP_STDERR"' sh "$@"
}

# answer ID: the message of $output answering request ID.
answer() {
	jq -c "select(.id == $1)" <<<"$output"
}

# steps STEP...: mcp's lines kept in $STEPS, for step.
steps() {
	STEPS=$(mcp "$@")
}

# step N: the Nth line of $STEPS (1-based).
step() {
	sed -n "${1}p" <<<"$STEPS"
}

# The pipeline file for secrets: an inline tap config holding some.
secret_pipeline() {
	cat >"$DATASPOC_PIPE_HOME/pipelines/secret.yaml" <<-EOF
	source:
	  tap: tap-orders
	  config:
	    host: db.example.com
	    user: app
	    password: hunter2
	    api_key: k-abc123
	    nested:
	      auth_token: tok-999
	      port: 5432
	    url: postgres://app:s3cr3t-pw@db.example.com/x
	destination:
	  bucket: $(bucket_url)
	  format: jsonl
	EOF
}

# No secret of secret_pipeline (or of the tap's config file) in file $1.
no_secret_in() {
	run grep -F -e hunter2 -e k-abc123 -e tok-999 -e s3cr3t-pw -e file-pass-77 "$1"
	assert_failure 1
}

# --- the session ---------------------------------------------------------------

@test "tools/list: the Python tool's seven tools, each with an inputSchema" {
	run -0 mcp '{"tools":true}'
	run -0 jq -r '.tools[].name' <<<"$output"
	assert_output "list_pipelines
pipeline_config
run_pipeline
pipeline_status
pipeline_logs
show_manifest
validate_pipeline"
	run -0 mcp '{"tools":true}'
	run -0 jq -e '.tools | all(.inputSchema.type == "object" and (.description | length > 0))' <<<"$output"
	run -0 jq -c '.tools[] | select(.name == "run_pipeline") | [.inputSchema.required, .inputSchema.properties.full.type, .annotations.readOnlyHint]' <<<"$(mcp '{"tools":true}')"
	assert_output '[["name"],"boolean",false]'
	run -0 jq -c '.tools[] | select(.name == "show_manifest") | .inputSchema.required' <<<"$(mcp '{"tools":true}')"
	assert_output '["bucket"]'
}

@test "initialize answers the client's protocol version when it is supported, else the latest" {
	raw "$INIT"
	run -0 jq -r '.result.protocolVersion' <<<"$output"
	assert_output 2025-06-18
	raw '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}'
	run -0 jq -r '.result.protocolVersion' <<<"$output"
	assert_output 2024-11-05
	raw '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}'
	answer=$output
	run -0 jq -r '.result.protocolVersion' <<<"$answer"
	assert_output 2025-11-25
	run -0 jq -c '[.result.serverInfo.name, .result.capabilities.tools, .result.capabilities.resources.subscribe]' <<<"$answer"
	assert_output '["dataspoc-pipe",{"listChanged":false},false]'
	# the SDK's client (the latest version) gets on with it
	run -0 mcp '{"info":true}'
	run -0 jq -r '.serverVersion.name' <<<"$output"
	assert_output dataspoc-pipe
}

@test "structuredContent only for the versions that have it (2025-06-18 on)" {
	raw "$INIT" '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_pipelines"}}'
	run -0 jq -c '.result.structuredContent' <<<"$(answer 1)"
	assert_output '{"pipelines":["orders"]}'
	raw "${INIT/2025-06-18/2025-03-26}" '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_pipelines"}}'
	run -0 jq -c '[.result.structuredContent, .result.content[0].text]' <<<"$(answer 1)"
	assert_output '[null,"orders"]'
}

@test "ping is answered, before and after initialize" {
	raw '{"jsonrpc":"2.0","id":"p1","method":"ping"}' "$INIT" '{"jsonrpc":"2.0","id":"p2","method":"ping"}'
	run -0 jq -c 'select(.id != 0)' <<<"$output"
	assert_output '{"jsonrpc":"2.0","id":"p1","result":{}}
{"jsonrpc":"2.0","id":"p2","result":{}}'
}

# --- the tools ---------------------------------------------------------------

@test "list_pipelines and the resource pipe://pipelines" {
	write_pipeline alpha tap-orders false
	printf 'source: [\n' >"$DATASPOC_PIPE_HOME/pipelines/broken.yaml"
	steps '{"call":"list_pipelines"}' '{"resources":true}' '{"read":"pipe://pipelines"}'
	run -0 jq -c '[.content[0].text, .structuredContent.pipelines, .isError]' <<<"$(step 1)"
	assert_output '["alpha\nbroken\norders",["alpha","broken","orders"],false]'
	run -0 jq -c '.resources | map([.uri, .mimeType])' <<<"$(step 2)"
	assert_output '[["pipe://pipelines","application/json"]]'
	run -0 jq -r '.contents[0].uri, .contents[0].mimeType' <<<"$(step 3)"
	assert_output "pipe://pipelines
application/json"
	run -0 jq -c '.contents[0].text | fromjson' <<<"$(step 3)"
	assert_output "[{\"name\":\"alpha\",\"tap\":\"tap-orders\",\"bucket\":\"$(bucket_url)\"},{\"name\":\"broken\",\"tap\":\"error\",\"bucket\":\"error\"},{\"name\":\"orders\",\"tap\":\"tap-orders\",\"bucket\":\"$(bucket_url)\"}]"
}

@test "list_pipelines with none: the Python tool's words" {
	rm "$DATASPOC_PIPE_HOME/pipelines/orders.yaml"
	run -0 mcp '{"call":"list_pipelines"}'
	run -0 jq -c '[.content[0].text, .structuredContent.pipelines]' <<<"$output"
	assert_output '["No pipelines configured.",[]]'
}

@test "run_pipeline lands the records with progress; status, logs, manifest and validate read them" {
	steps '{"call":"run_pipeline","args":{"name":"orders"},"progress":true}' \
		'{"call":"pipeline_status"}' '{"call":"pipeline_logs","args":{"name":"orders"}}' \
		"{\"call\":\"show_manifest\",\"args\":{\"bucket\":\"$(bucket_url)\"}}" \
		'{"call":"validate_pipeline","args":{"name":"orders"}}'
	run -0 jq -c '.result | [.isError, .structuredContent.success, .structuredContent.records, .structuredContent.streams, .structuredContent.error]' <<<"$(step 1)"
	assert_output '[false,true,3,{"orders":3},null]'
	run -0 jq -r '.result.content[0].text' <<<"$(step 1)"
	assert_output "Running: orders
Done! 3 records in 1 stream(s)
  orders: 3"
	# each line of the run, a progress notification, in order
	run -0 jq -c '[.progress[] | .message]' <<<"$(step 1)"
	assert_output '["Running: orders","orders: 3 records...","Done! 3 records in 1 stream(s)","orders: 3"]'
	run -0 jq -c '[.progress[] | .progress]' <<<"$(step 1)"
	assert_output '[1,2,3,4]'
	run -0 table_data raw/orders/orders
	assert_output '{"id":1}
{"id":2}
{"id":3}'

	run -0 jq -c '.structuredContent.pipelines | map([.name, .status, .records])' <<<"$(step 2)"
	assert_output '[["orders","success",3]]'
	run -0 jq -c '.structuredContent | [.pipeline, .status, .total_records, .run_id == "'"$(run_ids orders)"'"]' <<<"$(step 3)"
	assert_output '["orders","success",3,true]'
	run -0 jq -c '.content[0].text | fromjson | .status' <<<"$(step 3)"
	assert_output '"success"'
	run -0 jq -c '.structuredContent.tables | to_entries | map([.key, .value.pipeline, .value.stats.total_rows])' <<<"$(step 4)"
	assert_output '[["orders/orders","orders",3]]'
	run -0 jq -c '.structuredContent | [.pipeline, .ok, .bucket_ok, .tap_ok, .errors, (.checks | map(.check))]' <<<"$(step 5)"
	assert_output '["orders",true,true,true,[],["config","tap","source","bucket","secrets","placeholders"]]'
}

@test "show_manifest takes a bucket as a pipeline's destination.bucket: ~/lake is the home's, s3:/lake is refused" {
	run -0 mcp '{"call":"run_pipeline","args":{"name":"orders"}}'
	cp -R "$BUCKET_DIR" "$HOME/lake"
	steps '{"call":"show_manifest","args":{"bucket":"~/lake"}}' \
		'{"call":"show_manifest","args":{"bucket":"s3:/lake"}}' \
		'{"call":"show_manifest","args":{"bucket":"file:lake"}}'
	run -0 jq -c '[.isError, (.structuredContent.tables | keys)]' <<<"$(step 1)"
	assert_output '[false,["orders/orders"]]'
	run -0 jq -c '[.isError, (.content[0].text | test("bucket .s3:/lake. is not a valid URL .*az://container"))]' <<<"$(step 2)"
	assert_output '[true,true]'
	run -0 jq -c '[.isError, (.content[0].text | test("bucket .file:lake. is not a valid URL"))]' <<<"$(step 3)"
	assert_output '[true,true]'
}

@test "pipeline_status: a pipeline that cannot be read says why, and a failure its error (#29 item 15)" {
	write_pipeline nobucket tap-orders true
	echo file >"$BATS_TEST_TMPDIR/afile"
	sed -i "s|^  bucket: .*|  bucket: $BATS_TEST_TMPDIR/afile/x|" "$DATASPOC_PIPE_HOME/pipelines/nobucket.yaml"
	echo 3 >"$FAKE_DIR/tap-orders/exit"
	run -0 mcp '{"call":"run_pipeline","args":{"name":"orders"}}' '{"call":"pipeline_status"}'
	run -0 jq -c 'select(has("structuredContent") and (.structuredContent | has("pipelines"))) |
		.structuredContent.pipelines | map([.name, .status, .error])' <<<"$output"
	assert_regex "$output" '^\[\["nobucket","error","[^"]*afile/x[^"]*: Not a directory"\],\["orders","failure","tap-orders exited with status 3"\]\]$'
}

@test "run_pipeline: incremental from the saved state, full ignores it" {
	run -0 mcp '{"call":"run_pipeline","args":{"name":"orders"}}' \
		'{"call":"run_pipeline","args":{"name":"orders"}}'
	run -0 cat "$FAKE_DIR/tap-orders/state-in"
	assert_output '{"bookmark":3}'
	grep -qx -- --state "$FAKE_DIR/tap-orders/argv"
	run -0 mcp '{"call":"run_pipeline","args":{"name":"orders","full":true}}'
	run -0 jq -c '.structuredContent | [.success, .full]' <<<"$output"
	assert_output '[true,true]'
	run -1 grep -qx -- --state "$FAKE_DIR/tap-orders/argv"
	run -0 run_ids orders
	assert_equal "$(wc -l <<<"$output")" 3
}

@test "a failed run is a tool result with isError, the driver's reason, and no secret" {
	PIPELINE_CONFIG=$BATS_TEST_TMPDIR/tap.json
	printf '{"host":"db","password":"file-pass-77"}\n' >"$PIPELINE_CONFIG"
	chmod 600 "$PIPELINE_CONFIG"
	write_pipeline orders tap-orders true
	printf 'login failed: password file-pass-77 refused\n' >"$FAKE_DIR/tap-orders/stderr"
	echo 3 >"$FAKE_DIR/tap-orders/exit"
	run -0 mcp '{"call":"run_pipeline","args":{"name":"orders"}}'
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/answer"
	run -0 jq -c '[.isError, .structuredContent.success, .structuredContent.exit_status, .structuredContent.error]' <"$BATS_TEST_TMPDIR/answer"
	assert_output '[true,false,1,"run '"'orders'"' failed: tap-orders exited with status 3"]'
	# nothing landed, three records read: as the terminal, logs and status say (#29 item 5)
	run -0 jq -c '.structuredContent | [.records, .records_read]' <"$BATS_TEST_TMPDIR/answer"
	assert_output '[0,3]'
	run -0 mcp '{"call":"pipeline_logs","args":{"name":"orders"}}' '{"call":"pipeline_status"}'
	run -0 jq -c '.structuredContent | if has("pipelines") then [.pipelines[0].records, .pipelines[0].records_read] else [.total_records, .records_read] end' <<<"$output"
	assert_output '[0,3]
[0,3]'
	run -0 jq -r '.content[0].text' <"$BATS_TEST_TMPDIR/answer"
	assert_line "dataspoc-pipe: run 'orders' failed: tap-orders exited with status 3"
	assert_line --partial "login failed: password *** refused"
	no_secret_in "$BATS_TEST_TMPDIR/answer"
	run -0 bucket_files
	assert_output ""
}

@test "pipeline_config masks passwords, keys and tokens, as the project knows them" {
	secret_pipeline
	run -0 mcp '{"call":"pipeline_config","args":{"name":"secret"}}'
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/answer"
	no_secret_in "$BATS_TEST_TMPDIR/answer"
	run -0 jq -c '.structuredContent.source.config' <"$BATS_TEST_TMPDIR/answer"
	assert_output '{"host":"db.example.com","user":"app","password":"***","api_key":"***","nested":{"auth_token":"***","port":5432},"url":"postgres://app:***@db.example.com/x"}'
	run -0 jq -c '.structuredContent | [.name, .source.tap, .destination.bucket, .destination.format, .incremental.enabled]' <"$BATS_TEST_TMPDIR/answer"
	assert_output "[\"secret\",[\"tap-orders\"],\"$(bucket_url)\",\"jsonl\",false]"
	# the text is the same JSON
	run -0 jq -c '(.content[0].text | fromjson) == .structuredContent' <"$BATS_TEST_TMPDIR/answer"
	assert_output true
	# pipe-mcp -p, by hand, prints the same
	run -0 --separate-stderr pipe-mcp -p secret
	run -0 jq -c . <<<"$output"
	assert_equal "$output" "$(jq -c .structuredContent <"$BATS_TEST_TMPDIR/answer")"
}

@test "pipeline_config with a source.config file shows its path, never its secrets" {
	PIPELINE_CONFIG=$BATS_TEST_TMPDIR/tap.json
	printf '{"password":"file-pass-77"}\n' >"$PIPELINE_CONFIG"
	write_pipeline orders tap-orders true
	run -0 mcp '{"call":"pipeline_config","args":{"name":"orders"}}'
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/answer"
	no_secret_in "$BATS_TEST_TMPDIR/answer"
	run -0 jq -r '.structuredContent.source.config' <"$BATS_TEST_TMPDIR/answer"
	assert_output "$PIPELINE_CONFIG"
}

@test "the secrets of the tap's config are masked in every tool's answer" {
	secret_pipeline
	printf 'connecting as app with hunter2 (token tok-999)\n' >"$FAKE_DIR/tap-orders/stderr"
	echo 1 >"$FAKE_DIR/tap-orders/exit"
	steps '{"call":"run_pipeline","args":{"name":"secret"},"progress":true}' \
		'{"call":"pipeline_logs","args":{"name":"secret"}}' '{"read":"pipe://pipelines"}' \
		'{"call":"validate_pipeline","args":{"name":"secret"}}'
	printf '%s\n' "$STEPS" >"$BATS_TEST_TMPDIR/answers"
	no_secret_in "$BATS_TEST_TMPDIR/answers"
	run -0 jq -r '.result.content[0].text' <<<"$(step 1)"
	assert_line --partial "connecting as app with *** (token ***)"
	no_secret_in "$PIPE_MCP_STDERR"
}

@test "credential-shaped parts of any config value and the environment's credentials: masked in run_pipeline, its progress and pipeline_logs" {
	local key='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==' sig='Zx9%2Bq3SASsig%3D'
	cat >"$DATASPOC_PIPE_HOME/pipelines/azsec.yaml" <<-EOF
	source:
	  tap: tap-orders
	  config:
	    conn: "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=$key;EndpointSuffix=core.windows.net"
	    sas: "sv=2022-11-02&ss=b&sig=$sig"
	destination:
	  bucket: $(bucket_url)
	  format: jsonl
	EOF
	{
		echo "opening DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=$key;EndpointSuffix=x"
		echo "the key alone: $key"
		echo "GET https://acct.blob.core.windows.net/c?sv=2022-11-02&sig=$sig&sr=c"
		echo "env: AzEnvKey-77-QWxhZGRpbjpvcGVu"
	} >"$FAKE_DIR/tap-orders/stderr"
	echo 1 >"$FAKE_DIR/tap-orders/exit"
	AZURE_STORAGE_KEY=AzEnvKey-77-QWxhZGRpbjpvcGVu \
		steps '{"call":"run_pipeline","args":{"name":"azsec"},"progress":true}' \
		'{"call":"pipeline_logs","args":{"name":"azsec"}}'
	printf '%s\n' "$STEPS" >"$BATS_TEST_TMPDIR/answers"
	run grep -F -e "$key" -e "$sig" -e AzEnvKey-77 "$BATS_TEST_TMPDIR/answers" "$PIPE_MCP_STDERR"
	assert_failure 1
	run -0 jq -r '.result.content[0].text' <<<"$(step 1)"
	assert_line --partial "the key alone: ***"
	assert_line --partial "sig=***&sr=c"
	run -0 jq -r '[.progress[] | .message] | join("\n")' <<<"$(step 1)"
	assert_line --partial "AccountKey=***;EndpointSuffix=x"
	# and the grep above can fail
	run grep -F -e "$key" "$FAKE_DIR/tap-orders/stderr"
	assert_success
}

@test "JSON answers are masked too: a manifest holding a URL's password" {
	bucket_put .dataspoc/manifest.json <<-'EOF'
	{"version":"1.0","updated_at":"2026-01-01T00:00:00Z","tables":{"pg/orders":{"source":"pg","table":"orders","location":"s3://lake/raw/pg/orders","pipeline":"orders","note":"copied from postgres://app:s3cr3t-pw@db/x","columns":[],"stats":{"total_rows":1}}}}
	EOF
	steps "{\"call\":\"show_manifest\",\"args\":{\"bucket\":\"$(bucket_url)\"}}"
	printf '%s\n' "$STEPS" >"$BATS_TEST_TMPDIR/answer"
	no_secret_in "$BATS_TEST_TMPDIR/answer"
	run -0 jq -r '.structuredContent.tables["pg/orders"].note, (.content[0].text | fromjson | .tables["pg/orders"].stats.total_rows)' <<<"$(step 1)"
	assert_output "copied from postgres://app:***@db/x
1"
}

@test "names are checked: no path tricks, no options, nothing run" {
	for name in ../orders 'a/b' -rf .hidden '' 'orders
x'; do
		arg=$(jq -nc --arg n "$name" '{call: "pipeline_config", args: {name: $n}}')
		run -0 mcp "$arg"
		run -0 jq -r '.error.code' <<<"$output"
		assert_output -- -32602
	done
	run -0 mcp '{"call":"run_pipeline","args":{"name":"../../etc/passwd"}}'
	run -0 jq -r '.error.message' <<<"$output"
	assert_output --partial "invalid pipeline name '../../etc/passwd'"
	run -0 mcp '{"call":"show_manifest","args":{"bucket":"/tmp\nx"}}' '{"call":"show_manifest","args":{"bucket":""}}'
	run -0 jq -r '.error.code' <<<"$output"
	assert_output -- "-32602
-32602"
	[ ! -e "$FAKE_DIR/tap-orders/runs" ]
	bucket_untouched
}

@test "an unknown pipeline: isError with the command's words; a bucket without a manifest: an empty one, as the Python tool answers" {
	steps '{"call":"pipeline_logs","args":{"name":"nope"}}' '{"call":"pipeline_config","args":{"name":"nope"}}' \
		"{\"call\":\"show_manifest\",\"args\":{\"bucket\":\"$BATS_TEST_TMPDIR/empty\"}}" \
		'{"call":"pipeline_logs","args":{"name":"orders"}}'
	run -0 jq -c '[.isError, (.content[0].text | test("nope"))]' <<<"$(step 1)"
	assert_output '[true,true]'
	run -0 jq -c '[.isError, (.content[0].text | test("nope"))]' <<<"$(step 2)"
	assert_output '[true,true]'
	run -0 jq -c '[.isError, .structuredContent]' <<<"$(step 3)"
	assert_output '[false,{"version":"1.0","updated_at":null,"tables":{}}]'
	# a pipeline never run: the Python tool's words
	run -0 jq -c '[.isError, .content[0].text]' <<<"$(step 4)"
	assert_output '[false,"No logs found"]'
	[ ! -e "$BATS_TEST_TMPDIR/empty" ]
}

@test "a cancelled run stops cleanly: nothing published, the state kept, the lock released" {
	: >"$FAKE_DIR/tap-orders/block"
	steps "{\"cancel\":\"run_pipeline\",\"args\":{\"name\":\"orders\"},\"when\":\"$FAKE_DIR/tap-orders/ready\"}" \
		'{"until":"pipeline_logs","args":{"name":"orders"},"field":"status","is":"failure"}' \
		'{"call":"pipeline_status"}'
	run -0 jq -c '[.cancelled, .error.message]' <<<"$(step 1)"
	assert_output '[true,"MCP error -32001: the test cancels it"]'
	run -0 jq -c '.structuredContent | [.status, .error, .total_records, (.records_read | type)]' <<<"$(step 2)"
	assert_output '["failure","interrupted by SIGTERM",0,"number"]'
	# the session went on
	run -0 jq -c '.structuredContent.pipelines[0].status' <<<"$(step 3)"
	assert_output '"failure"'
	wait_until no_process tap-orders
	wait_until eval '! bucket_exists .dataspoc/state/orders/lock'
	run -0 bucket_files
	assert_output ""
	run -1 bucket_exists .dataspoc/state/orders/state.json
	grep -q 'run_pipeline: cancelled by the client' "$PIPE_MCP_STDERR"
}

@test "requests are answered while a run goes on; the end of stdin waits for its answer" {
	: >"$FAKE_DIR/tap-orders/block"
	mkfifo "$BATS_TEST_TMPDIR/in"
	"$PIPE_MCP" <"$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/out" 2>"$PIPE_MCP_STDERR" &
	BG_PIDS="$BG_PIDS $!"
	server=$!
	exec 9>"$BATS_TEST_TMPDIR/in"
	printf '%s\n' "$INIT" "$INITIALIZED" \
		'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_pipeline","arguments":{"name":"orders"}}}' >&9
	wait_for "$FAKE_DIR/tap-orders/ready"
	printf '%s\n' '{"jsonrpc":"2.0","id":2,"method":"ping"}' \
		'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"pipeline_status"}}' >&9
	exec 9>&-
	wait_until grep -q '"id":3' "$BATS_TEST_TMPDIR/out"
	run -1 grep -q '"id":1' "$BATS_TEST_TMPDIR/out"
	alive "$server"
	: >"$FAKE_DIR/tap-orders/release"
	wait "$server"
	run -0 jq -c 'select(.id == 1) | .result.structuredContent.success' "$BATS_TEST_TMPDIR/out"
	assert_output true
	run -0 jq -c '.id' "$BATS_TEST_TMPDIR/out"
	assert_output '0
2
3
1'
}

@test "SIGTERM stops the runs in flight cleanly, then the server" {
	: >"$FAKE_DIR/tap-orders/block"
	mkfifo "$BATS_TEST_TMPDIR/in"
	"$PIPE_MCP" <"$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/out" 2>"$PIPE_MCP_STDERR" &
	BG_PIDS="$BG_PIDS $!"
	server=$!
	exec 9>"$BATS_TEST_TMPDIR/in"
	printf '%s\n' "$INIT" \
		'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_pipeline","arguments":{"name":"orders"}}}' >&9
	wait_for "$FAKE_DIR/tap-orders/ready"
	kill -TERM "$server"
	rc=0
	wait "$server" || rc=$?
	assert_equal "$rc" 143
	exec 9>&-
	run -0 jq -c 'select(.id == 1) | [.result.isError, .result.structuredContent.error]' "$BATS_TEST_TMPDIR/out"
	assert_output "[true,\"run 'orders' failed: interrupted by SIGTERM\"]"
	wait_until no_process tap-orders
	run -1 bucket_exists .dataspoc/state/orders/lock
	run -0 bucket_files
	assert_output ""
}

@test "bad requests get the JSON-RPC error of their kind" {
	raw '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' "$INIT" 'not json' '{"jsonrpc":"2.0","id":2,' '[]' \
		'[{"jsonrpc":"2.0","id":3,"method":"ping"}]' '42' \
		'{"jsonrpc":"1.0","id":4,"method":"ping"}' '{"jsonrpc":"2.0","id":5}' \
		'{"jsonrpc":"2.0","id":6,"method":7}' '{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}' \
		'{"jsonrpc":"2.0","id":7,"method":"tools/lists"}' \
		'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"arguments":{}}}' \
		'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"drop_tables"}}' \
		'{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"run_pipeline","arguments":{"name":"orders","full":"yes"}}}' \
		'{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"run_pipeline","arguments":{}}}' \
		'{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"pipeline_status","arguments":{"all":true}}}' \
		'{"jsonrpc":"2.0","id":13,"method":"tools/call","params":["run_pipeline"]}' \
		'{"jsonrpc":"2.0","id":14,"method":"resources/read","params":{"uri":"file:///etc/passwd"}}' \
		'{"jsonrpc":"2.0","id":15,"method":"tools/list","params":{"cursor":"x"}}' \
		'{"jsonrpc":"2.0","id":16,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}' \
		'{"jsonrpc":"2.0","id":17,"method":"initialize","params":{}}' \
		'{"jsonrpc":"2.0","method":"notifications/unknown"}' \
		'{"jsonrpc":"2.0","method":"no/such/method"}'
	raw_output=$output
	# every line on stdout is a JSON-RPC message
	run -0 jq -e -s 'all(.jsonrpc == "2.0")' <<<"$raw_output"
	errors() {
		jq -c 'select(.error) | [.id, .error.code]' <<<"$raw_output"
	}
	run -0 errors
	assert_output '[1,-32600]
[null,-32700]
[null,-32700]
[null,-32600]
[null,-32600]
[null,-32600]
[4,-32600]
[5,-32600]
[6,-32600]
[null,-32600]
[7,-32601]
[8,-32602]
[9,-32602]
[10,-32602]
[11,-32602]
[12,-32602]
[13,-32602]
[14,-32002]
[15,-32602]
[16,-32600]
[17,-32602]'
	# notifications get no answer, and nothing ran
	run -0 jq -s 'length' <<<"$raw_output"
	assert_output 22
	[ ! -e "$FAKE_DIR/tap-orders/runs" ]
}

@test "read-only (-r): no run_pipeline" {
	export PIPE_MCP_ARGS=-r
	steps '{"tools":true}' '{"call":"run_pipeline","args":{"name":"orders"}}' '{"info":true}'
	run -0 jq -r '.tools[].name' <<<"$(step 1)"
	refute_line run_pipeline
	assert_line list_pipelines
	run -0 jq -r '.error.message' <<<"$(step 2)"
	assert_output "MCP error -32602: Unknown tool: run_pipeline is disabled (read-only server)"
	run -0 jq -r '.instructions' <<<"$(step 3)"
	assert_output --partial "read-only"
	[ ! -e "$FAKE_DIR/tap-orders/runs" ]
}

@test "pipe-mcp -h, and bad usage" {
	run -0 --separate-stderr pipe-mcp -h
	assert_line --index 0 "usage: pipe-mcp [-hr]"
	assert_line --partial "run_pipeline"
	run -2 --separate-stderr pipe-mcp -x
	assert_stderr "pipe-mcp: invalid option -- 'x'
usage: pipe-mcp [-hr] | -p NAME | -l"
	run -2 --separate-stderr pipe-mcp extra
	run -2 --separate-stderr pipe-mcp -p orders -l
	run -2 --separate-stderr pipe-mcp -p nope
	[[ $stderr == *nope.y* ]]
}
