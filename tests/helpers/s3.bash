# helpers/s3.bash: an S3 server for the bats suites, and the bucket_*
# functions of helpers/common.bash on it, so that helpers/pipeline_scenarios.bash runs
# against s3:// as it does against a local directory.
#
#   load helpers/common
#   load helpers/pipeline_scenarios
#   load helpers/s3                 # after them: it replaces bucket_*
#   setup_file()    { s3_start; }       # s3rver on 127.0.0.1, a free port
#   teardown_file() { s3_stop; }
#
# The server is the npm package s3rver (installed by scripts/deps into
# .deps/), run with --openssl-legacy-provider, which its paginated listings
# need.  Each test gets its own bucket, made with awscli.  What landed is
# read with Debian's awscli (/usr/bin/aws): the whole bucket is synced into
# a local mirror, again only when s3rver's files changed since the last
# sync (awscli takes seconds to start on a busy machine).
#
# Environment for the programs under test: AWS_ACCESS_KEY_ID and
# AWS_SECRET_ACCESS_KEY are S3RVER (the only key s3rver knows; it checks no
# SigV4 signature and ignores If-None-Match), AWS_ENDPOINT_URL the server,
# AWS_REGION us-east-1.

S3_TOP=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
S3RVER_JS=${S3RVER_JS:-$S3_TOP/.deps/node_modules/s3rver/bin/s3rver.js}
AWS=${AWS:-/usr/bin/aws}

# s3_spawn LOG CMD...: start CMD in the background, detached from bats's
# output (a child holding fd 3 would keep bats waiting), and print its pid.
s3_spawn() {
	local log=$1
	shift
	"$@" >"$log" 2>&1 3>&- </dev/null &
	echo $!
}

# s3_port_of LOG: the port once LOG says "listening on ...:PORT" (bounded).
s3_port_of() {
	local i=0 port
	while :; do
		port=$(sed -n 's/.*listening on \([0-9.]*:\)\{0,1\}\([0-9][0-9]*\)$/\2/p' "$1" 2>/dev/null | head -n 1)
		[ -n "$port" ] && break
		i=$((i + 1))
		if [ $i -gt 600 ]; then
			echo "s3_helper: nothing listening after 30 s; $1 says:" >&2
			cat "$1" >&2
			return 1
		fi
		sleep 0.05
	done
	echo "$port"
}

# use_s3_bucket: what a bats file of tests on s3:// starts with, after `load
# s3_helper`: one s3rver for the file (setup_file, teardown_file), each test
# in its sandbox (setup, teardown).  A file may define its own setup after.
use_s3_bucket() {
	setup_file() {
		s3_start
	}
	teardown_file() {
		s3_stop
	}
	setup() {
		pipe_setup
	}
	teardown() {
		pipe_teardown
	}
}

# use_s3_lake: use_s3_bucket, with tests/helpers/parquet.bash and
# tests/helpers/lake_scenarios.bash loaded, and Lens reading the bucket copied down
# (lens_root).
use_s3_lake() {
	use_s3_bucket
	load helpers/parquet
	load helpers/lake_scenarios
	lens_root() {
		s3_sync && printf '%s\n' "$S3_MIRROR"
	}
}

s3_start() {
	if [ ! -f "$S3RVER_JS" ]; then
		echo "s3_helper: $S3RVER_JS is missing: run scripts/deps" >&2
		return 1
	fi
	if [ ! -x "$AWS" ]; then
		echo "s3_helper: $AWS is missing: run scripts/deps (Debian's awscli)" >&2
		return 1
	fi
	export S3_DIR=$BATS_FILE_TMPDIR/s3rver
	mkdir -p "$S3_DIR"
	S3_PID=$(s3_spawn "$BATS_FILE_TMPDIR/s3rver.log" \
		node --openssl-legacy-provider "$S3RVER_JS" -d "$S3_DIR" -a 127.0.0.1 -p 0 --silent)
	echo "$S3_PID" >"$BATS_FILE_TMPDIR/s3rver.pid"
	S3_PORT=$(s3_port_of "$BATS_FILE_TMPDIR/s3rver.log") || return 1
	export S3_PORT S3_ENDPOINT=http://127.0.0.1:$S3_PORT
	export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER
	export AWS_ENDPOINT_URL=$S3_ENDPOINT AWS_REGION=us-east-1
	export AWS_EC2_METADATA_DISABLED=true AWS_PAGER=
	unset AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL_S3 AWS_DEFAULT_REGION
	# until it answers HTTP (403 to an anonymous request is an answer)
	local i=0
	until curl -s -o /dev/null --max-time 2 "$S3_ENDPOINT/"; do
		i=$((i + 1))
		[ $i -gt 200 ] && { echo "s3_helper: s3rver does not answer" >&2; return 1; }
		sleep 0.05
	done
}

s3_stop() {
	local pid
	pid=$(cat "$BATS_FILE_TMPDIR/s3rver.pid" 2>/dev/null) || return 0
	kill "$pid" 2>/dev/null || true
}

# aws_ ARGS...: Debian's awscli against the test server.
aws_() {
	"$AWS" --endpoint-url "$S3_ENDPOINT" "$@"
}

# --- the bucket on s3rver: the bucket_* functions of helpers/common.bash ----------

bucket_setup() {
	S3_BUCKET=t$BATS_TEST_NUMBER-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
	BUCKET_URL=s3://$S3_BUCKET
	# outside the test's folder, which some scenarios compare before and after
	S3_MIRROR=$BATS_FILE_TMPDIR/mirror-$BATS_TEST_NUMBER
	aws_ s3 mb "$BUCKET_URL" >/dev/null
}

