#!/usr/bin/env bash
# Qualifies a Debian guest as a native-test host (docs/native-scopes.md "Qualifying a host",
# S25-S33) from this machine, in one command:
#
#   sudo tests/native/qualify/vm/qualify-vm.sh [BUILD_DIR]      (default: build)
#
# 1. mmdebstrap a Debian 12 root with systemd 254 and Linux 6.12 from bookworm-backports, plus
#    AppArmor, D-Bus, tmux, python3 and the libraries our binaries link (the same Debian
#    archive apt already uses; cached in $QUALIFY_VM_DIR/base-<hash>/);
# 2. install our build into it (`meson install`) and do what a host administrator does (S30):
#    the dedicated user dify-native, the start script at /usr/local/libexec/dify-native-start,
#    the unit at /etc/systemd/system/dify-native.service, a root-owned EnvironmentFile, the
#    AppArmor profile in /etc/apparmor.d, root-owned roots with the synthetic canary, and an
#    echo service on the guest's loopback that the supervisor names as its mediator;
# 3. turn it into an ext4 disk (mkfs.ext4 -d) and boot it under qemu with KVM, the guest's own
#    kernel and `lsm=landlock,lockdown,yama,apparmor,bpf`; systemd mounts the unified v2
#    hierarchy with cpu, memory and pids;
# 4. in the guest, dify-native-qualify.service prints the S31 facts (systemd version, the
#    unit's effective properties, the MainPID's cgroup, AppArmor label and Seccomp mode, the
#    unit root's cgroup.procs), restarts the unit with a scope and a job retained, and runs
#    the `integration-native-test` suite (tests/native/qualify) with the canary and a network
#    target, then the job-limits cases that need cgroup controllers (tests/e2e/jobs/
#    test_job_limits.py --enforced, against the installed shellctl), then powers off. Its output is the guest's serial console, printed here; this
#    script exits with the suite's exit code (1 when anything is missing or failed).
#
# Needs root, /dev/kvm (else TCG, slowly; QUALIFY_VM_ACCEL=tcg forces it) and Debian's mmdebstrap, qemu-system-x86 and
# e2fsprogs (installed when missing). Nothing leaves this machine but the apt downloads.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SOURCE=$(cd "$HERE/../../../.." && pwd)
BUILD=$(cd "${1:-$SOURCE/build}" && pwd)
WORK=${QUALIFY_VM_DIR:-/var/tmp/shellctl-qualify-vm}
MIRROR=${QUALIFY_VM_MIRROR:-http://deb.debian.org/debian}
TIMEOUT=${QUALIFY_VM_TIMEOUT:-1500}
[ "$(id -u)" -eq 0 ] || { echo "qualify-vm: run as root (mmdebstrap, chroot, mkfs)" >&2; exit 2; }
[ -x "$BUILD/bin/shellctl" ] || { echo "qualify-vm: no build at $BUILD (ninja -C build first)" >&2; exit 2; }

need=()
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
mkdir -p "$WORK"

# ---- 1. the base root, cached by its package list --------------------------------------------
libs=$(for l in $(ldd "$BUILD/bin/shellctl" "$BUILD/bin/dify-agent" | awk '/=>/ {print $3}' | sort -u); do
         dpkg -S "*/$(basename "$l")" 2>/dev/null | grep -v ':i386' | head -1 | cut -d: -f1
       done | sort -u | tr '\n' ',')
packages="systemd,systemd-sysv,systemd-resolved,dbus,udev,kmod,linux-image-amd64,initramfs-tools,apparmor,tmux,python3,iproute2,procps,util-linux,passwd,ca-certificates,${libs%,}"
key=$(printf '%s\n' "$packages" "$MIRROR" "v1" | sha256sum | cut -c1-16)
base="$WORK/base-$key"
if [ ! -f "$base/.complete" ]; then
  rm -rf "$base" "$base.partial"
  echo "qualify-vm: building the guest's base root (once; cached as $base)"
  mmdebstrap --variant=apt --include="$packages" \
    --setup-hook='mkdir -p "$1/etc/apt/preferences.d" && printf "Package: systemd* libsystemd* libudev* udev libpam-systemd libnss-systemd linux-image-* linux-base\nPin: release n=bookworm-backports\nPin-Priority: 990\n" > "$1/etc/apt/preferences.d/qualify-backports"' \
    bookworm "$base.partial" \
    "deb $MIRROR bookworm main" "deb $MIRROR bookworm-updates main" \
    "deb $MIRROR bookworm-backports main" "deb ${MIRROR%/debian}/debian-security bookworm-security main"
  touch "$base.partial/.complete"
  mv "$base.partial" "$base"
fi

# ---- 2. the guest's root: the base, our build, the administrator's steps ------------------------
root="$WORK/root"
rm -rf "$root" && mkdir -p "$root"
cp -a "$base/." "$root/"
rm -f "$root/.complete"
DESTDIR="$root" meson install -C "$BUILD" --no-rebuild --quiet
share="$root/usr/local/share/dify-native"
install -m 0755 "$share/native-test-start.sh" "$root/usr/local/libexec/dify-native-start"
install -m 0644 "$share/native-test-supervisor.service" "$root/etc/systemd/system/dify-native.service"
install -m 0644 "$share/native-test-apparmor.profile" "$root/etc/apparmor.d/dify-native-test-supervisor"
chroot "$root" useradd --system --user-group --home-dir /var/lib/dify-native --shell /usr/sbin/nologin dify-native
token=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
echo_port=8790
install -d -m 0755 "$root/etc/dify-native"
cat > "$root/etc/dify-native/supervisor.env" <<ENV
SHELLCTL_AUTH_TOKEN=$token
SHELLCTL_NATIVE_BASE_ROOT=/srv/dify-native/base
SHELLCTL_NATIVE_INPUT_ROOT=/srv/dify-native/inputs
SHELLCTL_NATIVE_MEDIATOR=127.0.0.1:$echo_port
DIFY_NATIVE_LISTEN=127.0.0.1:8766
DIFY_NATIVE_STATE_DIR=/var/lib/dify-native
SHELLCTL_BIN=/usr/local/bin/shellctl
ENV
chmod 0600 "$root/etc/dify-native/supervisor.env"
canary="$SOURCE/tests/native/canary"
install -d -m 0755 "$root/srv/dify-native/base/canary" "$root/srv/dify-native/inputs/canary"
cp -r "$canary/base" "$root/srv/dify-native/base/canary/base"
install -m 0644 "$canary/input.txt" "$root/srv/dify-native/inputs/canary/input.txt"
chown -R 0:0 "$root/srv/dify-native"
# The qualification itself (runs once at boot, then powers the guest off).
qdir="$root/usr/local/share/dify-native-qualify"
install -d "$qdir"
install -m 0644 "$SOURCE/tests/native/qualify/integration_native_test.py" "$HERE/echo_server.py" "$qdir/"
install -m 0644 "$SOURCE/tests/support/harness.py" "$SOURCE/tests/e2e/jobs/test_job_limits.py" "$qdir/"
install -m 0755 "$HERE/guest-qualify.sh" "$root/usr/local/libexec/dify-native-qualify"
cat > "$root/etc/dify-native/qualify.env" <<ENV
DIFY_AGENT_LOCAL_NATIVE_TEST_ENDPOINT=http://127.0.0.1:8766
DIFY_AGENT_LOCAL_NATIVE_TEST_AUTH_TOKEN=$token
DIFY_AGENT_LOCAL_NATIVE_TEST_NETWORK_TARGET=127.0.0.1:$echo_port
DIFY_AGENT_LOCAL_NATIVE_TEST_UNIT=dify-native.service
ENV
chmod 0600 "$root/etc/dify-native/qualify.env"
cat > "$root/etc/systemd/system/dify-native-echo.service" <<UNIT
[Unit]
Description=The qualification's network target (an echo service on loopback, the mediator)
[Service]
ExecStart=/usr/bin/python3 /usr/local/share/dify-native-qualify/echo_server.py 127.0.0.1 $echo_port
DynamicUser=yes
UNIT
cat > "$root/etc/systemd/system/dify-native-qualify.service" <<'UNIT'
[Unit]
Description=Qualify this guest as a native-test host (integration-native-test)
Wants=dify-native.service dify-native-echo.service
After=dify-native.service dify-native-echo.service apparmor.service
[Service]
Type=oneshot
ExecStart=/usr/local/libexec/dify-native-qualify
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=1200
UNIT
wants="$root/etc/systemd/system/multi-user.target.wants"
mkdir -p "$wants"
for u in dify-native dify-native-echo dify-native-qualify; do ln -sf "/etc/systemd/system/$u.service" "$wants/$u.service"; done
echo "/dev/vda / ext4 defaults 0 1" > "$root/etc/fstab"
echo qualify-guest > "$root/etc/hostname"
ln -sf /dev/null "$root/etc/systemd/system/getty@tty1.service"
ln -sf /dev/null "$root/etc/systemd/system/serial-getty@ttyS0.service"

# ---- 3. disk and boot ------------------------------------------------------------------------
kernel=$(ls "$root"/boot/vmlinuz-* | sort -V | tail -1)
initrd=$(ls "$root"/boot/initrd.img-* | sort -V | tail -1)
cp "$kernel" "$WORK/vmlinuz" && cp "$initrd" "$WORK/initrd.img"
rm -f "$WORK/disk.img"
mkfs.ext4 -q -F -L qualify -d "$root" "$WORK/disk.img" 6G
# QUALIFY_VM_ACCEL=tcg forces software emulation where /dev/kvm exists but does not run a
# guest (seen on this project's VM: a nested "kvm-pvm" host stops the guest at its first
# instructions with an internal error in its log).
accel=(-enable-kvm -cpu host)
if [ "${QUALIFY_VM_ACCEL:-auto}" = tcg ] || [ ! -w /dev/kvm ]; then
  echo "qualify-vm: TCG (software emulation, slow)"
  accel=(-cpu max)
fi
console="$WORK/console.log"
: > "$console"
echo "qualify-vm: booting $(basename "$kernel") (console: $console)"
timeout "$TIMEOUT" qemu-system-x86_64 "${accel[@]}" -m 4096 -smp 2 -nographic -no-reboot \
  -kernel "$WORK/vmlinuz" -initrd "$WORK/initrd.img" \
  -append "root=/dev/vda rw console=ttyS0 lsm=landlock,lockdown,yama,apparmor,bpf apparmor=1 systemd.unified_cgroup_hierarchy=1 panic=-1" \
  -drive "file=$WORK/disk.img,format=raw,if=virtio" -nic none -monitor none -serial "file:$console" \
  >/dev/null 2>&1 || true

# ---- 4. the verdict ---------------------------------------------------------------------------
sed -n '/=== dify-native qualification ===/,/=== end ===/p' "$console" | sed 's/^\[[ 0-9.]*\] [a-z-]*\[[0-9]*\]: //'
rc=$(sed -n 's/.*QUALIFY-EXIT=\([0-9]*\).*/\1/p' "$console" | tail -1)
if [ -z "$rc" ]; then
  echo "qualify-vm: the guest never reported a result; the console's end:" >&2
  tail -60 "$console" >&2
  exit 1
fi
echo "qualify-vm: integration-native-test exited $rc in the guest"
exit "$rc"
