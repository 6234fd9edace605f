#!/usr/bin/env bats
# az://: the whole-run scenarios of dataspoc-pipe.bats again, on Azure Blob
# Storage's emulator started here (Azurite on 127.0.0.1), what landed read
# back with Microsoft's @azure/storage-blob and zstd; then what only Azure
# has: its credentials (connection string, account key, SAS), listings of
# many pages, block uploads, the conditional create, errors and retries.

load helpers/common
load helpers/pipeline_scenarios
load helpers/azure
load helpers/checkpoint_scenarios

setup_file() {
	azure_start
}

teardown_file() {
	azure_stop
}

setup() {
	pipe_setup
}

teardown() {
	pipe_teardown
}

# --- the local bucket's scenarios, on az:// ------------------------------------------
@test "az: full run: the summary, the layout, every record byte for byte" {
	scenario_full_run
}

@test "az: gzip compression" {
	scenario_compression gzip
}

@test "az: no compression" {
	scenario_compression none
}

@test "az: files roll over at max_file_size" {
	scenario_rollover
}

@test "az: zstd files roll over too, each a whole frame" {
	scenario_rollover_zstd
}

@test "az: state.json is the last STATE value, pretty-printed" {
	scenario_state_pretty
}

@test "az: incremental: the next run gets --state and lands beside the first" {
	scenario_incremental
}

@test "az: --full: the state is kept when it fails, replaced when it succeeds" {
	scenario_full_flag
}

@test "az: incremental disabled: a run replaces the stream's snapshot" {
	scenario_snapshot_pipeline
}

@test "az: the recorded tap-postgres output, run 1 then run 2 with its state" {
	scenario_tap_postgres
}

@test "az: the manifest: tables, columns, key properties and stats" {
	scenario_manifest
}

@test "az: a tap that exits 1 halfway changes nothing but the run log" {
	scenario_tap_fails
}

@test "az: malformed line: nothing lands" {
	scenario_malformed '{"type":"RECORD","stream":"orders","record":{"id":9}' \
		'<stdin>:3:53: invalid JSON: unexpected end of input'
}

@test "az: stream names cannot leave their table folder" {
	scenario_stream_names
}

@test "az: kill -9 pipe-tap: the next run finds the bucket as before" {
	scenario_kill_pipe_tap
}

@test "az: kill -9 the tap: the next run finds the bucket as before" {
	scenario_kill_tap
}

@test "az: kill -9 pipe-sink: the next run finds the bucket as before" {
	scenario_kill_pipe_sink
}

@test "az: kill -9 the driver: the next run takes its lock over and cleans up" {
	scenario_kill_driver
}

@test "az: kill -9 pipe-commit mid-commit: the next run finishes the commit" {
	scenario_kill_pipe_commit
}

@test "az: a commit cut short by hand: the next run finishes it" {
	scenario_partial_commit
}

@test "az: a lock left by a dead process on this host is taken over at once" {
	scenario_lock_dead_holder
}

@test "az: a lock held by a live process refuses the run and changes nothing" {
	scenario_lock_live_holder
}

@test "az: a lock from another host is taken over only once expired" {
	scenario_lock_other_host
}

@test "az: two pipelines into one bucket at once: own states, one manifest" {
	scenario_two_pipelines
}

@test "az: config error: nothing written to the bucket" {
	scenario_unknown_key
}


# --- Azure only ------------------------------------------------------------------------

@test "az: what landed is what @azure/storage-blob lists, and zstd reads it back" {
	shop_pipeline
	shop_run
	local rid day
	rid=$(run_ids shop)
	day=$(run_day "$rid")
	azblob keys "$AZ_CONTAINER" raw/ >keys
	expect_file keys <<-EOF
	raw/shop/orders/dt=$day/orders_${rid}_0000.jsonl.zst
	raw/shop/users/dt=$day/users_${rid}_0000.jsonl.zst
	EOF
	bucket_cat "raw/shop/orders/dt=$day/orders_${rid}_0000.jsonl.zst" | zstd -qdc >orders.got
	diff -u orders.jsonl orders.got
	# nothing left in staging, no lock, no pending commit
	run -0 bucket_keys .dataspoc/st
	assert_output ".dataspoc/state/shop/state.json"
	# the manifest names the tables where readers find them
	bucket_cat .dataspoc/manifest.json | jq -r '.tables[].location' | sort >locations
	expect_file locations <<-EOF
	raw/shop/orders
	raw/shop/users
	EOF
}

