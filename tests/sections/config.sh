#!/usr/bin/env bash
# Section config: configuration errors fail closed, one line each; every variable of the options table with
# hostile values; the compute share's forms, precedence and errors (check, run --compute); processes that never
# touch CUDA are not touched. Needs: make test-bins (direct, nocuda, gen-env-doc).
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

echo "== the compute share: VRAMGUARD_COMPUTE_LIMIT, CUDA_DEVICE_SM_LIMIT[_<i>] (docs/compute.md)"
# Each invalid value: exactly this one line on stderr, and the process fails closed as with an invalid quota
# (badconfig: cuInit and every allocation refused, no GPU memory). Bytes compared as bytes (a value not UTF-8).
CX=" (expected e.g. 50%, 0:30%,1:70%, GPU-<uuid>:40%, unlimited)"
HX=": expected an integer from 0 to 100 (0 and 100: no limit, as in HAMi-core)"
compute_bad() { # VAR VALUE MESSAGE-AFTER-"invalid VAR "
	local want="vramguard: error: invalid $1 $3"
	prog "invalid $1='$(printf '%s' "$2" | LC_ALL=C tr -c '[:print:]' '?' | head -c 40)' fails closed" $PRE "$1=$2" -- $D badconfig
	if [ "$(LC_ALL=C grep -c '^vramguard: ' "$ERR")" = 1 ] && [ "$(LC_ALL=C grep -Fxc -- "$want" "$ERR")" = 1 ]; then
		ok "  its one line: $(printf '%s' "$want" | LC_ALL=C tr -c '[:print:]' '?' | cut -c1-150)"
	else bad "  want the one line '$want'" "$(head -3 "$ERR")"; fi
}
compute_bad VRAMGUARD_COMPUTE_LIMIT 0% "'0%': 0% would never let a kernel run (no limit: unlimited)$CX"
compute_bad VRAMGUARD_COMPUTE_LIMIT 101% "'101%': percentage above 100%$CX"
compute_bad VRAMGUARD_COMPUTE_LIMIT 50 "'50': missing '%' (a share is a whole percentage of the GPU's time)$CX"
compute_bad VRAMGUARD_COMPUTE_LIMIT 50.5% "'50.5%': not a whole percentage$CX"
compute_bad VRAMGUARD_COMPUTE_LIMIT 5O% "'5O%': not a percentage$CX"
compute_bad VRAMGUARD_COMPUTE_LIMIT '50%,,1:20%' "'50%,,1:20%': empty item in list$CX"
compute_bad VRAMGUARD_COMPUTE_LIMIT '50%,' "'50%,': empty item in list$CX"
compute_bad VRAMGUARD_COMPUTE_LIMIT '0:30%,0:40%' "'0:40%': duplicate device key$CX"
compute_bad VRAMGUARD_COMPUTE_LIMIT '1:' "'1:': missing percentage after the key$CX"
compute_bad VRAMGUARD_COMPUTE_LIMIT 'gpu0:50%' "'gpu0:50%': unknown device key (want an ordinal, GPU-<uuid> or MIG-<uuid>)$CX"
compute_bad VRAMGUARD_COMPUTE_LIMIT $'5\xff%' $'\'5\xff%\': not a percentage'"$CX"
compute_bad CUDA_DEVICE_SM_LIMIT 062 "'062': a leading 0 (HAMi-core reads the number as octal); expected an integer from 0 to 100"
for v in 0x32 50% -5 150; do compute_bad CUDA_DEVICE_SM_LIMIT_1 "$v" "'$v'$HX"; done

