# helpers/slurm.bash: a one-node Slurm cluster of this machine for a test file
# (Debian's slurm-wlm and munge, scripts/deps): munged as user munge with its
# socket, key and logs in a temp folder, then slurmctld and slurmd from a
# generated slurm.conf (root runs both; proctrack/linuxproc and task/none, so
# no cgroup is needed; state, spool, pid and log files in the temp folder;
# ports of their own; the node's real CPUs and memory as `slurmd -C` says).
# Nothing of the machine's own Slurm or munge is used or touched.
#
#   slurm_start     in setup_file: start it, export SLURM_CONF (or skip the
#                   file when not root: the daemons must run as root)
#   slurm_stop      in teardown_file: stop what slurm_start started, by pid
#   slurm_wait ID   until job ID (or every task of array ID) has ended;
#                   prints each one's "STATE EXIT" line (scontrol's words)

# A TCP port free now on localhost.
slurm_free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

slurm_start() {
	[ "$(id -u)" = 0 ] || skip "the Slurm tests run the cluster's daemons as root"
	local p host conf mem cpus
	for p in munged slurmctld slurmd sbatch scontrol sinfo; do
		command -v "$p" >/dev/null || PATH=$PATH:/usr/sbin command -v "$p" >/dev/null ||
			{ echo "slurm_start: $p not found: install slurm-wlm and munge (scripts/deps)" >&2; return 1; }
	done
	# (in /tmp itself: munged, as user munge, must reach it, and bats' own
	# folders are root's alone)
	SLURM_DIR=$(mktemp -d /tmp/dataspoc-slurm.XXXXXX)
	export SLURM_DIR
	chmod 755 "$SLURM_DIR"
	mkdir -p "$SLURM_DIR/munge" "$SLURM_DIR/state" "$SLURM_DIR/spool"
	dd if=/dev/urandom of="$SLURM_DIR/munge/munge.key" bs=1024 count=1 2>/dev/null
	chown -R munge: "$SLURM_DIR/munge"
	chmod 755 "$SLURM_DIR/munge"
	chmod 400 "$SLURM_DIR/munge/munge.key"
	runuser -u munge -- /usr/sbin/munged --key-file="$SLURM_DIR/munge/munge.key" \
		--socket="$SLURM_DIR/munge/munge.socket" --pid-file="$SLURM_DIR/munge/munged.pid" \
		--log-file="$SLURM_DIR/munge/munged.log" --seed-file="$SLURM_DIR/munge/munged.seed" ||
		{ cat "$SLURM_DIR/munge/munged.log" >&2; return 1; }
	host=$(hostname -s)
	cpus=$(nproc)
	mem=$(/usr/sbin/slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
	conf=$SLURM_DIR/slurm.conf
	cat >"$conf" <<-EOF
	ClusterName=dspipe
	SlurmctldHost=$host
	SlurmctldPort=$(slurm_free_port)
	SlurmdPort=$(slurm_free_port)
	SlurmUser=root
	SlurmdUser=root
	AuthType=auth/munge
	CredType=cred/munge
	AuthInfo=socket=$SLURM_DIR/munge/munge.socket
	StateSaveLocation=$SLURM_DIR/state
	SlurmdSpoolDir=$SLURM_DIR/spool
	SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
	SlurmdPidFile=$SLURM_DIR/slurmd.pid
	SlurmctldLogFile=$SLURM_DIR/slurmctld.log
	SlurmdLogFile=$SLURM_DIR/slurmd.log
	ProctrackType=proctrack/linuxproc
	TaskPlugin=task/none
	SelectType=select/cons_tres
	SelectTypeParameters=CR_Core
	SchedulerType=sched/backfill
	MpiDefault=none
	ReturnToService=2
	JobAcctGatherType=jobacct_gather/none
	AccountingStorageType=accounting_storage/none
	MinJobAge=600
	NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
	PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP
	EOF
	export SLURM_CONF=$conf
	/usr/sbin/slurmctld -f "$conf" -i || { cat "$SLURM_DIR/slurmctld.log" >&2; return 1; }
	/usr/sbin/slurmd -f "$conf" || { cat "$SLURM_DIR/slurmd.log" >&2; return 1; }
	local end=$((SECONDS + 60))
	until [ "$(sinfo -h -o %T 2>/dev/null)" = idle ]; do
		if [ "$SECONDS" -ge "$end" ]; then
			echo "slurm_start: the node is not idle after 60 s: $(sinfo -h -o %T 2>&1)" >&2
			tail -n 20 "$SLURM_DIR/slurmctld.log" "$SLURM_DIR/slurmd.log" >&2
			return 1
		fi
		sleep 0.2
	done
}

# The pid in file $1, if that file is there.
slurm_pid() {
	[ -s "$1" ] && cat "$1"
}

slurm_stop() {
	[ -n "${SLURM_DIR:-}" ] || return 0
	local f pid
	scancel --full --user=root 2>/dev/null || true
	for f in "$SLURM_DIR/slurmd.pid" "$SLURM_DIR/slurmctld.pid" "$SLURM_DIR/munge/munged.pid"; do
		pid=$(slurm_pid "$f") || continue
		kill "$pid" 2>/dev/null || continue
		for _ in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null || true
	done
	rm -rf -- "$SLURM_DIR"
}

# slurm_wait ID: until job ID and every task of it (an array) has ended; one
# line "JOBID STATE EXIT" each, sorted.
slurm_wait() {
	local end=$((SECONDS + ${WAIT_LIMIT:-120})) out
	while :; do
		out=$(scontrol -o show job "$1" 2>&1) || { echo "$out" >&2; return 1; }
		if ! grep -qE 'JobState=(PENDING|RUNNING|CONFIGURING|COMPLETING|SUSPENDED|REQUEUED)' <<<"$out"; then
			sed -E 's/^JobId=([0-9]+)( ArrayJobId=[0-9]+ ArrayTaskId=([0-9]+))?.* JobState=([A-Z_]+).* ExitCode=([0-9]+:[0-9]+).*/\1 \3 \4 \5/' <<<"$out" |
				awk '{ if (NF == 4) print $2, $3, $4; else print "-", $2, $3 }' | sort -n
			return 0
		fi
		if [ "$SECONDS" -ge "$end" ]; then
			echo "slurm_wait: job $1 still running after ${WAIT_LIMIT:-120} s" >&2
			return 1
		fi
		sleep 0.2
	done
}