@test "az: a prefix in the bucket url: az://container/some/prefix" {
	local base=$BUCKET_URL
	BUCKET_URL=$base/lake/zone
	shop_pipeline
	shop_run
	BUCKET_URL=$base
	run -0 bucket_keys lake/zone/raw/
	assert_equal "${#lines[@]}" 2
	assert_line --index 0 --regexp '^lake/zone/raw/shop/orders/dt=[0-9-]+/orders_.*\.jsonl\.zst$'
	run -0 bucket_exists lake/zone/.dataspoc/state/shop/state.json
	run -0 bucket_exists lake/zone/.dataspoc/manifest.json
}

@test "az: credentials by account key: AZURE_STORAGE_ACCOUNT, AZURE_STORAGE_KEY, endpoint_url without the account" {
	unset AZURE_STORAGE_CONNECTION_STRING
	export AZURE_STORAGE_ACCOUNT=$AZ_ACCOUNT AZURE_STORAGE_KEY=$AZ_KEY
	# Azurite's path-style url: the account goes into the path by itself
	shop_pipeline "endpoint_url: http://127.0.0.1:$AZ_PORT"
	shop_run
	assert_line --index 1 "Done! 5 records in 2 stream(s)"
	run -0 bucket_files
	assert_equal "${#lines[@]}" 2
}

@test "az: credentials by SAS: AZURE_STORAGE_SAS_TOKEN, publish by Copy Blob with the SAS" {
	local sas
	sas=$(azblob sas "$AZ_CONTAINER")
	unset AZURE_STORAGE_CONNECTION_STRING
	export AZURE_STORAGE_SAS_TOKEN="?$sas"
	shop_pipeline "endpoint_url: $AZ_ENDPOINT"
	shop_run
	assert_line --index 1 "Done! 5 records in 2 stream(s)"
	local rid day
	rid=$(run_ids shop)
	day=$(run_day "$rid")
	bucket_cat "raw/shop/orders/dt=$day/orders_${rid}_0000.jsonl.zst" | zstd -qdc >orders.got
	diff -u orders.jsonl orders.got
	# a second run reads the state back through the SAS
	shop_more
	run -0 --separate-stderr dataspoc-pipe run shop
	assert_line --index 1 "  Incremental mode (using previous checkpoint)"
	# a SAS for another container is refused, and never shown
	export AZURE_STORAGE_SAS_TOKEN=$(azblob sas other-container)
	run -1 --separate-stderr dataspoc-pipe run shop
	assert_regex "$stderr" "cannot [a-z ]+ 'az://$AZ_CONTAINER/[^']*': [A-Za-z]+: HTTP 403 AuthorizationFailure"
	printf '%s\n' "$stderr$output" >said
	run -1 grep -qF -e "sig=" -e "$(printf '%s' "$AZURE_STORAGE_SAS_TOKEN" | sed 's/.*sig=//')" said
}

@test "az: credentials by connection string: AccountName, AccountKey, BlobEndpoint" {
	# (every other test runs so; here the destination's endpoint is absent and
	# the connection string alone says where the account lives)
	export AZURE_STORAGE_CONNECTION_STRING="AccountName=$AZ_ACCOUNT;AccountKey=$AZ_KEY;BlobEndpoint=http://127.0.0.1:$AZ_PORT/$AZ_ACCOUNT"
	shop_pipeline
	shop_run
	assert_line --index 1 "Done! 5 records in 2 stream(s)"
	# one without a key or a SAS is refused before any request
	export AZURE_STORAGE_CONNECTION_STRING="AccountName=$AZ_ACCOUNT;BlobEndpoint=http://127.0.0.1:$AZ_PORT/$AZ_ACCOUNT"
	run -1 --separate-stderr pipe-state show shop
	assert_equal "$stderr" "pipe-state: cannot open bucket 'az://$AZ_CONTAINER': AZURE_STORAGE_CONNECTION_STRING: it gives neither an AccountKey nor a SharedAccessSignature"
}

@test "az: credentials by connection string UseDevelopmentStorage=true: Azurite's account and key, its port from BlobEndpoint" {
	export AZURE_STORAGE_CONNECTION_STRING="UseDevelopmentStorage=true;BlobEndpoint=http://127.0.0.1:$AZ_PORT/devstoreaccount1"
	shop_pipeline
	shop_run
	assert_line --index 1 "Done! 5 records in 2 stream(s)"
}

