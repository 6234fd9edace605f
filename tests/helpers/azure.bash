# helpers/azure.bash: an Azure Blob Storage emulator for the bats suites, and
# the bucket_* functions of helpers/common.bash on it, so that
# helpers/pipeline_scenarios.bash runs against az:// as it does against a local
# directory.
#
#   load helpers/common
#   load helpers/pipeline_scenarios
#   load helpers/azure                 # after them: it replaces bucket_*
#   setup_file()    { azure_start; }    # Azurite on 127.0.0.1, a free port
#   teardown_file() { azure_stop; }
#
# The emulator is Microsoft's Azurite (npm azurite, installed by
# scripts/deps into .deps/), its blob service only, with its well-known
# development account devstoreaccount1 and that account's published key.
# Azurite checks SharedKey and SAS signatures and honours If-None-Match
# and If-Match.  Each test gets its own container.  What landed is read
# with Microsoft's own client, npm @azure/storage-blob (tests/clients/azure/blob.js):
# the whole container is copied into a local mirror, again only when the
# container's listing (names, ETags, read with curl and an account SAS)
# changed since the last copy.
#
# Environment for the programs under test: AZURE_STORAGE_CONNECTION_STRING
# (the account, its key and the emulator's blob endpoint); AZ_ENDPOINT the
# endpoint, AZ_KEY the key, AZ_ACCOUNT the account, for tests that give
# the credentials another way.

AZ_TOP=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
AZURITE=${AZURITE:-$AZ_TOP/.deps/node_modules/.bin/azurite-blob}
AZ_BLOB_JS=$BATS_TEST_DIRNAME/clients/azure/blob.js
AZ_ACCOUNT=devstoreaccount1
# Azurite's published development key (docs: "Azurite: well-known storage account and key")
AZ_KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

# az_spawn LOG CMD...: start CMD in the background, detached from bats's
# output (a child holding fd 3 would keep bats waiting), and print its pid.
az_spawn() {
	local log=$1
	shift
	"$@" >"$log" 2>&1 3>&- </dev/null &
	echo $!
}

# az_port_of LOG: the port once LOG says "listens on http://HOST:PORT" (bounded).
az_port_of() {
	local i=0 port
	while :; do
		port=$(sed -n 's|.*listens on http://[0-9.]*:\([0-9][0-9]*\).*|\1|p' "$1" 2>/dev/null | head -n 1)
		[ -n "$port" ] && break
		i=$((i + 1))
		if [ $i -gt 600 ]; then
			echo "azure_helper: nothing listening after 30 s; $1 says:" >&2
			cat "$1" >&2
			return 1
		fi
		sleep 0.05
	done
	echo "$port"
}

azure_start() {
	if [ ! -x "$AZURITE" ]; then
		echo "azure_helper: $AZURITE is missing: run scripts/deps" >&2
		return 1
	fi
	mkdir -p "$BATS_FILE_TMPDIR/azurite"
	AZ_PID=$(az_spawn "$BATS_FILE_TMPDIR/azurite.log" "$AZURITE" --blobHost 127.0.0.1 \
		--blobPort 0 --location "$BATS_FILE_TMPDIR/azurite" --silent --disableTelemetry \
		--skipApiVersionCheck)
	echo "$AZ_PID" >"$BATS_FILE_TMPDIR/azurite.pid"
	AZ_PORT=$(az_port_of "$BATS_FILE_TMPDIR/azurite.log") || return 1
	export AZ_PORT AZ_ENDPOINT=http://127.0.0.1:$AZ_PORT/$AZ_ACCOUNT AZ_ACCOUNT AZ_KEY
	export AZURE_TEST_CONNECTION_STRING="DefaultEndpointsProtocol=http;AccountName=$AZ_ACCOUNT;AccountKey=$AZ_KEY;BlobEndpoint=$AZ_ENDPOINT;"
	export AZURE_STORAGE_CONNECTION_STRING=$AZURE_TEST_CONNECTION_STRING
	unset AZURE_STORAGE_ACCOUNT AZURE_STORAGE_KEY AZURE_STORAGE_SAS_TOKEN
	# an account SAS for the mirror's cheap listings (and proof the emulator answers)
	AZ_LIST_SAS=$(node "$AZ_BLOB_JS" account-sas x) || return 1
	export AZ_LIST_SAS
}

azure_stop() {
	local pid
	pid=$(cat "$BATS_FILE_TMPDIR/azurite.pid" 2>/dev/null) || return 0
	kill "$pid" 2>/dev/null || true
}

# azblob ARGS...: tests/clients/azure/blob.js (@azure/storage-blob) on the emulator.
azblob() {
	node "$AZ_BLOB_JS" "$@"
}

