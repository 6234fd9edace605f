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

@test "lake reader s3: -c FILE.yaml reads the pipeline's bucket through its endpoint_url: a gs:// lake on s3rver, cached" {
	reader_setup
	use_tap tap-lk
	# gs:// takes no endpoint from the environment: only a pipeline's endpoint_url
	BUCKET_URL=gs://$S3_BUCKET
	lake_pipeline lk tap-lk true "endpoint_url: $S3_ENDPOINT"
	users_run '{"id":1,"name":"ana"}' '{"id":2,"name":"bo"}'
	local yaml=$DATASPOC_PIPE_HOME/pipelines/lk.yaml
	unset AWS_ENDPOINT_URL
	run -0 --separate-stderr "$LAKE" -c "$yaml"
	assert_line --index 2 --regexp "^lk/users +2 +- +gs://$S3_BUCKET/raw/lk/users\$"
	run -0 --separate-stderr "$LAKE" -c "$yaml" users --json
	assert_equal "${#lines[@]}" 2
	assert_line --index 1 '{"id":"2","name":"bo","_extra":null,"dt":"'"$(date -u +%F)"'"}'
	run -0 fetched
	assert_output "$(bucket_files)"
	run -0 --separate-stderr "$LAKE" -c "$yaml" --sql 'SELECT count(*) AS n FROM users'
	assert_equal "${lines[2]}" 2
	run -0 fetched
	assert_output ""
	# the door named the pipeline, never its endpoint or a credential
	! grep -q -F -e "$S3_ENDPOINT" -e "$AWS_SECRET_ACCESS_KEY" "$DOOR_LOG"
	# with -c, what follows is the table
	run -2 --separate-stderr "$LAKE" -c "$yaml" "gs://$S3_BUCKET"
	assert_stderr "lake: gs://$S3_BUCKET: no such table in gs://$S3_BUCKET (tables: lk/users)"
	run -2 --separate-stderr "$LAKE" -c "$yaml" users extra
	assert_stderr "lake: extra: one bucket and at most one table (usage: scripts/lake BUCKET [TABLE [-n N]] [--json] | scripts/lake BUCKET --sql QUERY [--json] (-c FILE.yaml may replace BUCKET))"
	run -2 --separate-stderr "$LAKE" -c nope.yaml
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ $stderr == "lake: "*"nope.yaml"* ]]
}

@test "lake reader s3: a manifest location climbing out with '..' is refused; nothing outside the cache written or removed" {
	scenario_reader_dotdot
}

@test "lake reader s3: a cache folder another user owns or links to is refused in one line, nothing written in it" {
	reader_setup
	use_tap tap-lk
	lake_pipeline lk tap-lk true
	users_run '{"id":1,"name":"ana"}'
	[ "$(id -u)" -eq 0 ] || skip "needs root to make another user's folder"
	# dataspoc-pipe/ made by another user, open to all: ours to be renamed away and replaced
	mkdir -p "$XDG_CACHE_HOME/dataspoc-pipe"
	chown nobody "$XDG_CACHE_HOME/dataspoc-pipe"
	chmod 777 "$XDG_CACHE_HOME/dataspoc-pipe"
	run -1 --separate-stderr "$LAKE" "$(bucket_url)" users
	assert_output ""
	assert_stderr "lake: $XDG_CACHE_HOME/dataspoc-pipe: the cache's folder belongs to another user"
	[ -z "$(ls -A "$XDG_CACHE_HOME/dataspoc-pipe")" ]
	# a link another user made to a folder of theirs
	rmdir "$XDG_CACHE_HOME/dataspoc-pipe"
	mkdir "$BATS_TEST_TMPDIR/theirs"
	chown nobody "$BATS_TEST_TMPDIR/theirs"
	ln -s "$BATS_TEST_TMPDIR/theirs" "$XDG_CACHE_HOME/dataspoc-pipe"
	chown -h nobody "$XDG_CACHE_HOME/dataspoc-pipe"
	run -1 --separate-stderr "$LAKE" "$(bucket_url)" users
	assert_stderr "lake: $XDG_CACHE_HOME/dataspoc-pipe: the cache's folder belongs to another user"
	[ -z "$(ls -A "$BATS_TEST_TMPDIR/theirs")" ]
	# lake/ a link (held before): refused
	rm "$XDG_CACHE_HOME/dataspoc-pipe"
	mkdir -p "$XDG_CACHE_HOME/dataspoc-pipe"
	ln -s "$BATS_TEST_TMPDIR/theirs" "$CACHE"
	run -1 --separate-stderr "$LAKE" "$(bucket_url)" users
	assert_stderr "lake: $CACHE: the cache is not a directory"
	# a link of the user's own to a folder of theirs: followed
	rm "$CACHE"
	rmdir "$XDG_CACHE_HOME/dataspoc-pipe"
	mkdir "$BATS_TEST_TMPDIR/mine"
	ln -s "$BATS_TEST_TMPDIR/mine" "$XDG_CACHE_HOME/dataspoc-pipe"
	run -0 --separate-stderr "$LAKE" "$(bucket_url)" users --json
	assert_equal "${#lines[@]}" 1
	[ -d "$BATS_TEST_TMPDIR/mine/lake" ]
}

