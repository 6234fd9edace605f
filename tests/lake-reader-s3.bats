#!/usr/bin/env bats
# scripts/lake on an s3:// lake (s3rver on 127.0.0.1), read through pipe-state's
# objects and fetch into its cache (tests/helpers/lake_reader_scenarios.bash).

load helpers/common
load helpers/s3
use_s3_lake
load helpers/lake_reader_scenarios

@test "lake reader s3: tables, rows, --sql, a second read from the cache, new and changed objects fetched, gone ones dropped" {
	SECRET=$AWS_SECRET_ACCESS_KEY
	scenario_reader_remote
}

@test "lake reader s3: a missing bucket, a refused key, s3:/ and S3:// are one line each" {
	SECRET=$AWS_SECRET_ACCESS_KEY
	WRONG_CREDENTIALS=(AWS_ACCESS_KEY_ID=NOSUCHKEY AWS_SECRET_ACCESS_KEY=wrong)
	WRONG_WHY='InvalidAccessKeyId|403|denied|credential'
	scenario_reader_errors
}

@test "lake reader s3: gs:// goes through the same door (GCS's own endpoint: only its credentials are checked here)" {
	reader_setup
	run -1 --separate-stderr env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN \
		"$LAKE" gs://lake-here/prefix
	assert_output ""
	assert_stderr "lake: no credentials for gs://: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or GOOGLE_HMAC_ACCESS_ID and GOOGLE_HMAC_SECRET), or a profile (AWS_PROFILE, now 'default') in ~/.aws/credentials"
	grep -q -x -F 'fetch -p .dataspoc/manifest.json -b gs://lake-here/prefix' "$DOOR_LOG"
}

@test "lake reader s3: one listing gives a table's versions (no HEAD an object); a read from the cache asks nothing more" {
	reader_setup
	use_tap tap-lk
	lake_pipeline lk tap-lk true
	users_run '{"id":1,"name":"ana"}'
	users_run '{"id":2,"name":"bo"}'
	s3_proxy
	run -0 --separate-stderr env AWS_ENDPOINT_URL="$PROXY_ENDPOINT" "$LAKE" "$(bucket_url)" users --json
	assert_equal "${#lines[@]}" 2
	sed 's/?.*//' "$PROXY_LOG" | sort | uniq -c | sed 's/^ *//' >requests
	cat >want <<-EOF
	1 forwarded 200 GET /$S3_BUCKET
	1 forwarded 200 GET /$S3_BUCKET/.dataspoc/manifest.json
	EOF
	bucket_files | sed "s|=|%3D|g; s|^|1 forwarded 200 GET /$S3_BUCKET/|" >>want
	sort -o want want
	diff -u want requests
	: >"$PROXY_LOG"
	run -0 --separate-stderr env AWS_ENDPOINT_URL="$PROXY_ENDPOINT" "$LAKE" "$(bucket_url)" users --json
	assert_equal "${#lines[@]}" 2
	sed 's/?.*//' "$PROXY_LOG" | sort | uniq -c | sed 's/^ *//' >requests
	printf '1 forwarded 200 GET /%s\n1 forwarded 200 GET /%s/.dataspoc/manifest.json\n' "$S3_BUCKET" "$S3_BUCKET" >want
	diff -u want requests
}
