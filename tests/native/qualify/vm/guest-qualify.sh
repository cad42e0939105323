#!/bin/sh
# Runs once in the qualification guest (dify-native-qualify.service, as root): waits for the
# supervisor, runs the integration-native-test suite against the host-systemd deployment and
# reports on the serial console, then powers the guest off. On failure it adds what explains
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
