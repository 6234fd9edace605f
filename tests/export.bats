#!/usr/bin/env bats
# dataspoc-pipe export slurm|kubernetes|systemd: the job definitions of other
# schedulers.  Kubernetes manifests are checked against the API's schemas
# (npm's kubernetes-models, tests/clients/k8s/validate.mjs), systemd units by
# systemd-analyze verify; tests/slurm.bats runs the Slurm ones on a cluster.

load helpers/common

setup() {
	pipe_setup
	SELF=$(readlink -f "$PIPE_BIN/dataspoc-pipe")
	write_pipeline orders cmdtap-ok
	printf 'schedule:\n  cron: "*/15 9-17 * * mon-fri"\n' >>"$DATASPOC_PIPE_HOME/pipelines/orders.yaml"
	write_pipeline adhoc cmdtap-ok
}

teardown() {
	pipe_teardown
}

@test "export slurm: a batch script a pipeline, then the scrontab of the scheduled ones" {
	run -0 --separate-stderr dataspoc-pipe export slurm
	assert_equal "$stderr" ""
	assert_output "# ==> orders.sbatch <==
#!/bin/sh
# dataspoc-pipe pipeline orders (schedule.cron '*/15 9-17 * * mon-fri'): sbatch this file
# (--begin=TIME for one run later), or run it from scrontab(1).
# Exit status: 0 done, 1 failed, 2 bad config, 75 locked by another
# run (try later).
#SBATCH --job-name=dataspoc-pipe-orders
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#SBATCH --open-mode=append
exec $SELF run orders
# ==> scrontab <==
#SCRON --job-name=dataspoc-pipe-orders
#SCRON --cpus-per-task=1
0,15,30,45 9-17 * * 1-5 $SELF run orders"
	# -o DIR: the files, their paths printed; a pipeline named without a
	# schedule gets its script and no scrontab line; the home is passed on
	export DATASPOC_PIPE_HOME=$HOME/elsewhere
	mv "$HOME/.dataspoc-pipe" "$DATASPOC_PIPE_HOME"
	run -0 --separate-stderr dataspoc-pipe export slurm -o jobs --cpus 2 --memory 4G --partition batch orders adhoc
	assert_output "$PWD/jobs/orders.sbatch
$PWD/jobs/adhoc.sbatch
$PWD/jobs/scrontab"
	run -0 cat jobs/scrontab
	assert_output "#SCRON --job-name=dataspoc-pipe-orders
#SCRON --cpus-per-task=2
#SCRON --mem=4G
#SCRON --partition=batch
0,15,30,45 9-17 * * 1-5 $PWD/jobs/orders.sbatch"
	run -0 grep -c '^#SBATCH --mem=4G$' jobs/adhoc.sbatch
	# the script runs the pipeline (here without Slurm: sh)
	run -0 sh jobs/adhoc.sbatch
	assert_line "Done! 3 records in 1 stream(s)"
	run -0 pipe-state show adhoc
	assert_line --index 0 '{'
}

@test "export kubernetes: CronJobs and Jobs that the API's schemas accept" {
	[ -d "$BATS_TEST_DIRNAME/../.deps/node_modules/kubernetes-models" ] ||
		fail "kubernetes-models is not installed: run scripts/deps"
	run -0 --separate-stderr dataspoc-pipe export kubernetes --image registry.example/pipe:1.2 \
		--secret pipe-creds --config-map pipe-home --namespace data --deadline 120 --cpus 2 --memory 3Gi orders adhoc
	printf '%s\n' "$output" >k8s.yaml
	run -0 node "$BATS_TEST_DIRNAME/clients/k8s/validate.mjs" k8s.yaml
	assert_output "CronJob dataspoc-pipe-orders ok
Job dataspoc-pipe-adhoc ok"
	run -0 grep -E '^  (schedule|concurrencyPolicy|startingDeadlineSeconds):|^  namespace:|image:|name: "pipe-|cpu:|memory:|command:' k8s.yaml
	assert_output '  namespace: "data"
  schedule: "0,15,30,45 9-17 * * 1-5"
  concurrencyPolicy: Forbid
  startingDeadlineSeconds: 120
              image: "registry.example/pipe:1.2"
              command: ["dataspoc-pipe", "run", "orders"]
                    name: "pipe-creds"
                  cpu: "2"
                  memory: "3Gi"
                  memory: "3Gi"
                name: "pipe-home"
  namespace: "data"
          image: "registry.example/pipe:1.2"
          command: ["dataspoc-pipe", "run", "adhoc"]
                name: "pipe-creds"
              cpu: "2"
              memory: "3Gi"
              memory: "3Gi"
            name: "pipe-home"'
	# the validator is no rubber stamp
	sed 's/concurrencyPolicy: Forbid/concurrencyPolicy: Sometimes/' k8s.yaml >broken.yaml
	run -1 node "$BATS_TEST_DIRNAME/clients/k8s/validate.mjs" broken.yaml
	assert_line --index 0 --partial "CronJob dataspoc-pipe-orders: data/spec/concurrencyPolicy must be equal to one of the allowed values"
	# object names are RFC 1123 labels
	write_pipeline Big_Orders.v2 cmdtap-ok
	run -0 --separate-stderr dataspoc-pipe export kubernetes Big_Orders.v2
	assert_line "  name: dataspoc-pipe-big-orders-v2"
}

