#!/usr/bin/env bash
# tests/gpu/nvml_check.sh: NVML and nvidia-smi under the preload on a real GPU (docs/quota.md, "NVML and
# nvidia-smi under the preload"), and our own NVML access for the sampler (interposer/nvml/nvml.c). Run from the repo
# root: bash tests/gpu/nvml_check.sh. VG_LIB (default build/libvramguard.so), PYTHON (python3 with torch; pynvml
# checks are skipped if it has no pynvml), VG_NVML_SAMPLER (a built tests/gpu/nvml_sampler.c; else it is compiled
# with cc). The checks' lines as tests/gpu/run.sh prints them (docs/TESTING.md); exit 1 on a failure.
set -u
VG_LIB=${VG_LIB:-$PWD/build/libvramguard.so}
PY=${PYTHON:-python3}
Q=4096
D=$(mktemp -d /dev/shm/vg-nvml.XXXXXX 2>/dev/null || mktemp -d /tmp/vg-nvml.XXXXXX)
HOLD=
trap '[ -n "$HOLD" ] && kill $HOLD 2>/dev/null; rm -rf "$D"' EXIT
unset LD_PRELOAD NVIDIA_GPU_MEMORY_LIMITS CUDA_DEVICE_MEMORY_LIMIT VRAMGUARD_SHARED VRAMGUARD_SHM_DIR 2>/dev/null
NP=0 NF=0 NS=0
result() { # PASS|FAIL|SKIP NAME TEXT
	local n=$((NP + NF + NS + 1))
	case $1 in
	PASS) NP=$((NP + 1)); printf 'ok %d - %s\n# %s\n' "$n" "$2" "$3" ;;
	FAIL) NF=$((NF + 1)); printf 'not ok %d - %s\n# %s\n' "$n" "$2" "$3" ;;
	SKIP) NS=$((NS + 1)); printf 'ok %d - %s # SKIP %s\n' "$n" "$2" "$3" ;;
	esac
	return 0
}
VG=(env LD_PRELOAD="$VG_LIB" VRAMGUARD_SHM_DIR="$D" VRAMGUARD_REPORT=off)
smi() { timeout 60 "$@" nvidia-smi -i 0 --query-gpu=memory.total,memory.used --format=csv,noheader,nounits | tr -d ' '; }

card=$(smi env)
echo "driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1); GPU 0 without the preload: total,used MiB = $card"
got=$(smi "${VG[@]}" NVIDIA_GPU_MEMORY_LIMITS=$Q)
[ "$got" = "$Q,0" ] && result PASS nvml_smi_quota "nvidia-smi under a $Q MiB quota: total,used = $got (card: $card)" ||
	result FAIL nvml_smi_quota "nvidia-smi under a $Q MiB quota: total,used = '$got', want '$Q,0' (card: $card)"
got=$(smi "${VG[@]}")
[ "$got" = "$card" ] || [ "${got%%,*}" = "${card%%,*}" ] && result PASS nvml_smi_nolimit "no limit: $got, the card's" ||
	result FAIL nvml_smi_nolimit "no limit: '$got', want the card's '$card'"
got=$(smi "${VG[@]}" NVIDIA_GPU_MEMORY_LIMITS=0:2048)
[ "$got" = "2048,0" ] && result PASS nvml_smi_ordinal "a per-ordinal limit 0:2048 (the driver asked for the ordinal): $got" ||
	result FAIL nvml_smi_ordinal "a per-ordinal limit 0:2048: '$got', want '2048,0'"

