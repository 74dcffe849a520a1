#!/usr/bin/env bash
# A one-node Slurm cluster with accounting, for trying `bitextmine run --launcher slurm`
# (and its tests) on one machine. Everything lives under one directory: the munge key
# and socket, a MariaDB data directory on its own socket and port, slurm.conf,
# slurmdbd.conf, gres.conf, state and logs. Nothing is written elsewhere, except the
# Debian packages it installs when they are missing.
#
#   scripts/local-slurm.sh start [--gpus N] [--dir DIR]   # prints: export SLURM_CONF=...
#   scripts/local-slurm.sh status [--dir DIR]
#   scripts/local-slurm.sh stop [--dir DIR]               # ends every daemon, removes DIR
#   scripts/local-slurm.sh install                        # only the packages (CI installs them first)
#
#   --gpus N   fake GPUs on the node (0, 1 or 2; env LOCAL_SLURM_GPUS; default 0): Slurm
#              hands them out and sets CUDA_VISIBLE_DEVICES, their devices are /dev/null.
#   --dir DIR  where the cluster lives (env LOCAL_SLURM_DIR; default
#              ${TMPDIR:-/tmp}/local-slurm-$UID). Clusters in different directories
#              run side by side on ports of their own.
#
# Needs root (slurmd starts jobs as their users) and Debian's packages: slurmctld slurmd
# slurm-client munge, and slurmdbd mariadb-server for accounting (which submitit needs to
# see that a killed job ended). No systemd: the daemons are started directly.
# `eval "$(scripts/local-slurm.sh start)"` sets SLURM_CONF in the calling shell.
set -euo pipefail

PACKAGES=(slurmctld slurmd slurm-client munge slurmdbd mariadb-server)
COMMANDS=(slurmctld slurmd sbatch sinfo sacct sacctmgr munged slurmdbd mariadbd mariadb-install-db mariadb)
MARK=.local-slurm  # in every directory this script made, so that `stop` removes nothing else
PARTITION=debug
CLUSTER=local
DEF_MEM_PER_CPU_MB=1024  # jobs that ask no memory take this per CPU, not the whole node
START_TIMEOUT_S=60

say() { printf 'local-slurm: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

usage() {  # usage [STATUS]
    sed -n '8,17p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit "${1:-2}"
}

# --- arguments ------------------------------------------------------------------------------

ACTION=${1:-}
case $ACTION in start | stop | status | install) shift ;; -h | --help) usage 0 ;; *) usage ;; esac
GPUS=${LOCAL_SLURM_GPUS:-0}
DIR=${LOCAL_SLURM_DIR:-${TMPDIR:-/tmp}/local-slurm-$(id -u)}
while [ $# -gt 0 ]; do
    case $1 in
        --gpus) [ $# -ge 2 ] || usage; GPUS=$2; shift 2 ;;
        --gpus=*) GPUS=${1#*=}; shift ;;
        --dir) [ $# -ge 2 ] || usage; DIR=$2; shift 2 ;;
        --dir=*) DIR=${1#*=}; shift ;;
        -h | --help) usage 0 ;;
        *) say "unknown option $1"; usage ;;
    esac
