#!/usr/bin/env bash
# Section config: configuration errors fail closed, one line each; every variable of the options table with
# hostile values; processes that never touch CUDA are not touched. Needs: make test-bins (direct, nocuda, gen-env-doc).
source tests/lib/section.sh

echo "== configuration errors fail closed"
for bad_value in 4XB -1 0 '0:4G,0:2G' 'x:1G' '4 G' 99999999999T MIG-x:1G MIG-GPU-00000001-0000-0000-0000-000000000001/1:1G; do
	prog "invalid NVIDIA_GPU_MEMORY_LIMITS='$bad_value'" $PRE "NVIDIA_GPU_MEMORY_LIMITS=$bad_value" -- $D badconfig
	expect_err_lines "  one line naming the variable and the value" \
		"^vramguard: error: invalid NVIDIA_GPU_MEMORY_LIMITS '[^']*': .* \\(expected e\\.g\\. " 1
done
prog "invalid VRAMGUARD_LOG" $PRE VRAMGUARD_LOG=loud -- $D badconfig
expect_err_lines "  one line naming VRAMGUARD_LOG" "^vramguard: error: invalid VRAMGUARD_LOG 'loud'" 1
prog "invalid HAMi CUDA_DEVICE_MEMORY_LIMIT" $PRE CUDA_DEVICE_MEMORY_LIMIT=lots -- $D badconfig
expect_err_lines "  one line naming CUDA_DEVICE_MEMORY_LIMIT" "^vramguard: error: invalid CUDA_DEVICE_MEMORY_LIMIT 'lots'" 1

# Every variable of the options table (docs/env.md) with huge, long, negative, overflowing, non-ASCII and garbage
# values: one error line naming it, at most 300 characters however long the value (5 000 characters here), and the
# process gets no GPU memory. (Empty means unset: checked above for NVIDIA_GPU_MEMORY_LIMITS.)
HUGE=$(printf '9%.0s' $(seq 5000))
LONGPATH=/$(printf 'a%.0s' $(seq 4999))
VARS=$("$B/gen-env-doc" | sed -n 's/^| `\([A-Z0-9_]*\)\(<i>\)\{0,1\}`.*/\1\2/p' | sed 's/<i>$/3/')
nbad=0
nvars=0
for var in $VARS; do
	nvars=$((nvars + 1))
	for val in "$HUGE" "$LONGPATH" "-5" "18446744073709551616" "4Gé" $'bad\x01\x7fvalue' "%q"; do
		# a path template accepts most text, a region name some: only their invalid forms apply
		case $var:$val in
		VRAMGUARD_REPORT:"$HUGE" | VRAMGUARD_REPORT:"$LONGPATH" | VRAMGUARD_REPORT:%q) ;;
		VRAMGUARD_REPORT:*) continue ;;
		VRAMGUARD_SHARED:-5 | VRAMGUARD_SHARED:18446744073709551616) continue ;;
		esac
		out=$(env -u NVIDIA_GPU_MEMORY_LIMITS LD_LIBRARY_PATH="$PWD/$T" $PRE "$var=$val" timeout 60 $D badconfig 2>&1)
		rc=$?
		nbad=$((nbad + 1))
		lines=$(grep -c '^vramguard: error: invalid '"$var"' ' <<<"$out")
		width=$(grep '^vramguard: ' <<<"$out" | awk '{ print length }' | sort -n | tail -1)
		if [ "$rc" -ne 0 ] || [ "$lines" -ne 1 ] || grep -q '^not ok' <<<"$out" || [ "${width:-0}" -gt 300 ]; then
			bad "bad input $var='${val:0:20}': rc=$rc, $lines error lines, widest $width" "$(head -3 <<<"$out" | cut -c1-300)"
		fi
	done
done
[ "$nvars" -ge 16 ] || bad "bad input: only $nvars variables read from the options table"
ok "bad input: $nbad values across $nvars variables each give one error line (<= 300 chars) and fail closed"

echo "== processes that never touch CUDA"
prog "no CUDA: dlsym works, libcuda not loaded, no thread" $PRE NVIDIA_GPU_MEMORY_LIMITS=4XB -- $T/nocuda
expect_quiet "no CUDA: nothing printed even with an invalid limit"
prog "no CUDA, valid config: no exit report" $PRE NVIDIA_GPU_MEMORY_LIMITS=4096 -- $T/nocuda
expect_quiet "no CUDA: no report at exit"
out=$(LD_PRELOAD="$SP$LIB" NVIDIA_GPU_MEMORY_LIMITS=4XB sh -c 'echo hi; exit 3' 2>&1)
rc=$?
if [ "$rc" -eq 3 ] && [ "$out" = hi ]; then ok "sh -c under the preload: same output and exit code"; else
	bad "sh -c under the preload" "rc=$rc out=$out"; fi

done_testing