# A CUDA process of the "container" holds 1 GiB; nvidia-smi and pynvml see it through its control segment.
"${VG[@]}" NVIDIA_GPU_MEMORY_LIMITS=$Q "$PY" -c '
import sys, torch
x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
print("ready", flush=True)
sys.stdin.read()' >"$D/hold.o" 2>"$D/hold.e" < <(sleep 300) &
HOLD=$!
for _ in $(seq 600); do grep -q ready "$D/hold.o" 2>/dev/null && break; sleep 0.1; done
sleep 1  # a sampler round: under VRAMGUARD_COUNT=device the driver's part of the process is counted too
app=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits | tr -d ' ' | grep "^$HOLD," | cut -d, -f2)
got=$(smi "${VG[@]}" NVIDIA_GPU_MEMORY_LIMITS=$Q)
u=${got#*,}
# used: at least the tensor (allocations), at most what the driver says the process holds (device counting)
if [ "${got%%,*}" = "$Q" ] && [ "${u:-0}" -ge 1024 ] && [ "${u:-0}" -le "$((${app:-1024} + 1))" ]; then
	result PASS nvml_smi_container "a PyTorch process holds a 1 GiB tensor (the driver: ${app:-?} MiB for it): nvidia-smi says total,used = $got"
else
	result FAIL nvml_smi_container "a PyTorch process holds a 1 GiB tensor (the driver: '${app:-}' MiB): nvidia-smi says '$got', want total $Q, used 1024..${app:-1024} ($(head -c 200 "$D/hold.e"))"
fi
echo "nvidia-smi under the preload:"; "${VG[@]}" NVIDIA_GPU_MEMORY_LIMITS=$Q timeout 60 nvidia-smi | sed -n '/MiB \//p;/Processes/,$p'

if "$PY" -c 'import pynvml' 2>/dev/null; then
	got=$("${VG[@]}" NVIDIA_GPU_MEMORY_LIMITS=$Q timeout 60 "$PY" -c '
import pynvml as n
n.nvmlInit(); h = n.nvmlDeviceGetHandleByIndex(0); M = 1 << 20
a = n.nvmlDeviceGetMemoryInfo(h); b = n.nvmlDeviceGetMemoryInfo(h, version=n.nvmlMemory_v2)
p = n.nvmlDeviceGetComputeRunningProcesses(h)
print(a.total // M, a.used // M, a.free // M, b.total // M, b.used // M, b.free // M, b.reserved, len(p),
      max([x.usedGpuMemory // M for x in p] or [0]))' 2>&1 | tail -1)
	read -r t1 u1 f1 t2 u2 f2 r2 np pm <<<"$got"
	if [ "$t1 $f1 $t2 $u2 $f2 $r2" = "$Q $((Q - u1)) $Q $u1 $((Q - u1)) 0" ] && [ "${u1:-0}" -ge 1024 ] &&
		[ "${u1:-0}" -le "$((${pm:-0} + 1))" ] && [ "${pm:-0}" -gt 1024 ]; then
		result PASS nvml_pynvml "v1 and v2: total $t1, used $u1, free $f1 MiB, reserved 0; process list unchanged ($np processes, the largest $pm MiB: the driver's figure, context included)"
	else
		result FAIL nvml_pynvml "pynvml said '$got' (want total $Q, used 1024..the process's figure, free the rest, v2 the same, reserved 0, N, >1024)"
	fi
else
	result SKIP nvml_pynvml "no pynvml for $PY"
fi
kill $HOLD 2>/dev/null
wait $HOLD 2>/dev/null
HOLD=

S=${VG_NVML_SAMPLER:-}
if [ -z "$S" ]; then
	S=$D/nvml_sampler
	cc -std=gnu11 -O1 -I. -I/usr/local/cuda/include tests/gpu/nvml_sampler.c interposer/nvml/nvml.c -ldl -o "$S" 2>"$D/cc.e" ||
		{ result FAIL nvml_sampler "compile failed: $(head -c 300 "$D/cc.e")"; S=; }
fi
if [ -n "$S" ]; then
	"$S" 512 >"$D/s.o" 2>&1 < <(sleep 30) &
	SP=$!
	for _ in $(seq 300); do grep -q '^ready' "$D/s.o" 2>/dev/null && break; sleep 0.1; done
	app=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits | tr -d ' ' | grep "^$SP," | cut -d, -f2)
	kill $SP 2>/dev/null; wait $SP 2>/dev/null
	read -r _ urc ub <<<"$(grep '^used ' "$D/s.o")"
	read -r _ lrc lh ls <<<"$(grep '^limits ' "$D/s.o")"
	drv=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1 | cut -d. -f1)
	if [ "${urc:-x}" = 0 ] && [ "$((ub >> 20))" = "${app:-none}" ]; then
		result PASS nvml_sampler_used "vg_nvml_process_used: $((ub >> 20)) MiB for 512 MiB allocated (nvidia-smi: $app MiB)"
	else
		result FAIL nvml_sampler_used "vg_nvml_process_used rc '${urc:-}' $((${ub:-0} >> 20)) MiB, nvidia-smi says '${app:-}' MiB: $(tr '\n' ' ' <"$D/s.o")"
	fi
	if [ "${drv:-0}" -lt 615 ] && [ "${lrc:-x}" = -38 ]; then
		result PASS nvml_sampler_limits "driver $drv: vg_nvml_driver_limits -ENOSYS (no nvmlDeviceGetMemoryLimits_v1); $(grep '^cgroup' "$D/s.o")"
	elif [ "${drv:-0}" -ge 615 ] && [ "${lrc:-x}" = 0 ]; then
		result PASS nvml_sampler_limits "driver $drv: hard $lh soft $ls; $(grep '^cgroup' "$D/s.o")"
	else
		result FAIL nvml_sampler_limits "driver $drv: $(grep '^limits\|^cgroup\|^load' "$D/s.o" | tr '\n' ' ')"
	fi
fi
echo "$NP passed, $NF failed, $NS skipped"
[ "$NF" -eq 0 ]