# Every valid form, resolved per GPU by `vramguard check` against the test double (3 GPUs, GPU-0000000i-... UUIDs).
U2=GPU-00000002-0000-0000-0000-000000000002
compute_check() { # NAME WANT(GPU 0|GPU 1|GPU 2) [VAR=value ...]
	local name=$1 want=$2 got
	shift 2
	cli "check: $name" 0 '^  GPU 2  ' $FAKEENV FAKECUDA_DEVICES=3 "$@" -- $VG check
	got=$(sed -n 's/^         compute:\{0,1\} //p' <<<"$CO" | paste -sd '|')
	[ "$got" = "$want" ] && ok "  GPU 0, 1, 2: $want" || bad "  want '$want'" "got '$got'"
}
V="of the GPU's time (VRAMGUARD_COMPUTE_LIMIT)"
compute_check "no share set: no limit" "no limit|no limit|no limit"
compute_check "50%" "50% $V|50% $V|50% $V" VRAMGUARD_COMPUTE_LIMIT=50%
compute_check "0:30%,1:70% (by ordinal)" "30% $V|70% $V|no limit" VRAMGUARD_COMPUTE_LIMIT=0:30%,1:70%
compute_check "$U2:40% (by UUID)" "no limit|no limit|40% $V" VRAMGUARD_COMPUTE_LIMIT=$U2:40%
compute_check "a default plus exceptions: 50%,1:20%" "50% $V|20% $V|50% $V" VRAMGUARD_COMPUTE_LIMIT=50%,1:20%
compute_check "a UUID key beats an ordinal key" "no limit|no limit|40% $V" "VRAMGUARD_COMPUTE_LIMIT=2:10%,${U2,,}=40%"
compute_check "unlimited" "no limit (VRAMGUARD_COMPUTE_LIMIT)|no limit (VRAMGUARD_COMPUTE_LIMIT)|no limit (VRAMGUARD_COMPUTE_LIMIT)" \
	VRAMGUARD_COMPUTE_LIMIT=unlimited
compute_check "100%: a cap that never delays" "100% $V: measured, never delayed|30% $V|100% $V: measured, never delayed" \
	VRAMGUARD_COMPUTE_LIMIT=100%,1:30%
compute_check "empty: unset" "no limit|no limit|no limit" VRAMGUARD_COMPUTE_LIMIT=
S="of the GPU's time (CUDA_DEVICE_SM_LIMIT"
compute_check "HAMi-core's names: CUDA_DEVICE_SM_LIMIT=30, _1=60, _2=0 (0 there: CUDA_DEVICE_SM_LIMIT applies)" \
	"30% $S)|60% ${S}_1)|30% $S)" CUDA_DEVICE_SM_LIMIT=30 CUDA_DEVICE_SM_LIMIT_1=60 CUDA_DEVICE_SM_LIMIT_2=0
compute_check "HAMi-core's 0 and 100: no limit" "no limit (CUDA_DEVICE_SM_LIMIT)|no limit (CUDA_DEVICE_SM_LIMIT_1)|no limit (CUDA_DEVICE_SM_LIMIT)" \
	CUDA_DEVICE_SM_LIMIT=0 CUDA_DEVICE_SM_LIMIT_1=100
compute_check "precedence: VRAMGUARD_COMPUTE_LIMIT > CUDA_DEVICE_SM_LIMIT_<i> > CUDA_DEVICE_SM_LIMIT" \
	"30% $S)|20% $V|70% ${S}_2)" VRAMGUARD_COMPUTE_LIMIT=1:20% CUDA_DEVICE_SM_LIMIT_1=60 CUDA_DEVICE_SM_LIMIT_2=70 \
	CUDA_DEVICE_SM_LIMIT=30
grep -Fqx "  note: CUDA_DEVICE_SM_LIMIT_1 '60' is ignored for the devices VRAMGUARD_COMPUTE_LIMIT '1:20%' names (it takes precedence); CUDA_DEVICE_SM_LIMIT '30' is ignored for the devices VRAMGUARD_COMPUTE_LIMIT '1:20%' names (it takes precedence)" <<<"$CO" &&
	ok "  check's note names the ignored one" || bad "  check's note" "$(grep note: <<<"$CO")"
cli "check: an invalid share exits 2 and says why" 2 '^  GPU 2  ' $FAKEENV FAKECUDA_DEVICES=3 VRAMGUARD_COMPUTE_LIMIT=0% -- \
	$VG check