@test "az: a wrong account key: exit 1, the authentication failure named, the key never shown" {
	shop_pipeline
	local wrong
	wrong=$(printf 'NotTheKeyButLongLikeOne0123456789abcdefNotTheKeyButLongLikeOne01' | base64 -w0)
	export AZURE_STORAGE_CONNECTION_STRING="AccountName=$AZ_ACCOUNT;AccountKey=$wrong;BlobEndpoint=$AZ_ENDPOINT"
	run -1 --separate-stderr dataspoc-pipe run shop
	assert_regex "$stderr" "dataspoc-pipe: run 'shop' failed: cannot [a-z ]+ 'az://$AZ_CONTAINER/[^']*': [A-Za-z]+: HTTP 403 (AuthenticationFailed|AuthorizationFailure): Server failed to authenticate the request\\."
	printf '%s\n' "$stderr$output" >said
	run -1 grep -qF -e "$wrong" -e "$AZ_KEY" -e NotTheKey said
	echo '{"bookmarks":{"orders":{"id":7}}}' >state.in
	run -1 --separate-stderr pipe-state set shop <state.in
	assert_equal "$stderr" "pipe-state: cannot create 'az://$AZ_CONTAINER/.dataspoc/state/shop/lock': PutBlob: HTTP 403 AuthorizationFailure: Server failed to authenticate the request. Make sure the value of the Authorization header is formed correctly including the signature. (credentials from AZURE_STORAGE_CONNECTION_STRING)"
	run -0 azblob keys "$AZ_CONTAINER"
	assert_output ""
}

@test "az: no credentials anywhere: exit 1, one line saying where they are looked for" {
	shop_pipeline
	unset AZURE_STORAGE_CONNECTION_STRING
	run -1 --separate-stderr pipe-state show shop
	assert_equal "$stderr" "pipe-state: cannot open bucket 'az://$AZ_CONTAINER': no Azure credentials: set AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY, or AZURE_STORAGE_SAS_TOKEN"
	export AZURE_STORAGE_KEY='not base64!'
	run -1 --separate-stderr pipe-state show shop
	assert_equal "$stderr" "pipe-state: cannot open bucket 'az://$AZ_CONTAINER': AZURE_STORAGE_KEY is not base64 (an account key as the portal shows it)"
}

@test "az: a missing container: exit 1, ContainerNotFound named" {
	BUCKET_URL=az://no-such-$AZ_CONTAINER
	shop_pipeline
	run -1 --separate-stderr dataspoc-pipe run shop
	assert_equal "$output" "Running: shop"
	assert_regex "$stderr" "cannot (read|write|create|look at|list) 'az://no-such-$AZ_CONTAINER/[^']*': [A-Za-z]+: HTTP 404 ContainerNotFound: The specified container does not exist\\. \\(container 'no-such-$AZ_CONTAINER' of account '$AZ_ACCOUNT' at http://127\\.0\\.0\\.1:$AZ_PORT: create it first, as with 'az storage container create --name no-such-$AZ_CONTAINER'\\)"
}

@test "az: the run lock is a conditional create the service refuses (409) when the lock exists" {
	run -0 --separate-stderr pipe-state probe -b "$BUCKET_URL"
	assert_output "write, read back, list, delete: ok
conditional create: honoured"
	# a live lock put there by another client: the service itself refuses
	# the create (nothing looks first), and nothing is written over it
	shop_pipeline
	lock_json 20260101T000000Z-0ther0 elsewhere.example 1 2026-01-01T00:00:00Z "$LIVE_UNTIL" >lock.json
	bucket_put .dataspoc/state/shop/lock <lock.json
	az_proxy
	export AZURE_STORAGE_CONNECTION_STRING="AccountName=$AZ_ACCOUNT;AccountKey=$AZ_KEY;BlobEndpoint=$PROXY_ENDPOINT/$AZ_ACCOUNT"
	run -75 --separate-stderr dataspoc-pipe run shop
	assert_stderr "dataspoc-pipe: run 'shop' failed: pipeline 'shop' is locked by run 20260101T000000Z-0ther0 (pid 1 on elsewhere.example, since 2026-01-01T00:00:00Z, until ${LIVE_UNTIL}); if that run is gone, use 'pipe-state unlock shop'"
	run -0 grep -c "^forwarded 409 PUT /$AZ_ACCOUNT/$AZ_CONTAINER/.dataspoc/state/shop/lock\$" "$PROXY_LOG"
	assert_output 1
	run -1 grep "^forwarded [0-9]* HEAD /$AZ_ACCOUNT/$AZ_CONTAINER/.dataspoc/state/shop/lock\$" "$PROXY_LOG"
	bucket_cat .dataspoc/state/shop/lock >lock.got
	diff -u lock.json lock.got
	run -0 bucket_files
	assert_output ""
}