done
case $GPUS in 0 | 1 | 2) ;; *) die "--gpus must be 0, 1 or 2, not '$GPUS'" ;; esac
case $DIR in /*) ;; *) DIR=$PWD/$DIR ;; esac
CONF=$DIR/etc/slurm.conf
MUNGE_SOCKET=$DIR/munge/munge.socket

# --- helpers --------------------------------------------------------------------------------

slurm() { SLURM_CONF=$CONF "$@"; }

pid_of() {  # the live process of a pid file, or nothing
    local file=$DIR/run/$1.pid pid
    [ -s "$file" ] || return 1
    pid=$(tr -d '[:space:]' <"$file")
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

wait_until() {  # wait_until SECONDS WHAT COMMAND...: poll COMMAND until it succeeds
    local seconds=$1 what=$2 deadline
    shift 2
    deadline=$((SECONDS + seconds))
    until "$@" >/dev/null 2>&1; do
        if [ $SECONDS -ge $deadline ]; then
            say "$what did not happen within $seconds s"
            return 1
        fi
        sleep 0.2
    done
}

fail_start() {  # a daemon did not come up: show its log, undo what was started, stop
    local what=$1 log=$2
    say "error: $what"
    if [ -s "$log" ]; then
        say "the last lines of $log:"
        tail -n 15 "$log" | sed 's/^/    /' >&2
    fi
    stop_cluster quiet
    exit 1
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

PORTS=()
pick_ports() {  # pick_ports N: N distinct ports nothing listens on, into PORTS
    local port tries=0
    while [ ${#PORTS[@]} -lt "$1" ]; do
        port=$((20000 + RANDOM % 30000))
        if [[ " ${PORTS[*]} " != *" $port "* ]] && ! port_in_use "$port"; then
            PORTS+=("$port")
        fi
        tries=$((tries + 1))
        [ $tries -lt 500 ] || die "found no free TCP port"
    done
}

missing_commands() {
    local c
    for c in "${COMMANDS[@]}"; do
        command -v "$c" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin:/sbin command -v "$c" >/dev/null 2>&1 || echo "$c"
    done
}

install_packages() {
    local policy=/usr/sbin/policy-rc.d made_policy=
    [ -z "$(missing_commands)" ] && return 0
    [ "$(id -u)" -eq 0 ] || die "Slurm is not installed and installing it needs root: apt-get install ${PACKAGES[*]}"
    command -v apt-get >/dev/null 2>&1 || die "Slurm is not installed and there is no apt-get to install it: install ${PACKAGES[*]}"
    say "installing ${PACKAGES[*]} (about a minute)"
    if [ ! -e $policy ]; then  # packages must not start their system-wide services: this script starts its own
        printf '#!/bin/sh\nexit 101\n' >$policy
        chmod 755 $policy
        made_policy=1
        trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    local log=${TMPDIR:-/tmp}/local-slurm-apt.log status=0
    {
        apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${PACKAGES[@]}"
    } >"$log" 2>&1 || status=$?
    if [ -n "$made_policy" ]; then
        rm -f $policy
        trap - EXIT
    fi
    [ $status -eq 0 ] || die "apt-get install ${PACKAGES[*]} failed (log: $log): $(tail -n 1 "$log")"
    [ -z "$(missing_commands)" ] || die "still missing after installing: $(missing_commands | tr '\n' ' ')"
}

# --- configuration --------------------------------------------------------------------------

write_configs() {  # write_configs CTLD_PORT SLURMD_PORT DBD_PORT DB_PORT DB_PASSWORD
    local node line real_memory cpus gres=
    line=$(slurmd -C | head -n 1)  # NodeName=host CPUs=... RealMemory=...: the node as slurmd sees it
    node=$(sed -n 's/^NodeName=\([^ ]*\).*/\1/p' <<<"$line")
    cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$line")
    real_memory=$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<<"$line")
    if [ -z "$node" ] || [ -z "$cpus" ] || [ -z "$real_memory" ]; then
        die "cannot read the node from 'slurmd -C': $line"
    fi
    [ "$GPUS" -gt 0 ] && gres=" Gres=gpu:$GPUS"
    cat >"$CONF" <<EOF
# Written by scripts/local-slurm.sh: a one-node cluster under $DIR
ClusterName=$CLUSTER
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$1
SlurmdPort=$2
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$DIR/state/slurmctld
SlurmdSpoolDir=$DIR/state/slurmd
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
# no cgroups without systemd: processes are tracked through /proc, tasks are not bound
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=$DEF_MEM_PER_CPU_MB
# a request larger than the partition allows is refused at submission, not left pending
EnforcePartLimits=ALL
MailProg=/bin/true
ReturnToService=2
KillWait=5
InactiveLimit=0
MpiDefault=none
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/linux
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$3
AccountingStoragePass=$MUNGE_SOCKET
AccountingStorageTRES=gres/gpu
$([ "$GPUS" -gt 0 ] && echo "GresTypes=gpu")
# the node as configured here, whatever the hardware says (fake GPUs)
SlurmdParameters=config_overrides
$line$gres NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=$PARTITION Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
    : >"$DIR/etc/gres.conf"
    local i
    for ((i = 0; i < GPUS; i++)); do  # a device file each (slurmd refuses one file twice), all /dev/null
        ln -sfn /dev/null "$DIR/dev/gpu$i"
        echo "NodeName=$node Name=gpu File=$DIR/dev/gpu$i" >>"$DIR/etc/gres.conf"
    done
    (
        umask 077  # holds the database password; slurmdbd insists on mode 600
        cat >"$DIR/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$3
SlurmUser=root
PidFile=$DIR/run/slurmdbd.pid
LogFile=$DIR/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$4
StorageUser=slurm
StoragePass=$5
StorageLoc=slurm_acct_db
EOF
    )
    echo "$node" >"$DIR/run/node"
    echo "$GPUS" >"$DIR/run/gpus"
}