# A cheap fingerprint of the bucket's state: s3rver's files, their sizes and
# times.  Used only to know when the mirror is stale, never for content.
s3_fingerprint() {
	find "$S3_DIR/$S3_BUCKET" -printf '%P %s %T@\n' 2>/dev/null | LC_ALL=C sort | md5sum
}

# Bring the mirror up to date with the bucket (awscli's sync).
s3_sync() {
	local fp
	fp=$(s3_fingerprint)
	if [ -d "$S3_MIRROR" ] && [ "$(cat "$S3_MIRROR.fp" 2>/dev/null)" = "$fp" ]; then
		return 0
	fi
	rm -rf "$S3_MIRROR" "$S3_MIRROR.fp"
	mkdir -p "$S3_MIRROR"
	aws_ s3 sync --quiet --no-progress "$BUCKET_URL" "$S3_MIRROR" >&2 || return 1
	# a bucket that changed while it was copied is copied again next time
	[ "$(s3_fingerprint)" = "$fp" ] && echo "$fp" >"$S3_MIRROR.fp"
	return 0
}

bucket_keys() {
	s3_sync || return 1
	(cd "$S3_MIRROR" && find . -type f -printf '%P\n') | LC_ALL=C sort |
		while IFS= read -r k; do
			case $k in "${1:-}"*) printf '%s\n' "$k" ;; esac
		done
}

bucket_cat() {
	s3_sync || return 1
	[ -f "$S3_MIRROR/$1" ] || { echo "bucket_cat: no object '$1'" >&2; return 1; }
	cat -- "$S3_MIRROR/$1"
}

bucket_exists() {
	s3_sync || return 2
	[ -f "$S3_MIRROR/$1" ]
}

bucket_put() {
	aws_ s3 cp --quiet - "$BUCKET_URL/$1"
}

bucket_rm() {
	aws_ s3 rm --quiet "$BUCKET_URL/$1"
}

bucket_snapshot() {
	local k
	bucket_keys | while IFS= read -r k; do
		printf '%s %s\n' "$(sha256sum <"$S3_MIRROR/$k" | cut -c1-64)" "$k"
	done
}

bucket_untouched() {
	[ -z "$(bucket_keys)" ]
}

# --- helpers of the S3 tests ----------------------------------------------------------

# s3_proxy RULE...: start tests/servers/s3_fault_proxy.js in front of UPSTREAM_PORT
# (default: s3rver); sets PROXY_PORT, PROXY_ENDPOINT and PROXY_LOG.
s3_proxy() {
	local pid
	PROXY_LOG=$BATS_TEST_TMPDIR/proxy.log
	: >"$PROXY_LOG"
	pid=$(s3_spawn "$BATS_TEST_TMPDIR/proxy.out" \
		node "$BATS_TEST_DIRNAME/servers/s3_fault_proxy.js" "${UPSTREAM_PORT:-$S3_PORT}" "$PROXY_LOG" "$@")
	BG_PIDS="$BG_PIDS $pid"
	PROXY_PORT=$(s3_port_of "$BATS_TEST_TMPDIR/proxy.out") || return 1
	PROXY_ENDPOINT=http://127.0.0.1:$PROXY_PORT
}

# moto_start: moto_server (Python's moto), which checks SigV4 signatures and
# honours If-None-Match, on a free port, with an IAM user whose key is in
# MOTO_KEY_ID / MOTO_SECRET; MOTO_ENDPOINT, MOTO_PORT.  Status 1 when
# moto_server is not installed (the caller skips and says so).
moto_start() {
	local bin pid port i=0
	bin=$(command -v moto_server 2>/dev/null) || return 1
	"$bin" --help >/dev/null 2>&1 || return 1
	# a free port: bind 0, read it, let go (moto_server cannot bind 0 and say)
	port=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
	pid=$(s3_spawn "$BATS_TEST_TMPDIR/moto.log" \
		env INITIAL_NO_AUTH_ACTION_COUNT=3 "$bin" -H 127.0.0.1 -p "$port")
	BG_PIDS="$BG_PIDS $pid"
	MOTO_PORT=$port
	MOTO_ENDPOINT=http://127.0.0.1:$port
	until curl -s -o /dev/null --max-time 2 "$MOTO_ENDPOINT/moto-api/"; do
		i=$((i + 1))
		[ $i -gt 600 ] && { cat "$BATS_TEST_TMPDIR/moto.log" >&2; return 2; }
		sleep 0.05
	done
	# the first three actions need no authentication: make a user and its key
	"$AWS" --endpoint-url "$MOTO_ENDPOINT" iam create-user --user-name pipe >/dev/null || return 2
	"$AWS" --endpoint-url "$MOTO_ENDPOINT" iam put-user-policy --user-name pipe --policy-name all \
		--policy-document '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}' || return 2
	"$AWS" --endpoint-url "$MOTO_ENDPOINT" iam create-access-key --user-name pipe >"$BATS_TEST_TMPDIR/moto-key.json" || return 2
	MOTO_KEY_ID=$(jq -r .AccessKey.AccessKeyId "$BATS_TEST_TMPDIR/moto-key.json")
	MOTO_SECRET=$(jq -r .AccessKey.SecretAccessKey "$BATS_TEST_TMPDIR/moto-key.json")
}

# moto_aws ARGS...: awscli against moto with the IAM user's key.
moto_aws() {
	AWS_ACCESS_KEY_ID=$MOTO_KEY_ID AWS_SECRET_ACCESS_KEY=$MOTO_SECRET \
		"$AWS" --endpoint-url "$MOTO_ENDPOINT" "$@"
}