@test "az: listings past one page (DATASPOC_PIPE_AZ_PAGE_SIZE=7): every staged file published, every old one replaced" {
	export DATASPOC_PIPE_AZ_PAGE_SIZE=7
	use_tap tap-many
	awk 'BEGIN { pad = sprintf("%1100s", ""); gsub(/ /, "x", pad);
		for (i = 1; i <= 40; i++)
			printf "{\"type\":\"RECORD\",\"stream\":\"t\",\"record\":{\"i\":%d,\"p\":\"%s\"}}\n", i, pad }' \
		>"$FAKE_DIR/tap-many/out"
	write_pipeline many tap-many false "compression: none" "max_file_size: 1KiB"
	run -0 --separate-stderr dataspoc-pipe run many
	assert_line --index 1 "Done! 40 records in 1 stream(s)"
	azblob keys "$AZ_CONTAINER" raw/many/t/ >keys
	run -0 wc -l <keys
	assert_output 40
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	# a snapshot run: the 40 old files (six pages) all go
	printf '{"type":"RECORD","stream":"t","record":{"i":%d}}\n' 1 2 3 >"$FAKE_DIR/tap-many/out"
	run -0 --separate-stderr dataspoc-pipe run many
	assert_line --index 1 "Done! 3 records in 1 stream(s)"
	azblob keys "$AZ_CONTAINER" raw/many/t/ >keys
	run -0 wc -l <keys
	assert_output 1
}

@test "az: a streamed upload in blocks (DATASPOC_PIPE_AZ_BLOCK_SIZE=64KiB): Put Block per block, the blob byte for byte" {
	export DATASPOC_PIPE_AZ_BLOCK_SIZE=64KiB
	use_tap tap-big
	awk 'BEGIN { for (i = 1; i <= 5000; i++)
		printf "{\"i\":\"%07d\",\"pad\":\"%0175d\"}\n", i, i }' >records
	awk '{ printf "{\"type\":\"RECORD\",\"stream\":\"big\",\"record\":%s}\n", $0 }' \
		records >"$FAKE_DIR/tap-big/out"
	run -0 wc -c <records
	assert_output 1000000
	write_pipeline big tap-big true "compression: none"
	run -0 --separate-stderr dataspoc-pipe run big
	assert_line --index 1 "Done! 5,000 records in 1 stream(s)"
	azblob keys "$AZ_CONTAINER" raw/big/ >keys
	run -0 wc -l <keys
	assert_output 1
	# 1,000,000 bytes in blocks of 65,536: 16 blocks, the last one short
	run -0 azblob blocks "$AZ_CONTAINER" "$(cat keys)"
	assert_output 16
	bucket_cat "$(cat keys)" >landed
	cmp records landed
}

@test "az: the service down: exit 1 after bounded retries, the connection refused named" {
	shop_pipeline
	local port
	port=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
	export AZURE_STORAGE_CONNECTION_STRING="AccountName=$AZ_ACCOUNT;AccountKey=$AZ_KEY;BlobEndpoint=http://127.0.0.1:$port/$AZ_ACCOUNT"
	export DATASPOC_PIPE_AZ_RETRIES=2
	run -1 --separate-stderr dataspoc-pipe run shop
	assert_equal "$output" "Running: shop"
	assert_regex "$stderr" "cannot [a-z ]+ 'az://$AZ_CONTAINER/[^']*': [A-Za-z]+: Failed to connect to 127\\.0\\.0\\.1 port $port after [0-9]+ ms: Couldn't connect to server \\(gave up after 3 attempts\\)"
	run -0 bucket_keys
	assert_output ""
}

