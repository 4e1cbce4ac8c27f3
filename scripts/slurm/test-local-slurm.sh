#!/bin/bash
# End-to-end check of array.sbatch + merge.sbatch on a real Slurm: installs Debian's slurmctld +
# slurmd (one node, localhost) and munge with apt (needs root), starts them, submits an array of
# 4 shards of `scorekit mint --recheck` on the real MINT trajectories (mint:headline, from the
# test data cache that scripts/test-data.sh fills; MINT_OUTPUTS=DIR names another folder) plus a
# dependent merge, waits, and compares the merged metrics.json with a single run's. Stops the daemons it started.
#
#   scripts/slurm/test-local-slurm.sh            # uses target/debug/scorekit (cargo build first)
#   SCOREKIT=/path/to/scorekit scripts/slurm/test-local-slurm.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
scorekit=$(realpath "${SCOREKIT:-$repo/target/debug/scorekit}")
[ -x "$scorekit" ] || { echo "no scorekit binary at $scorekit (cargo build first)" >&2; exit 1; }
data=${MINT_OUTPUTS:-}
if [ -z "$data" ]; then
  cache=${SCOREKIT_TEST_DATA:-$repo/target/test-data}
  data=$(SCOREKIT_DATA=$cache "$scorekit" data pull mint:headline --offline --quiet) || {
    echo "no mint:headline in the test data cache $cache: run scripts/test-data.sh" >&2
    exit 1
  }
fi
work=$(mktemp -d /tmp/scorekit-slurm.XXXXXX)
started=$(date +%s)
[ -d "$data" ] || { echo "no MINT outputs at $data" >&2; exit 1; }

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq slurmctld slurmd slurm-client munge >/dev/null
fi

node=$(hostname -s)
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
cat >/etc/slurm/slurm.conf <<CONF
ClusterName=scorekit-test
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
[ -s /etc/munge/munge.key ] || { dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null; }
chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
chmod 400 /etc/munge/munge.key
if ! pgrep -x munged >/dev/null; then
  runuser -u munge -- /usr/sbin/munged
  sleep 1
  pids+=("$(pgrep -x munged | head -1)")
fi
slurmctld -i
sleep 2
pids+=("$(cat /run/slurmctld.pid)")
slurmd
sleep 2
pids+=("$(cat /run/slurmd.pid)")
for _ in $(seq 30); do
  sinfo -h -o %T 2>/dev/null | grep -qE 'idle|mixed' && break
  sleep 1
done
sinfo

cd "$work"
"$scorekit" mint --outputs "$data" --recheck --bootstrap 200 --out single --quiet >/dev/null
export SCOREKIT=$scorekit
jid=$(sbatch --parsable --array=0-3 --cpus-per-task=1 "$repo/scripts/slurm/array.sbatch" \
  "$work/out" mint --outputs "$data" --recheck --bootstrap 200)
mid=$(sbatch --parsable --dependency=afterok:"$jid" --cpus-per-task=1 \
  "$repo/scripts/slurm/merge.sbatch" "$work/out" 4)
echo "submitted array $jid and merge $mid"
for _ in $(seq 600); do
  [ -z "$(squeue -h -j "$jid,$mid" 2>/dev/null)" ] && break
  sleep 1
done
squeue
cat slurm-*.out 2>/dev/null | tail -20 || true
python3 - "$work/single/metrics.json" "$work/out/merged/metrics.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
b = json.load(open(sys.argv[2]))
assert b["settings"].pop("merged_shards") == 4
assert a == b, "merged metrics differ from the single run"
print("PASS: merged metrics.json of 4 Slurm shards == single run (%d trajectories)" % a["metrics"]["trajectories"])
PY
echo "took $(( $(date +%s) - started )) s; files in $work"
