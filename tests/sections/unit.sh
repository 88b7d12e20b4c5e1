#!/usr/bin/env bash
# Section unit: the unit binaries of tests/unit/ (one check each here, their own checks in the log) and the fuzz
# targets' replays of their corpus and regressions. Needs: make test-bins (test_*, fuzz_*_replay).
source tests/lib/section.sh

unit test_config
unit test_accounting
unit test_region
# These find the fake NVML through their rpath, but a sanitizer's dlopen interceptor is not the executable: it
# searches without the executable's RUNPATH. LD_LIBRARY_PATH names the same directories.
LD_LIBRARY_PATH="$PWD/$T" unit test_nvml
LD_LIBRARY_PATH="$PWD/$T/nvml-r580:$PWD/$T" unit test_nvml_r580
unit test_nvml_missing
unit test_report
unit test_allocator
unit test_symbolize
unit test_json_read
unit test_diff
unit test_timeline
unit test_growth
unit test_throttle
unit test_gpu_share
unit test_unwind
unit test_lockorder
for t in config json path diff http webhook; do
	if [ "$SAN" = tsan ]; then skip "unit fuzz_${t}_replay" "built with ASan+UBSan, which cannot be combined with TSan"
	else unit fuzz_${t}_replay; fi
done

done_testing