! grep -q '^         compute' <<<"$CO" && grep -Fqx "  vramguard: error: invalid VRAMGUARD_COMPUTE_LIMIT '0%': 0% would never let a kernel run (no limit: unlimited)$CX" <<<"$CO" &&
	ok "  the error line, and no compute line" || bad "  check with an invalid share" "$(head -40 <<<"$CO" | tail -8)"

# Values that disagree: the library's one info line names the ignored one (as for the memory names).
prog "info line: CUDA_DEVICE_SM_LIMIT ignored for VRAMGUARD_COMPUTE_LIMIT" $PRE VRAMGUARD_LOG=info \
	NVIDIA_GPU_MEMORY_LIMITS=4096 VRAMGUARD_COMPUTE_LIMIT=50% CUDA_DEVICE_SM_LIMIT=30 -- $D quota
expect_err_lines "  one info line" \
	"^vramguard: info: CUDA_DEVICE_SM_LIMIT '30' is ignored \(VRAMGUARD_COMPUTE_LIMIT '50%' takes precedence\)$" 1
prog "no info line when they agree" $PRE VRAMGUARD_LOG=info NVIDIA_GPU_MEMORY_LIMITS=4096 \
	VRAMGUARD_COMPUTE_LIMIT=50% CUDA_DEVICE_SM_LIMIT=50 -- $D quota
expect_err_lines "  none" "is ignored" 0

# `vramguard run --compute` / -c sets the variable; a bad share stops the job before it starts; help and man list it.
cli "run --compute 30% sets VRAMGUARD_COMPUTE_LIMIT" 0 '^30%$' -- $VG run --compute 30% -- sh -c 'echo $VRAMGUARD_COMPUTE_LIMIT'
cli "run -c 0:30%,1:70% too" 0 '^0:30%,1:70%$' -- $VG run -c 0:30%,1:70% -- sh -c 'echo $VRAMGUARD_COMPUTE_LIMIT'
cli "run --compute beats the environment" 0 '^40%$' VRAMGUARD_COMPUTE_LIMIT=10% -- \
	$VG run --compute 40% -- sh -c 'echo $VRAMGUARD_COMPUTE_LIMIT'
cli "run --compute 0% is rejected before the command starts" 2 '^$' -- $VG run --compute 0% -- sh -c 'echo ran'
expect_err_lines "  with the library's one line" "^vramguard: error: invalid VRAMGUARD_COMPUTE_LIMIT '0%': " 1
cli "run: a bad CUDA_DEVICE_SM_LIMIT is rejected too" 2 '^$' CUDA_DEVICE_SM_LIMIT=50% -- $VG run -- sh -c 'echo ran'
cli "help run lists -c, --compute" 0 '^  -c, --compute SPEC +VRAMGUARD_COMPUTE_LIMIT: 50%, 0:30%,1:70%, GPU-<uuid>:40%, unlimited$' \
	-- $VG help run
if grep -Fxq '\fB\-c\fR, \fB\-\-compute\fR \fIspec\fR' docs/vramguard.1 &&
	grep -Fxq '\fBVRAMGUARD_COMPUTE_LIMIT\fR' docs/vramguard.1 && grep -Fxq '\fBCUDA_DEVICE_SM_LIMIT\fR' docs/vramguard.1 &&
	grep -Fxq '\fBCUDA_DEVICE_SM_LIMIT_\fIi\fP\fR' docs/vramguard.1; then
	ok "the man page lists run's --compute and the three variables"
else bad "the man page lacks --compute or a compute variable"; fi
for var in VRAMGUARD_COMPUTE_LIMIT CUDA_DEVICE_SM_LIMIT 'CUDA_DEVICE_SM_LIMIT_<i>'; do
	grep -q "^| \`$var\` |" docs/env.md && grep -q "^| \`$var\` |" README.md || bad "docs/env.md or README.md lacks $var"
done
ok "docs/env.md and README.md's table list the three variables"

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
