# AppArmor profile of the native test supervisor (docs/native-scopes.md "Deployment files"; S9,
# S26). The unit sets AppArmorProfile=dify-native-test-supervisor; the supervisor's `apparmor`
# check requires /proc/self/attr/apparmor/current to read
# "dify-native-test-supervisor (enforce)". Everything it starts — its scope workers (itself,
# re-exec'd), tmux, the runner and every job — inherits this profile (ix): a job never runs
# unconfined.
#
# Load (as root): apparmor_parser -r /etc/apparmor.d/dify-native-test-supervisor
# Ubuntu 24.04 restricts unprivileged user namespaces: the `userns,` rule its parser needs
# lives in the optional include /etc/apparmor.d/dify-native-userns (absent on 22.04, whose
# parser does not know the rule).
abi <abi/3.0>,

include <tunables/global>

profile dify-native-test-supervisor flags=(attach_disconnected) {
  include <abstractions/base>
  include <abstractions/nameservice>
  include if exists <dify-native-userns>

  # The supervisor and its helpers; the image's binaries for jobs, under this same profile.
  /usr/local/bin/shellctl mrix,
  /usr/local/libexec/shellctl/* mrix,
  /usr/local/libexec/dify-native-start mrix,
  /{usr/,}bin/** mrix,
  /{usr/,}sbin/** mrix,
  /usr/lib/** mrix,
  /usr/local/** mrix,
  /{usr/,}lib{,32,64,x32}/** mrix,
  /etc/** r,
  /usr/share/** r,

  # Its state (catalog, scopes' host directories, control and broker sockets), roots and settings.
  /var/lib/dify-native/ rw,
  /var/lib/dify-native/** rwlk,
  /etc/dify-native/** r,
  /srv/dify-native/** r,

  # Scope workers build their jobs' worlds inside their own user and mount namespaces.
  capability sys_admin,
  capability sys_chroot,
  capability setuid,
  capability setgid,
  capability setpcap,
  capability chown,
  capability fowner,
  capability fsetid,
  capability dac_override,
  capability dac_read_search,
  capability kill,
  capability net_admin,
  capability sys_resource,
  mount,
  umount,
  pivot_root,

  # The unit's delegated cgroup subtree.
  /sys/fs/cgroup/ r,
  /sys/fs/cgroup/** rw,
  /sys/kernel/security/apparmor/** r,
  /sys/devices/system/cpu/** r,
  /dev/{null,zero,full,random,urandom,tty,ptmx} rw,
  /dev/pts/* rw,
  /dev/shm/** rwlk,
  # A job's world (paths as its own root shows them): Home, workspace and /tmp are its to
  # write and to run what it builds there; inputs and its script are read-only.
  / r,
  /tmp/{,**} rwlkmix,
  /run/{,**} rwlkmix,
  /home/{,**} rwlkmix,
  /workspace/{,**} rwlkmix,
  /inputs/{,**} r,
  # The namespaces check's probe overlay (its own tmpfs, in a mount namespace of its own).
  /work/{,**} rw,
  @{PROC}/ r,
  @{PROC}/** r,
  @{PROC}/@{pid}/{uid_map,gid_map,setgroups} w,
  @{PROC}/@{pid}/attr/current r,
  @{PROC}/@{pid}/oom_score_adj w,

  # Loopback HTTP for clients; netlink to bring a scope's lo up; TCP for the broker's dials.
  network inet stream,
  network inet6 stream,
  network inet dgram,
  network inet6 dgram,
  network unix,
  network netlink raw,

  unix,

  signal (send, receive) peer=dify-native-test-supervisor,
  signal (receive) peer=unconfined,
  ptrace (read, trace) peer=dify-native-test-supervisor,

  # Reading a worker's /proc entries across its user namespace works without it; never
  # needed, so never granted (and not logged).
  deny capability sys_ptrace,

  # Never: the host's container runtimes, kernel knobs or other processes' memory.
  deny /var/run/docker.sock rw,
  deny /run/docker.sock rw,
  deny /run/containerd/** rw,
  deny /run/podman/** rw,
  deny @{PROC}/sys/** w,
  deny @{PROC}/sysrq-trigger rw,
  deny @{PROC}/kcore r,
  deny /sys/firmware/** r,
  deny /boot/** rw,
}