# --- the daemons ----------------------------------------------------------------------------

start_munge() {
    local key=$DIR/munge/munge.key
    if command -v mungekey >/dev/null 2>&1; then
        mungekey --create --keyfile="$key" >/dev/null 2>&1 || die "mungekey could not create $key"
    else
        dd if=/dev/urandom of="$key" bs=1 count=1024 status=none
    fi
    chmod 600 "$key"
    munged --force --key-file="$key" --socket="$MUNGE_SOCKET" --pid-file="$DIR/run/munged.pid" \
        --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/munge.seed" </dev/null >>"$DIR/log/munged.log" 2>&1 ||
        fail_start "munged did not start" "$DIR/log/munged.log"
    wait_until 10 "munged's socket" test -S "$MUNGE_SOCKET" || fail_start "munged did not start" "$DIR/log/munged.log"
}

start_mariadb() {  # start_mariadb PORT PASSWORD
    local data=$DIR/mysql/data socket=$DIR/mysql/mysql.sock log=$DIR/log/mariadb.log
    mariadb-install-db --no-defaults --datadir="$data" --user=root --auth-root-authentication-method=socket \
        --skip-test-db >>"$log" 2>&1 || fail_start "mariadb-install-db failed" "$log"
    setsid mariadbd --no-defaults --datadir="$data" --socket="$socket" --port="$1" --bind-address=127.0.0.1 \
        --pid-file="$DIR/run/mariadbd.pid" --log-error="$log" --user=root --skip-name-resolve \
        --innodb-buffer-pool-size=32M --innodb-log-file-size=16M --performance-schema=OFF \
        </dev/null >>"$log" 2>&1 &
    wait_until 60 "MariaDB answering on $socket" mariadb-admin --no-defaults --socket="$socket" -u root ping ||
        fail_start "MariaDB did not start" "$log"
    mariadb --no-defaults --socket="$socket" -u root <<EOF || fail_start "could not create the accounting user" "$log"
CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$2';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
EOF
}

start_slurm() {
    local node
    node=$(cat "$DIR/run/node")
    slurm slurmdbd </dev/null >>"$DIR/log/slurmdbd.log" 2>&1 || fail_start "slurmdbd did not start" "$DIR/log/slurmdbd.log"
    wait_until 30 "slurmdbd answering" slurm sacctmgr -n list cluster ||
        fail_start "slurmdbd did not answer" "$DIR/log/slurmdbd.log"
    slurm sacctmgr -i add cluster "$CLUSTER" >/dev/null 2>&1 || true  # present already on a restart
    slurm slurmctld -c -f "$CONF" </dev/null >>"$DIR/log/slurmctld.log" 2>&1 ||
        fail_start "slurmctld did not start" "$DIR/log/slurmctld.log"
    wait_until 30 "slurmctld answering" slurm scontrol ping || fail_start "slurmctld did not answer" "$DIR/log/slurmctld.log"
    slurm slurmd -f "$CONF" </dev/null >>"$DIR/log/slurmd.log" 2>&1 || fail_start "slurmd did not start" "$DIR/log/slurmd.log"
    node_idle() { [ "$(slurm sinfo -h -n "$node" -o %T 2>/dev/null)" = idle ]; }
    wait_until "$START_TIMEOUT_S" "node $node becoming idle" node_idle ||
        fail_start "node $node is $(slurm sinfo -h -n "$node" -o %T 2>/dev/null || echo unknown), not idle" \
            "$DIR/log/slurmd.log"
}

DAEMONS=(slurmd slurmctld slurmdbd mariadbd munged)  # in the order they are stopped

running() {  # the cluster's daemons all run
    local d
    for d in "${DAEMONS[@]}"; do pid_of "$d" >/dev/null || return 1; done
}

