#!/bin/sh
# The native test supervisor's start script (docs/native-scopes.md "Deployment files", S27-S28),
# installed as /usr/local/libexec/dify-native-start and run by dify-native.service as the
# dedicated unprivileged user. Before it writes any cgroup control it checks, in this order, and
# refuses (exit 1, one line on stderr) on the first failure:
#   1. not root;
#   2. the installed systemd is >= 254 (DelegateSubgroup=);
#   3. the unit's effective DelegateSubgroup is "manager" (systemctl show);
#   4. /proc/self/cgroup places us in <U>/manager (systemd put us there: we never move);
#   5. <U>/cgroup.procs is empty (the unit root can then enable controllers).
# Only then it enables +cpu +memory +pids in <U>/cgroup.subtree_control and execs the
# supervisor, which runs its own checks (`shellctl serve --native-check`) before it serves.
# It never writes cgroup.procs.
set -eu

UNIT=${DIFY_NATIVE_UNIT:-dify-native.service}
SHELLCTL=${SHELLCTL_BIN:-/usr/local/bin/shellctl}
LISTEN=${DIFY_NATIVE_LISTEN:-127.0.0.1:8766}
STATE=${DIFY_NATIVE_STATE_DIR:-/var/lib/dify-native}
MIN_SYSTEMD=254

refuse() {
  echo "dify-native-start: refused: $*" >&2
  exit 1
}

[ "$(id -u)" -ne 0 ] || refuse "running as root; the unit's User= must be the dedicated unprivileged user"

version=$(systemctl --version 2>/dev/null | awk 'NR == 1 && $1 == "systemd" { print $2 }')
case $version in
  ''|*[!0-9]*) refuse "cannot read the installed systemd version (systemctl --version)" ;;
esac
[ "$version" -ge "$MIN_SYSTEMD" ] || refuse "systemd $version is older than $MIN_SYSTEMD (DelegateSubgroup= is needed)"

subgroup=$(systemctl show --property=DelegateSubgroup --value "$UNIT" 2>/dev/null || true)
[ "$subgroup" = manager ] || refuse "$UNIT has DelegateSubgroup='$subgroup' in effect, not 'manager'"

# The unified hierarchy's mount point (a hybrid host keeps it below /sys/fs/cgroup/unified).
mount=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$mount" ] || refuse "no cgroup v2 hierarchy is mounted"
own=$(awk -F: '$1 == "0" && $2 == "" { print $3 }' /proc/self/cgroup)
[ -n "$own" ] || refuse "/proc/self/cgroup has no cgroup v2 entry"
case $own in
  */manager) ;;
  *) refuse "/proc/self/cgroup places us in $own, not in <unit>/manager" ;;
esac
unit_cgroup=${own%/manager}
root="$mount$unit_cgroup"
[ -d "$root" ] || refuse "the unit cgroup $root does not exist"
if [ -n "${SHELLCTL_NATIVE_CGROUP:-}" ] && [ "$SHELLCTL_NATIVE_CGROUP" != "$unit_cgroup" ]; then
  refuse "SHELLCTL_NATIVE_CGROUP=$SHELLCTL_NATIVE_CGROUP is not our unit cgroup $unit_cgroup"
fi
procs=$(cat "$root/cgroup.procs") || refuse "cannot read $root/cgroup.procs"
[ -z "$procs" ] || refuse "$root/cgroup.procs is not empty ($(echo $procs)); the unit root must hold no process"

# The first cgroup write: the scopes' controllers for the subtree.
if ! echo "+cpu +memory +pids" > "$root/cgroup.subtree_control" 2>/dev/null; then
  refuse "cannot enable cpu memory pids in $root/cgroup.subtree_control (available: $(cat "$root/cgroup.controllers"))"
fi

export SHELLCTL_NATIVE_CGROUP="$unit_cgroup"
exec "$SHELLCTL" serve --native-test-supervisor --listen "$LISTEN" --state-dir "$STATE"
