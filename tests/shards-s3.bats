#!/usr/bin/env bats
# Sharded runs (docs/SCALE.md) on s3:// (s3rver on 127.0.0.1, what landed
# read back with awscli and DuckDB).  s3rver ignores If-None-Match: on it a
# sharded run is refused; through tests/servers/s3_fault_proxy.js, which
# answers a create of an existing key 412 as S3 does, it runs: N shards
# staged in the bucket, then one commit.

load helpers/common
load helpers/s3

use_s3_bucket

# A pipeline of tap-many's 12 streams, Parquet.
many_pipeline() {	# NAME
	{
		printf 'source:\n  tap: tap-many\n  config: {x: 1}\n'
		printf '  streams: [s01, s02, s03, s04, s05, s06, s07, s08, s09, s10, s11, s12]\n'
		printf 'destination:\n'
		bucket_yaml
		printf '  format: parquet\n'
		printf 'incremental:\n  enabled: true\n'
	} >"$DATASPOC_PIPE_HOME/pipelines/$1.yaml"
}

# Every row of the bucket's Parquet files, read by DuckDB: "stream id" a line, sorted.
lake() {
	local files
	s3_sync || return 1
	files=$(find "$S3_MIRROR" -path "$S3_MIRROR/.dataspoc" -prune -o -name '*.parquet' -print | sort)
	[ -n "$files" ] || return 0
	# shellcheck disable=SC2086
	node "$BATS_TEST_DIRNAME/clients/parquet/duckdb-rows.mjs" $files |
		jq -r '"\(.stream) \(.id)"' | sort
}

@test "s3 shards: s3rver ignores conditional creates: a sharded run is refused and touches nothing" {
	many_pipeline wide
	run -2 dataspoc-pipe run wide --shards 3
	assert_output --partial "ignores conditional creates: sharded runs need them"
	run -0 bucket_keys
	assert_output ""
}

@test "s3 shards: three shards staged in the bucket, then one commit of every row" {
	s3_proxy s3dir="$S3_DIR" conditional
	export AWS_ENDPOINT_URL=$PROXY_ENDPOINT
	many_pipeline wide
	run -0 --separate-stderr dataspoc-pipe run wide --plan --shards 3
	local id=$output
	run -0 bucket_exists ".dataspoc/staging/wide/$id/shards/plan.json"
	# a run beside it is refused by the store's lock
	run -75 dataspoc-pipe run wide
	local shard
	for shard in 0 1 2; do
		run -0 dataspoc-pipe run wide --shard "$shard/3" --run-id "$id"
		assert_line --regexp "^Staged: shard $shard/3 of run $id \\([0-9]+ records\\)$"
	done
	# each shard's plan and files in the run's staging; nothing published
	run -0 bucket_keys ".dataspoc/staging/wide/$id/shards/"
	[ "$(grep -c -E '^\.dataspoc/staging/wide/[^/]+/shards/[0-2]\.json$' <<<"$output")" -eq 3 ]
	[ "$(grep -c -E '^\.dataspoc/staging/wide/[^/]+/shards/[0-2]-[^/]+/.*\.parquet$' <<<"$output")" -eq 12 ]
	[ -z "$(bucket_files)" ]
	run -1 bucket_exists .dataspoc/state/wide/state.json
	run -0 dataspoc-pipe commit wide --run-id "$id"
	assert_line "Done! 60 records in 12 stream(s)"
	run -0 lake
	[ "${#lines[@]}" -eq 60 ]
	[ "$(printf '%s\n' "${lines[@]}" | sort -u | wc -l)" -eq 60 ]
	[ "$(bucket_files | wc -l)" -eq 12 ]
	run -0 bucket_cat .dataspoc/state/wide/state.json
	[ "$(jq -c '.bookmarks | length' <<<"$output")" -eq 12 ]
	run -0 dataspoc-pipe logs --output json wide
	[ "$(grep -c '"status":"success"' <<<"$output")" -eq 1 ]
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	run -1 bucket_exists .dataspoc/state/wide/lock
	# run --shards N on this machine, on the same store: the next rows, once
	run -0 dataspoc-pipe run wide --shards 3
	run -0 lake
	[ "${#lines[@]}" -eq 120 ]
	[ "$(printf '%s\n' "${lines[@]}" | sort -u | wc -l)" -eq 120 ]
}