@test "lake reader s3: a cache under a folder named like a Hive partition (k=v) adds no column to the table" {
	reader_setup
	export XDG_CACHE_HOME=$BATS_TEST_TMPDIR/k=v/cache
	use_tap tap-lk
	lake_pipeline lk tap-lk true
	users_run '{"id":1,"name":"ana"}'
	run -0 --separate-stderr "$LAKE" "$(bucket_url)" users --json
	assert_output '{"id":"1","name":"ana","_extra":null,"dt":"'"$(date -u +%F)"'"}'
	run -0 --separate-stderr "$LAKE" "$(bucket_url)" --sql 'SELECT * FROM users'
	[[ ${lines[0]} != *" k"* ]] || { printf '%s\n' "$output"; false; }
	# (read from the cache's folder: a relative -c FILE.yaml still reaches the pipeline)
	cd "$DATASPOC_PIPE_HOME"
	run -0 --separate-stderr "$LAKE" -c pipelines/lk.yaml --sql 'SELECT count(*) AS n FROM users'
	assert_equal "${lines[2]}" 1
}

@test "lake reader s3: an object rewritten between its listing and its fetch is not cached as the version listed (then served when that version came back)" {
	reader_setup
	use_tap tap-lk
	lake_pipeline lk tap-lk true
	users_run '{"id":1,"name":"ana"}'
	local k1 k2 real
	k1=$(bucket_files)
	users_run '{"id":2,"name":"bo"}'
	k2=$(bucket_files | grep -v -x -F "$k1")
	bucket_cat "$k1" >"$BATS_TEST_TMPDIR/a.parquet"
	bucket_cat "$k2" >"$BATS_TEST_TMPDIR/b.parquet"
	# the door, on fetching k1 (listed as ana's), first puts bo's bytes there
	real=$(sed -n 's/^exec "\(.*\)" "\$@"$/\1/p' "$BATS_TEST_TMPDIR/spy/pipe-state")
	cat >"$BATS_TEST_TMPDIR/hook" <<-EOS
	#!/bin/sh
	[ "\$1 \$3" = "fetch $k1" ] || exit 0
	rm -f "\$0"
	"$AWS" --endpoint-url "$S3_ENDPOINT" s3 cp --quiet "$BATS_TEST_TMPDIR/b.parquet" "$BUCKET_URL/$k1"
	EOS
	chmod +x "$BATS_TEST_TMPDIR/hook"
	printf '#!/bin/sh\nprintf "%%s\\n" "$*" >>"%s"\n[ ! -x "%s" ] || "%s" "$@"\nexec "%s" "$@"\n' \
		"$DOOR_LOG" "$BATS_TEST_TMPDIR/hook" "$BATS_TEST_TMPDIR/hook" "$real" >"$BATS_TEST_TMPDIR/spy/pipe-state"
	run -0 --separate-stderr "$LAKE" "$(bucket_url)" --sql "SELECT string_agg(name, ',' ORDER BY name) AS names FROM users"
	[ ! -e "$BATS_TEST_TMPDIR/hook" ]
	# (what it read is what the bucket held when it was read)
	assert_equal "${lines[2]}" "bo,bo"
	# ana's bytes back under k1: its listed version is the first one again
	bucket_put "$k1" <"$BATS_TEST_TMPDIR/a.parquet"
	run -0 --separate-stderr "$LAKE" "$(bucket_url)" --sql "SELECT string_agg(name, ',' ORDER BY name) AS names FROM users"
	assert_equal "${lines[2]}" "ana,bo"
}

