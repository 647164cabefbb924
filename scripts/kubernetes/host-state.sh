# shellcheck shell=bash
# What `up` changes on the machine, recorded before the first start and put back by `down`:
# sysctls, iptables rules, the engine daemons' OOM scores, cgroups and folders.
# Sourced by scripts/kubernetes.sh, whose settings and helpers it uses; read on its own, as
# by shellcheck, it sources them first.
[ -n "${KUBERNETES_VERSION:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/../kubernetes.sh"

iptables_tables=(filter nat mangle)

take_snapshot() {
  [ -f "$SNAPSHOT/taken" ] && return
  mkdir -p "$SNAPSHOT"
  local name
  for name in "${TUNED_SYSCTLS[@]}"; do
    sysctl -n "$name" >/dev/null 2>&1 && echo "$name=$(sysctl -n "$name")"
  done >"$SNAPSHOT/sysctl"
  local table
  for table in "${iptables_tables[@]}"; do
    iptables -t "$table" -S >"$SNAPSHOT/iptables-$table" 2>/dev/null || true
    ip6tables -t "$table" -S >"$SNAPSHOT/ip6tables-$table" 2>/dev/null || true
  done
  local folder
  for folder in /var/log/pods /var/log/containers "$HOSTPATH_ROOT"; do
    if [ -d "$folder" ]; then ls -A "$folder" >"$SNAPSHOT/entries$(echo "$folder" | tr / _)"; fi
  done
  docker ps -aq --filter label=io.kubernetes.pod.uid >"$SNAPSHOT/kubernetes-containers" 2>/dev/null || true
  # dockershim sets -999 on the engine's daemons every 5 minutes where the machine lets it.
  local daemon pid
  for daemon in dockerd containerd; do
    for pid in $(pgrep -x "$daemon" 2>/dev/null || true); do echo "$pid $(cat "/proc/$pid/oom_score_adj" 2>/dev/null)"; done
  done >"$SNAPSHOT/oom-score-adj"
  date +%s >"$SNAPSHOT/taken"
}

restore_sysctls() {
  [ -f "$SNAPSHOT/sysctl" ] || return 0
  local line name value
  while IFS= read -r line; do
    name="${line%%=*}"; value="${line#*=}"
    if [ "$(sysctl -n "$name" 2>/dev/null)" != "$value" ]; then
      k8s_say "putting back $name=$value (was changed to $(sysctl -n "$name"))"
      sysctl -q -w "$name=$value" >/dev/null
    fi
  done <"$SNAPSHOT/sysctl"
}

restore_oom_scores() {
  [ -f "$SNAPSHOT/oom-score-adj" ] || return 0
  local pid value
  while read -r pid value; do
    # shellcheck disable=SC2015 # meant: unless both hold, next line
    [ -n "$value" ] && [ -e "/proc/$pid" ] || continue
    if [ "$(cat "/proc/$pid/oom_score_adj")" != "$value" ]; then
      k8s_say "putting back oom_score_adj $value of $(cat "/proc/$pid/comm") (pid $pid)"
      echo "$value" >"/proc/$pid/oom_score_adj" 2>/dev/null || true
    fi
  done <"$SNAPSHOT/oom-score-adj"
}

# The kubelet's cgroup root in every hierarchy: made (cpuset needs its cpus and mems filled in by
# hand) before the kubelet starts, removed deepest first once no pod's container is left.
create_cgroup_root() {
  local controller base
  for controller in "${CGROUP_CONTROLLERS[@]}"; do
    base="/sys/fs/cgroup/$controller"
    [ -d "$base" ] || continue
    mkdir -p "$base/$CGROUP_ROOT"
    if [ "$controller" = cpuset ]; then
      [ -s "$base/$CGROUP_ROOT/cpuset.cpus" ] || cat "$base/cpuset.cpus" >"$base/$CGROUP_ROOT/cpuset.cpus"
      [ -s "$base/$CGROUP_ROOT/cpuset.mems" ] || cat "$base/cpuset.mems" >"$base/$CGROUP_ROOT/cpuset.mems"
    fi
  done
}

remove_cgroup_root() {
  local folder
  # Every hierarchy, the unified one of a hybrid machine included (the kubelet makes it there too).
  for folder in /sys/fs/cgroup/*/"$CGROUP_ROOT" "/sys/fs/cgroup/$CGROUP_ROOT"; do
    [ -d "$folder" ] || continue
    find "$folder" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    # shellcheck disable=SC2002 # cat: a folder gone meanwhile counts 0 processes, with no error message
    [ -d "$folder" ] && k8s_say "could not remove $folder (processes left in it: $(cat "$folder/cgroup.procs" 2>/dev/null | wc -l))"
  done
  return 0
}

# Removes only rules and chains that mention KUBE- and were not there before `up`.
restore_iptables() {
  local tool table rule chain
  for tool in iptables ip6tables; do
    command -v "$tool" >/dev/null 2>&1 || continue
    for table in "${iptables_tables[@]}"; do
      [ -f "$SNAPSHOT/$tool-$table" ] || continue
      while IFS= read -r rule; do
        grep -qxF -- "$rule" "$SNAPSHOT/$tool-$table" && continue
        k8s_say "removing $tool -t $table ${rule}"
        eval "$tool -t $table -D ${rule#-A }" 2>/dev/null || true
      done < <("$tool" -t "$table" -S 2>/dev/null | grep -E '^-A ' | grep -- 'KUBE-' || true)
      while IFS= read -r chain; do
        grep -qxF -- "-N $chain" "$SNAPSHOT/$tool-$table" && continue
        k8s_say "removing $tool -t $table chain $chain"
        "$tool" -t "$table" -F "$chain" 2>/dev/null || true
        "$tool" -t "$table" -X "$chain" 2>/dev/null || true
      done < <("$tool" -t "$table" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ {print $2}' || true)
    done
  done
}

# A folder the cluster writes into outside its state folder: removed when `up` made it, else
# only the entries that appeared since.
restore_folder() {
  local folder="$1" record; record="$SNAPSHOT/entries$(echo "$folder" | tr / _)"
  [ -d "$folder" ] || return 0
  if [ ! -f "$record" ]; then rm -rf "$folder"; return; fi
  local entry
  while IFS= read -r entry; do
    grep -qxF -- "$entry" "$record" || rm -rf "${folder:?}/$entry"
  done < <(ls -A "$folder")
}