@test "export systemd: a service and a timer that systemd-analyze verify accepts" {
	command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
	write_pipeline either cmdtap-ok
	printf 'schedule:\n  cron: "0 3 1,15 * 7"\n' >>"$DATASPOC_PIPE_HOME/pipelines/either.yaml"
	run -0 --separate-stderr dataspoc-pipe export systemd -o units
	assert_output "$PWD/units/dataspoc-pipe-either.service
$PWD/units/dataspoc-pipe-either.timer
$PWD/units/dataspoc-pipe-orders.service
$PWD/units/dataspoc-pipe-orders.timer"
	run -0 cat units/dataspoc-pipe-orders.service
	assert_output "[Unit]
Description=dataspoc-pipe pipeline orders
Wants=network-online.target
After=network-online.target

[Service]
Type=oneshot
ExecStart=$SELF run orders
# 75: locked by another run, tried again; 1 and 2 are not
Restart=on-failure
RestartSec=5min
RestartPreventExitStatus=1 2"
	run -0 grep '^OnCalendar=' units/dataspoc-pipe-either.timer
	assert_output "OnCalendar=Sun *-*-* 03:00:00
OnCalendar=*-*-01,15 03:00:00"
	run -0 systemd-analyze verify units/*.service units/*.timer
	# a unit systemd refuses is seen
	sed -i 's/^OnCalendar=.*/OnCalendar=Mon 99:99/' units/dataspoc-pipe-orders.timer
	run -1 systemd-analyze verify units/dataspoc-pipe-orders.timer
}

@test "export: usage and schedule errors" {
	run -2 --separate-stderr dataspoc-pipe export
	assert_equal "${stderr_lines[0]}" "dataspoc-pipe: export: an engine is required (slurm, kubernetes or systemd)"
	run -2 --separate-stderr dataspoc-pipe export nomad
	assert_equal "${stderr_lines[0]}" "dataspoc-pipe: export: unknown engine 'nomad' (slurm, kubernetes or systemd)"
	run -2 --separate-stderr dataspoc-pipe export kubernetes -o dir
	assert_equal "${stderr_lines[0]}" "dataspoc-pipe: export: option '-o' is not one of export kubernetes's"
	run -2 --separate-stderr dataspoc-pipe export slurm 'no/such'
	assert_equal "$stderr" "dataspoc-pipe: export: invalid pipeline name 'no/such'"
	run -2 --separate-stderr dataspoc-pipe export slurm --shards 0 orders
	assert_equal "${stderr_lines[0]}" "dataspoc-pipe: export: --shards wants a number of shards (1 to 1000), not '0'"
	# a sharded run's scrontab line runs its written script
	run -2 --separate-stderr dataspoc-pipe export slurm --shards 2 orders
	assert_equal "$stderr" "dataspoc-pipe: export: the scrontab line of a sharded run runs its batch script: give -o DIR"
	run -0 --separate-stderr dataspoc-pipe export slurm --shards 2 adhoc
	run -0 --separate-stderr dataspoc-pipe help export
	assert_line --index 0 --partial "usage: dataspoc-pipe export slurm"
	# @reboot has no time for another scheduler
	printf 'schedule:\n  cron: "@reboot"\n' >>"$DATASPOC_PIPE_HOME/pipelines/adhoc.yaml"
	run -2 --separate-stderr dataspoc-pipe export kubernetes adhoc
	assert_equal "$stderr" "dataspoc-pipe: schedule.cron '@reboot' names no time: only cron itself runs a job at boot"
}

