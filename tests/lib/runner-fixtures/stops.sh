#!/usr/bin/env bash
# A section of the runner's fixtures (tests/sections/env.sh): one check passes, then the section stops (exit 3)
# before its end; section.sh counts that as a failure.
source tests/lib/section.sh
ok "a check that passes"
exit 3
