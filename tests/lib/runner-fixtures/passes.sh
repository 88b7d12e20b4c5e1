#!/usr/bin/env bash
# A section of the runner's fixtures (tests/sections/env.sh runs tests/run.sh on this folder): one check passes.
source tests/lib/section.sh
ok "a check that passes"
done_testing