@test "az: 503 answers and cut connections, then success: the run succeeds, nothing lost" {
	az_proxy reset=2 503=3 503every=4
	shop_pipeline "endpoint_url: $PROXY_ENDPOINT/$AZ_ACCOUNT"
	shop_run
	assert_equal "$output" "Running: shop
Done! 5 records in 2 stream(s)
  orders: 3
  users: 2"
	local rid day
	rid=$(run_ids shop)
	day=$(run_day "$rid")
	bucket_cat "raw/shop/orders/dt=$day/orders_${rid}_0000.jsonl.zst" | zstd -qdc >orders.got
	diff -u orders.jsonl orders.got
	run -0 grep -c '^reset ' "$PROXY_LOG"
	assert_output 2
	run -0 grep -c '^503 ' "$PROXY_LOG"
	[ "$output" -ge 10 ]
	bucket_cat .dataspoc/state/shop/state.json >state.got
	printf '%s\n' "$SHOP_STATE" | diff -u - state.got
}

@test "az: 503 on every attempt: exit 1 after the retries, the state untouched" {
	shop_pipeline
	shop_run
	bucket_snapshot | grep -v ' \.dataspoc/logs/' >before.snap
	az_proxy 503=100000
	export DATASPOC_PIPE_AZ_RETRIES=1
	export AZURE_STORAGE_CONNECTION_STRING="AccountName=$AZ_ACCOUNT;AccountKey=$AZ_KEY;BlobEndpoint=$PROXY_ENDPOINT/$AZ_ACCOUNT"
	shop_more
	run -1 --separate-stderr dataspoc-pipe run shop
	assert_regex "$stderr" "HTTP 503 [A-Za-z]+.* \\(gave up after 2 attempts\\)"
	bucket_snapshot | grep -v ' \.dataspoc/logs/' >after.snap
	diff -u before.snap after.snap
}

@test "az: faults on a seeded schedule (resets before and after the work, 500s, 503s, cut answers): two runs land exactly once" {
	export DATASPOC_PIPE_AZ_RETRIES=10
	az_proxy rate=0.2 seed=17 kinds=reset,resetafter,500,503,truncate
	shop_pipeline "endpoint_url: $PROXY_ENDPOINT/$AZ_ACCOUNT"
	shop_run
	assert_line --index 1 "Done! 5 records in 2 stream(s)"
	shop_more
	run -0 --separate-stderr dataspoc-pipe run shop
	assert_line --index 2 "Done! 2 records in 1 stream(s)"
	# faults of every kind met, the work of some requests done twice
	run -0 grep -c '^fault-resetafter/2' "$PROXY_LOG"
	[ "$output" -ge 1 ]
	run -0 grep -c '^fault-' "$PROXY_LOG"
	[ "$output" -ge 5 ]
	# every record once, the state the last run's, nothing staged or locked
	local k
	for k in $(bucket_files | grep /orders/); do
		bucket_cat "$k" | zstd -qdc
	done >orders.got
	cat orders.jsonl more.jsonl | diff -u - orders.got
	bucket_cat .dataspoc/state/shop/state.json | jq -c . >state.got
	echo '{"bookmarks":{"orders":{"id":5},"users":{"id":"u2"}}}' | diff -u - state.got
	run -0 bucket_keys .dataspoc/st
	assert_output ".dataspoc/state/shop/state.json"
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
}

@test "az: destination.account_name names the account for the key, the endpoint's path gets it" {
	unset AZURE_STORAGE_CONNECTION_STRING AZURE_STORAGE_ACCOUNT
	export AZURE_STORAGE_KEY=$AZ_KEY
	shop_pipeline "endpoint_url: http://127.0.0.1:$AZ_PORT" "account_name: $AZ_ACCOUNT"
	shop_run
	assert_line --index 1 "Done! 5 records in 2 stream(s)"
	run -0 bucket_files
	assert_equal "${#lines[@]}" 2
	# without it, nothing names the account
	shop_pipeline "endpoint_url: http://127.0.0.1:$AZ_PORT"
	run -1 --separate-stderr pipe-state show shop
	assert_equal "$stderr" "pipe-state: invalid bucket 'az://$AZ_CONTAINER': no storage account for the endpoint 'http://127.0.0.1:$AZ_PORT': set AZURE_STORAGE_ACCOUNT or destination.account_name, or give the endpoint as http://host:port/ACCOUNT"
}

@test "az checkpoints: a failed run keeps its checkpoints' records once (their block lists committed), and the next run goes on from there" {
	scenario_ck_fail_resume
}

@test "az checkpoints: kill -9 of the driver after a checkpoint: the next run logs it as failed, every record once" {
	scenario_ck_kill_driver
}
