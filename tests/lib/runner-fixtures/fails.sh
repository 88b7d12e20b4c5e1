#!/usr/bin/env bash
# A section of the runner's fixtures (tests/sections/env.sh): one check passes, one fails.
source tests/lib/section.sh
ok "a check that passes"
bad "a check that fails" "its detail"
done_testing
