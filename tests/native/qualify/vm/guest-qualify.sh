#!/bin/sh
# Runs once in the qualification guest (dify-native-qualify.service, as root): waits for the
# supervisor, runs the integration-native-test suite against the host-systemd deployment and
# reports on the serial console, then runs the job-limits cases that need the guest's
# cgroup controllers, then powers the guest off. On failure it adds what explains
# it: the supervisor's journal and AppArmor's denials.
set -u
echo "=== dify-native qualification ==="
set -a
. /etc/dify-native/qualify.env
set +a
echo "kernel $(uname -r); LSMs $(cat /sys/kernel/security/lsm 2>/dev/null)"
echo "cgroup2 controllers at the root: $(cat /sys/fs/cgroup/cgroup.controllers 2>/dev/null)"
for _ in $(seq 1 60); do
  python3 -c "import urllib.request,sys; urllib.request.urlopen('$DIFY_AGENT_LOCAL_NATIVE_TEST_ENDPOINT/healthz', timeout=2)" \
    2>/dev/null && break
  sleep 1
done
python3 /usr/local/share/dify-native-qualify/integration_native_test.py
rc=$?
# A run's own limits need the memory, pids and cpu controllers that this guest's cgroup2
# has (the development machine's lacks them): the jobs suite's limits cases, enforced.
echo "--- job limits (tests/e2e/jobs/test_job_limits.py --enforced)"
PYTHONPATH=/usr/local/share/dify-native-qualify SHELLCTL_BIN_DIR=/usr/local/bin \
  python3 /usr/local/share/dify-native-qualify/test_job_limits.py --enforced
limits_rc=$?
echo "JOB-LIMITS-EXIT=$limits_rc"
[ "$limits_rc" -eq 0 ] || rc=1
if [ "$rc" -ne 0 ]; then
  echo "--- journal of $DIFY_AGENT_LOCAL_NATIVE_TEST_UNIT"
  journalctl -b -u "$DIFY_AGENT_LOCAL_NATIVE_TEST_UNIT" --no-pager | tail -60
  echo "--- AppArmor denials"
  journalctl -b -k --no-pager | grep 'apparmor="DENIED"' | tail -40
fi
echo "QUALIFY-EXIT=$rc"
echo "=== end ==="
systemctl poweroff --no-block
exit 0
