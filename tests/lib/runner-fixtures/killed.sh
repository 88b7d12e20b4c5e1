#!/usr/bin/env bash
# A section of the runner's fixtures (tests/sections/env.sh): one check passes, then the section is killed, with no
# chance to write its plan or total; the runner counts that as a failure.
source tests/lib/section.sh
ok "a check that passes"
kill -9 $$