start_cluster() {
    if [ -e "$DIR/$MARK" ]; then
        if running; then
            local gpus
            gpus=$(cat "$DIR/run/gpus" 2>/dev/null || echo "?")
            [ "$gpus" = "$GPUS" ] ||
                die "a cluster with $gpus fake GPU(s) already runs in $DIR: stop it first, or use another --dir"
            say "already running in $DIR (node $(cat "$DIR/run/node"), $gpus fake GPU(s))"
            echo "export SLURM_CONF=$CONF"
            return
        fi
        say "$DIR holds a cluster that is not (fully) running: removing it and starting afresh"
        stop_cluster quiet
    elif [ -e "$DIR" ] && [ -n "$(ls -A "$DIR" 2>/dev/null)" ]; then
        die "$DIR exists and was not made by this script: choose another --dir"
    fi
    [ "$(id -u)" -eq 0 ] || die "must run as root: slurmd starts jobs as their users"
    install_packages
    PATH=$PATH:/usr/sbin:/sbin
    mkdir -p "$DIR"/{etc,run,log,dev,state/slurmctld,state/slurmd,munge,mysql}
    chmod 700 "$DIR" "$DIR/munge"
    touch "$DIR/$MARK"
    local password
    pick_ports 4  # slurmctld, slurmd, slurmdbd, MariaDB
    password=$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')
    write_configs "${PORTS[@]}" "$password"
    say "starting munged, MariaDB, slurmdbd, slurmctld, slurmd in $DIR"
    start_munge
    start_mariadb "${PORTS[3]}" "$password"
    start_slurm
    say "node $(cat "$DIR/run/node") is idle: $(slurm sinfo -h -o '%c CPUs, %m MB, GPUs: %G' | head -n 1 | sed 's/(null)/none/'); partition $PARTITION"
    echo "export SLURM_CONF=$CONF"
}

end_daemons() {  # end_daemons NAME...: SIGTERM to each, SIGKILL to those still there after 15 s
    local d pid
    local -a pids=()
    for d in "$@"; do
        if pid=$(pid_of "$d"); then
            kill "$pid" 2>/dev/null || true
            pids+=("$pid")
        fi
    done
    [ ${#pids[@]} -gt 0 ] || return 0
    all_ended() { local p; for p in "$@"; do ! kill -0 "$p" 2>/dev/null || return 1; done; }
    wait_until 15 "$* ending" all_ended "${pids[@]}" || kill -9 "${pids[@]}" 2>/dev/null || true
}

kill_orphan_steps() {  # job steps of this cluster that outlived slurmd (they carry its SLURM_CONF)
    local proc exe
    for proc in /proc/[0-9]*; do
        exe=$(readlink "$proc/exe" 2>/dev/null) || continue
        [ "${exe##*/}" = slurmstepd ] || continue
        if tr '\0' '\n' <"$proc/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$CONF"; then
            kill -9 "${proc#/proc/}" 2>/dev/null || true
        fi
    done
}

stop_cluster() {  # stop_cluster [quiet]: end the jobs and the daemons, remove the directory
    if [ ! -e "$DIR/$MARK" ]; then
        [ -n "${1:-}" ] || say "no cluster in $DIR"
        return 0
    fi
    if pid_of slurmctld >/dev/null; then  # jobs first, so that no job process outlives its daemons
        slurm scancel --state=PENDING,RUNNING,SUSPENDED --full --quiet "--user=$(id -un)" >/dev/null 2>&1 || true
        local -a jobs
        mapfile -t jobs < <(slurm squeue -h -o %A 2>/dev/null)
        [ ${#jobs[@]} -eq 0 ] || slurm scancel --full "${jobs[@]}" >/dev/null 2>&1 || true
        no_jobs() { [ -z "$(slurm squeue -h -o %A 2>/dev/null)" ]; }
        wait_until 30 "the jobs ending" no_jobs || true
    fi
    # Slurm's daemons together, then what they used (their shutdown still talks to munged)
    end_daemons slurmd slurmctld slurmdbd
    end_daemons mariadbd munged
    kill_orphan_steps
    rm -rf -- "$DIR"
    [ -n "${1:-}" ] || say "stopped; removed $DIR"
}

status_cluster() {
    if [ ! -e "$DIR/$MARK" ]; then
        say "no cluster in $DIR"
        return 1
    fi
    local d pid state=0
    for d in "${DAEMONS[@]}"; do
        if pid=$(pid_of "$d"); then say "$d: running (pid $pid)"; else say "$d: not running"; state=1; fi
    done
    if [ $state -eq 0 ]; then
        slurm sinfo >&2 || state=1
        echo "export SLURM_CONF=$CONF"
    fi
    return $state
}

case $ACTION in
    start) start_cluster ;;
    stop) stop_cluster ;;
    status) status_cluster ;;
    install) install_packages ;;
esac
