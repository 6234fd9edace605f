#!/usr/bin/env bats
# The multi-stage lake of the Python DataSpoc Pipe on a local bucket: bronze
# landed from a tap, silver landed from bronze's Parquet files by the built-in
# `tap: parquet` through a transform (tests/helpers/lake_scenarios.bash; on s3:// in
# tests/lake-s3.bats).

load helpers/common
use_local_lake

@test "lake: bronze to silver through tap: parquet and a transform, each bronze file once" {
	scenario_lake_bronze_silver
}
