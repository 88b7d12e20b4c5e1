#!/usr/bin/env bash
# A section of the runner's fixtures (tests/sections/env.sh): one check skipped, with its reason.
source tests/lib/section.sh
skip "a check that cannot run here" "the reason"
done_testing
