#!/usr/bin/env bats
# The lake scenarios of tests/lake.bats on s3:// (s3rver on 127.0.0.1): the
# bucket copied down with awscli, then read the way DataSpoc Lens reads it,
# the manifest's s3:// locations mapped onto the copy.

load helpers/common
load helpers/s3

use_s3_lake

@test "s3 lake: no format: lands Parquet that Lens reads as one table over runs and a new column" {
	scenario_lake_default_parquet
}

@test "s3 lake: a schema the values break: every value lands, the column widens in a new file, said once" {
	scenario_lake_widen
}

@test "s3 lake: schema_mismatch: fail refuses the value and leaves the bucket as it was" {
	scenario_lake_strict
}

@test "s3 lake: ACTIVATE_VERSION (tap-mysql FULL_TABLE): one copy of the table after every run" {
	scenario_lake_activate_version
}

@test "s3 lake: ACTIVATE_VERSION of the same version (tap-postgres INCREMENTAL) keeps appending" {
	scenario_lake_activate_incremental
}

@test "s3 lake: one stream under two paths is two tables" {
	scenario_lake_two_paths
}

@test "s3 lake: two pipelines in one folder: a snapshot replaces only its own files, and is told whose folder it is" {
	scenario_lake_shared_folder
}

@test "s3 lake: bronze to silver through tap: parquet and a transform, each bronze file once" {
	scenario_lake_bronze_silver
}