@test "export kubernetes --shards N --run-id ID: an Indexed Job and a commit Job the schemas accept; their commands land the run once" {
	[ -d "$BATS_TEST_DIRNAME/../.deps/node_modules/kubernetes-models" ] ||
		fail "kubernetes-models is not installed: run scripts/deps"
	{
		printf 'source:\n  tap: tap-many\n  config: {x: 1}\n'
		printf '  streams: [s01, s02, s03, s04, s05, s06, s07, s08, s09, s10, s11, s12]\n'
		printf 'destination:\n'
		bucket_yaml
		printf '  format: parquet\n'
	} >"$DATASPOC_PIPE_HOME/pipelines/wide.yaml"
	run -2 --separate-stderr dataspoc-pipe export kubernetes --shards 3 wide
	assert_equal "${stderr_lines[0]}" "dataspoc-pipe: export: export kubernetes --shards N writes one run's Jobs: give --run-id ID (dataspoc-pipe run NAME --plan --shards N prints it)"
	run -0 --separate-stderr dataspoc-pipe run wide --plan --shards 3
	local id=$output
	run -0 --separate-stderr dataspoc-pipe export kubernetes --shards 3 --run-id "$id" --wait 60 wide
	printf '%s\n' "$output" >k8s.yaml
	run -0 node "$BATS_TEST_DIRNAME/clients/k8s/validate.mjs" k8s.yaml
	local lid=${id,,}
	assert_output "Job dataspoc-pipe-wide-$lid ok
Job dataspoc-pipe-wide-$lid-commit ok"
	run -0 grep -E '^  (completionMode|completions|parallelism|backoffLimitPerIndex|activeDeadlineSeconds):' k8s.yaml
	assert_output "  completionMode: Indexed
  completions: 3
  parallelism: 3
  backoffLimitPerIndex: 2
  activeDeadlineSeconds: 660"
	# the pods' commands, as the cluster runs them: the commit's first (it
	# waits for the shards in the bucket), then each index's
	node -e '
		const Y = require(process.argv[1] + "/yaml");
		for (const d of Y.parseAllDocuments(require("fs").readFileSync("k8s.yaml", "utf8")))
			console.log(JSON.stringify(d.toJS().spec.template.spec.containers[0].command));
	' "$BATS_TEST_DIRNAME/../.deps/node_modules" | jq -r '@sh' >commands
	[ "$(wc -l <commands)" -eq 2 ]
	eval "set -- $(sed -n 2p commands)"
	"$@" >commit.out 2>&1 &
	local commit=$!
	for i in 0 1 2; do
		eval "set -- $(sed -n 1p commands)"
		JOB_COMPLETION_INDEX=$i "$@" >"shard-$i.out" 2>&1 &
	done
	wait "$commit" || { cat commit.out shard-*.out; false; }
	wait
	run -0 cat commit.out
	assert_line "Done! 60 records in 12 stream(s)"
	[ "$(bucket_files | wc -l)" -eq 12 ]
	run -0 bucket_keys .dataspoc/staging/
	assert_output ""
	run -1 bucket_exists .dataspoc/state/wide/lock
	# a commit that waits for a shard that never comes refuses, naming it
	run -0 --separate-stderr dataspoc-pipe run wide --plan --shards 2
	id=$output
	run -0 dataspoc-pipe run wide --shard 1/2 --run-id "$id"
	SECONDS=0
	run -1 dataspoc-pipe commit wide --run-id "$id" --wait 2
	[ "$SECONDS" -ge 2 ]
	assert_output --partial "shard 0 of 2 did not stage its part: nothing published"
	[ "$(bucket_files | wc -l)" -eq 12 ]
	run -1 bucket_exists .dataspoc/state/wide/lock
}