@test "lake reader s3: --sql fetches the tables the query names as words, not a table whose name is only a piece of another word (a table 's')" {
	reader_setup
	use_tap tap-lk
	lake_pipeline lk tap-lk true
	{
		echo '{"type":"SCHEMA","stream":"users","schema":{"type":"object","properties":{"id":{"type":"integer"}}},"key_properties":["id"]}'
		echo '{"type":"SCHEMA","stream":"s","schema":{"type":"object","properties":{"id":{"type":"integer"}}},"key_properties":["id"]}'
		echo '{"id":1}' | singer_records users
		echo '{"id":2}' | singer_records s
	} >"$FAKE_DIR/tap-lk/out"
	run -0 --separate-stderr dataspoc-pipe run lk
	: >"$DOOR_LOG"
	run -0 --separate-stderr "$LAKE" "$(bucket_url)" --sql 'SELECT count(*) AS n FROM users'
	assert_equal "${lines[2]}" 1
	run -0 fetched
	assert_output "$(bucket_files | grep '/users/')"
	run -0 --separate-stderr "$LAKE" "$(bucket_url)" --sql 'SELECT (SELECT id FROM users) + (SELECT id FROM "lk/s") AS n'
	assert_equal "${lines[2]}" 3
	run -0 fetched
	assert_output "$(bucket_files | grep '/s/')"
}

@test "lake reader s3: three readers at once on a cold cache each read the whole table; the cache holds each file once, no temporary file left" {
	reader_setup
	use_tap tap-lk
	lake_pipeline lk tap-lk true
	local i
	for i in 1 2 3 4; do
		users_run "{\"id\":$i,\"name\":\"n$i\"}"
	done
	for i in 1 2 3; do
		"$LAKE" "$(bucket_url)" --sql 'SELECT count(*) AS n, sum(id) AS s FROM users' >"out$i" 2>"err$i" &
		BG_PIDS="$BG_PIDS $!"
	done
	wait
	for i in 1 2 3; do
		[ ! -s "err$i" ] || { cat "err$i"; false; }
		[ "$(sed -n 3p "out$i")" = "4  10" ] || { cat "out$i"; false; }
	done
	run -0 cached
	[ "${#lines[@]}" -eq 4 ]
	[ -z "$(find "$CACHE" -name '.tmp-*')" ]
}

@test "lake reader s3: objects of a table whose keys no reader can name (a tab, a newline) are not left out in silence: a warning says how many" {
	reader_setup
	use_tap tap-lk
	lake_pipeline lk tap-lk true
	users_run '{"id":1,"name":"ana"}'
	local k
	k=$(bucket_files)
	bucket_cat "$k" >"$BATS_TEST_TMPDIR/a.parquet"
	bucket_put "${k%/*}/a"$'\t'"b.parquet" <"$BATS_TEST_TMPDIR/a.parquet"
	bucket_put "${k%/*}/c"$'\n'"d.parquet" <"$BATS_TEST_TMPDIR/a.parquet"
	run -0 --separate-stderr "$LAKE" "$(bucket_url)" users --json
	assert_equal "${#lines[@]}" 1
	assert_equal "$stderr" "lake: warning: 2 objects under 'raw/lk/users/' in $(bucket_url) left out: a key with a control character, or an empty, '.' or '..' part, is none a reader can name"
	# the door's listing says so too
	run -0 --separate-stderr pipe-state objects -p raw/lk/users/ -b "$(bucket_url)"
	assert_output --regexp "^[^	]+	${k//./\\.}\$"
	[[ $stderr == "pipe-state: warning: 2 objects under 'raw/lk/users/' in $(bucket_url) left out: "* ]]
}

@test "lake reader s3: while a fetch runs, no process's argv holds the secret key" {
	reader_setup
	use_tap tap-lk
	lake_pipeline lk tap-lk true
	users_run '{"id":1,"name":"ana"}'
	local real
	real=$(sed -n 's/^exec "\(.*\)" "\$@"$/\1/p' "$BATS_TEST_TMPDIR/spy/pipe-state")
	# the door, on a fetch, starts the real one and reads every argv while it runs
	cat >"$BATS_TEST_TMPDIR/spy/pipe-state" <<-EOS
	#!/bin/sh
	[ "\$1" = fetch ] || exec "$real" "\$@"
	"$real" "\$@" &
	child=\$!
	for p in /proc/[0-9]*; do
		tr '\\0' ' ' <"\$p/cmdline" 2>/dev/null | grep -qF -e "$AWS_SECRET_ACCESS_KEY" && echo "\$p" >>"$BATS_TEST_TMPDIR/seen"
	done
	echo scanned >>"$BATS_TEST_TMPDIR/scans"
	wait \$child
	EOS
	run -0 --separate-stderr "$LAKE" "$(bucket_url)" users --json
	assert_equal "${#lines[@]}" 1
	[ "$(wc -l <"$BATS_TEST_TMPDIR/scans")" -ge 2 ]
	[ ! -e "$BATS_TEST_TMPDIR/seen" ] || { cat "$BATS_TEST_TMPDIR/seen"; false; }
}