# use_az_lake: what a bats file of lake tests on az:// starts with, after
# `load helpers/azure`: one Azurite for the file, each test in its sandbox
# and its container, tests/helpers/parquet.bash and lake_scenarios.bash
# loaded, and Lens reading the container copied down (lens_root).
use_az_lake() {
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
	load helpers/parquet
	load helpers/lake_scenarios
	lens_root() {
		az_sync && printf '%s\n' "$AZ_MIRROR"
	}
}

# --- the container on Azurite: the bucket_* functions of helpers/common.bash ------

bucket_setup() {
	AZ_CONTAINER=t$BATS_TEST_NUMBER-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
	BUCKET_URL=az://$AZ_CONTAINER
	AZ_MIRROR=$BATS_FILE_TMPDIR/mirror-$BATS_TEST_NUMBER
	azblob mb "$AZ_CONTAINER"
}

# A cheap fingerprint of the container: its listing (names and ETags) as
# the service gives it.  Used only to know when the mirror is stale.
az_fingerprint() {
	local marker= page all=
	while :; do
		page=$(curl -sf "$AZ_ENDPOINT/$AZ_CONTAINER?restype=container&comp=list&$AZ_LIST_SAS${marker:+&marker=$marker}") || return 1
		all=$all$page
		marker=$(printf '%s' "$page" | sed -n 's|.*<NextMarker>\([^<]*\)</NextMarker>.*|\1|p')
		[ -n "$marker" ] || break
	done
	printf '%s' "$all" | sed 's|<Last-Modified>[^<]*</Last-Modified>||g' | md5sum
}

az_sync() {
	local fp
	fp=$(az_fingerprint) || return 1
	if [ -d "$AZ_MIRROR" ] && [ "$(cat "$AZ_MIRROR.fp" 2>/dev/null)" = "$fp" ]; then
		return 0
	fi
	rm -rf "$AZ_MIRROR" "$AZ_MIRROR.fp"
	mkdir -p "$AZ_MIRROR"
	azblob sync "$AZ_CONTAINER" "$AZ_MIRROR" >&2 || return 1
	[ "$(az_fingerprint)" = "$fp" ] && echo "$fp" >"$AZ_MIRROR.fp"
	return 0
}

bucket_keys() {
	az_sync || return 1
	(cd "$AZ_MIRROR" && find . -type f -printf '%P\n') | LC_ALL=C sort |
		while IFS= read -r k; do
			case $k in "${1:-}"*) printf '%s\n' "$k" ;; esac
		done
}

bucket_cat() {
	az_sync || return 1
	[ -f "$AZ_MIRROR/$1" ] || { echo "bucket_cat: no blob '$1'" >&2; return 1; }
	cat -- "$AZ_MIRROR/$1"
}

bucket_exists() {
	az_sync || return 2
	[ -f "$AZ_MIRROR/$1" ]
}

bucket_put() {
	azblob put "$AZ_CONTAINER" "$1"
}

bucket_rm() {
	azblob rm "$AZ_CONTAINER" "$1"
}

bucket_snapshot() {
	local k
	bucket_keys | while IFS= read -r k; do
		printf '%s %s\n' "$(sha256sum <"$AZ_MIRROR/$k" | cut -c1-64)" "$k"
	done
}

bucket_untouched() {
	[ -z "$(bucket_keys)" ]
}

# az_proxy RULE...: tests/servers/s3_fault_proxy.js (a plain HTTP proxy: its fixed
# rules answer 503 or cut the connection whatever the store) in front of
# Azurite; sets PROXY_PORT, PROXY_ENDPOINT and PROXY_LOG.
az_proxy() {
	local pid
	PROXY_LOG=$BATS_TEST_TMPDIR/proxy.log
	: >"$PROXY_LOG"
	pid=$(az_spawn "$BATS_TEST_TMPDIR/proxy.out" \
		node "$BATS_TEST_DIRNAME/servers/s3_fault_proxy.js" "$AZ_PORT" "$PROXY_LOG" "$@")
	BG_PIDS="$BG_PIDS $pid"
	PROXY_PORT=$(az_port_of_proxy "$BATS_TEST_TMPDIR/proxy.out") || return 1
	PROXY_ENDPOINT=http://127.0.0.1:$PROXY_PORT
}

# az_port_of_proxy LOG: the port once LOG says "listening on PORT" (bounded).
az_port_of_proxy() {
	local i=0 port
	while :; do
		port=$(sed -n 's/.*listening on \([0-9.]*:\)\{0,1\}\([0-9][0-9]*\)$/\2/p' "$1" 2>/dev/null | head -n 1)
		[ -n "$port" ] && break
		i=$((i + 1))
		[ $i -gt 600 ] && { echo "azure_helper: the proxy does not listen; $1 says:" >&2; cat "$1" >&2; return 1; }
		sleep 0.05
	done
	echo "$port"
}
