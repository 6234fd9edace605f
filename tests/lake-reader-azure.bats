#!/usr/bin/env bats
# scripts/lake on an az:// lake (Azurite on 127.0.0.1), read through pipe-state's
# objects and fetch into its cache (tests/helpers/lake_reader_scenarios.bash).

load helpers/common
load helpers/azure
use_az_lake
load helpers/lake_reader_scenarios

@test "lake reader az: tables, rows, --sql, a second read from the cache, new and changed objects fetched, gone ones dropped" {
	SECRET=$AZ_KEY
	scenario_reader_remote
}

@test "lake reader az: a missing container, a refused key, az:/ and AZ:// are one line each" {
	SECRET=$AZ_KEY
	WRONG_CREDENTIALS=("AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=http;AccountName=$AZ_ACCOUNT;AccountKey=$(head -c 64 /dev/zero | base64 -w0);BlobEndpoint=$AZ_ENDPOINT;")
	WRONG_WHY='403|AuthorizationFailure|AuthenticationFailed|authenticat'
	scenario_reader_errors
}

@test "lake reader az: a manifest location climbing out with '..' is refused; nothing outside the cache written or removed" {
	scenario_reader_dotdot
}
