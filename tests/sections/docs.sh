#!/usr/bin/env bash
# Section docs: the library's exports against the hook lists, glibc symbol versions, and every generated document
# (env.md, hooks.md, metrics.md and metrics.json, the man page, report-format.md) against its table; the layering
# between and inside the folders.
# Needs: make (the library, the command, build/obj, build/obj-cli), make test-bins (gen-*).
source tests/lib/section.sh

echo "== exports and docs"
want=$(sed -n '/^#define VG_HOOKS(X)/,/^$/s/^[[:space:]]*X(\([A-Za-z0-9_]*\),.*/\1/p' interposer/hooks.h
	sed -n '/^#define VG_NVML_HOOKS(X)/,/^$/s/^[[:space:]]*X(\([A-Za-z0-9_]*\),.*/\1/p' interposer/nvml/nvml.h
	echo dlsym; echo dlclose; echo vg_instance_marker)
got=$(nm -D --defined-only "$LIB" | awk '{print $3}')
# ASan adds one ODR indicator (__odr_asan.NAME) per exported variable; not ours.
[ "$SAN" = asan ] && got=$(grep -v '^__odr_asan\.' <<<"$got")
if [ "$(sort <<<"$want")" = "$(sort <<<"$got")" ]; then
	ok "exports are exactly the hook lists (CUDA, NVML) + dlsym + dlclose + vg_instance_marker ($(wc -l <<<"$got") symbols)"
else
	bad "exports differ from the hook list" "$(diff <(sort <<<"$want") <(sort <<<"$got") | head -5)"
fi
# Both run on glibc 2.17 and later although built here (tests/lib/elf.sh).
source tests/lib/elf.sh
glibc_at_most library "$LIB"
glibc_at_most command "$VG"
if diff -q <("$B/gen-env-doc") docs/env.md >/dev/null; then ok "docs/env.md matches the options table"; else
	bad "docs/env.md is stale: run $B/gen-env-doc > docs/env.md"; fi
# The README's configuration table: the options table's summary column (gen-env-doc --readme), between its markers.
readme_table=$(sed -n '/^<!-- BEGIN CONFIG TABLE/,/^<!-- END CONFIG TABLE -->/p' README.md | sed '1d;$d')
if [ -n "$readme_table" ] && diff -q <("$B/gen-env-doc" --readme) <(printf '%s\n' "$readme_table") >/dev/null; then
	ok "README.md's configuration table matches the options table ($(($(wc -l <<<"$readme_table") - 2)) variables)"
else
	bad "README.md's configuration table is stale: put the output of $B/gen-env-doc --readme between its CONFIG TABLE markers" \
		"$(diff <("$B/gen-env-doc" --readme) <(printf '%s\n' "$readme_table") | head -5)"
fi
if diff -q <("$B/gen-hook-doc") docs/hooks.md >/dev/null; then ok "docs/hooks.md matches the hook list"; else
	bad "docs/hooks.md is stale: run $B/gen-hook-doc > docs/hooks.md"; fi
# The exporter's metrics table (cli/metrics_table.h): docs/metrics.md's tables and the contract the examples' lint
# reads (docs/metrics.json, tests/lint/check_prometheus.py).
if "$B/gen-metrics-doc" docs/metrics.md >"$W/metrics.md" && cmp -s "$W/metrics.md" docs/metrics.md; then
	ok "docs/metrics.md matches the metrics table"
else bad "docs/metrics.md is stale: run make metrics-doc" "$(diff "$W/metrics.md" docs/metrics.md | head -5)"; fi
if "$B/gen-metrics-doc" --json >"$W/metrics.json" && cmp -s "$W/metrics.json" docs/metrics.json; then
	ok "docs/metrics.json matches the metrics table ($(grep -c '"name"' docs/metrics.json) metrics)"
else bad "docs/metrics.json is stale: run make metrics-doc" "$(diff "$W/metrics.json" docs/metrics.json | head -5)"; fi
# docs/install.md: every command it shows is one a test runs, its artifacts' names, Depends and sizes current.
prog "docs/install.md: its commands are the tests' own, its artifacts current" -- python3 tests/lint/check_install_doc.py
prog "docs/install.md's checker fails on broken copies of the page (--self-test)" -- \
	python3 tests/lint/check_install_doc.py --self-test
if "$B/gen-man" <docs/vramguard.1 | diff -q - docs/vramguard.1 >/dev/null; then
	ok "docs/vramguard.1 matches the options table and the command table (SYNOPSIS, options, ENVIRONMENT)"
else
	bad "docs/vramguard.1 is stale: run $B/gen-man < docs/vramguard.1 > $B/vramguard.1 && mv $B/vramguard.1 docs/"
fi
if ! command -v groff >/dev/null; then
	skip "the man page renders without warnings" "no groff here"
elif w=$(groff -man -Tutf8 -ww docs/vramguard.1 2>&1 >/dev/null) && [ -z "$w" ]; then
	ok "the man page renders without warnings"
else
	bad "groff warns about docs/vramguard.1" "$(head -3 <<<"$w")"
fi
# Each command's usage and its option list in the man page are drawn from the same rows (cli/commands.h; run's from
# the options table): the same flags in both, for every command `vramguard help` lists.
flag_cmds=0 flag_total=0 flag_bad=
for cmd in $("$VG" help | sed -n 's/^  \([a-z]*\)  .*/\1/p'); do
	up=${cmd^^}
	man_flags=$(sed -n "/BEGIN GENERATED $up OPTIONS/,/END GENERATED $up OPTIONS/p" docs/vramguard.1 |
		sed -n 's/^.*\\fB\\-\\-\([a-z\\-]*\)\\fR.*$/\1/p' | sed 's/\\-/-/g' | sort)
	help_flags=$("$VG" help "$cmd" | sed -En 's/^  (-[^ ], |    )?--([a-z-]+).*/\2/p' | sort)
	if [ "$man_flags" != "$help_flags" ]; then
		flag_bad+="$cmd: $(diff <(echo "$man_flags") <(echo "$help_flags") | grep '^[<>]' | head -3 | tr '\n' ' ')"
		continue
	fi
	[ -n "$help_flags" ] && flag_cmds=$((flag_cmds + 1)) flag_total=$((flag_total + $(wc -l <<<"$help_flags")))
done
if [ -z "$flag_bad" ] && [ "$flag_cmds" -ge 10 ]; then
	ok "help and the man page list the same flags, command by command ($flag_total flags of $flag_cmds commands)"
else
	bad "help and the man page disagree on the flags" "${flag_bad:-only $flag_cmds commands with flags found}"
fi
if "$B/gen-report-doc" docs/report-format.md >"$W/report-format.md" && cmp -s "$W/report-format.md" docs/report-format.md
then ok "docs/report-format.md matches the report schema"; else
	bad "docs/report-format.md is stale: run $B/gen-report-doc -i docs/report-format.md"; fi
# The folders' arrows point one way: config <- accounting, report <- interposer, cli; inside a folder, no circle of
# files and no edge up its declared order (scripts/check-layers.py), the library's and the command's calls included.
if layers=$(python3 scripts/check-layers.py --objs "$B/obj" --objs "$B/obj-cli" 2>&1); then ok "layers: $layers"
else bad "layers: a back edge or a circle in the include and call graph" "$(head -40 <<<"$layers")"; fi
# ... and that check still sees what it must: fixture trees with a circle or an edge up fail, clean ones pass.
if layers=$(python3 scripts/check-layers.py --self-test 2>&1); then ok "layers check: $layers"; else
	bad "layers check: a fixture tree was judged wrongly" "$(head -10 <<<"$layers")"; fi

# docs/TESTING.md's table of sections names each section of tests/sections/ once, and no other.
doc_sections=$(sed -n 's/^| `\([a-z0-9_]*\)` | .*/\1/p' docs/TESTING.md | sort)
if [ -n "$doc_sections" ] && [ "$doc_sections" = "$(bash tests/run.sh --list | sort)" ]; then
	ok "docs/TESTING.md lists the $(wc -l <<<"$doc_sections") sections of tests/sections/"
else
	bad "docs/TESTING.md's table of sections differs from tests/sections/" \
		"$(diff <(echo "$doc_sections") <(bash tests/run.sh --list | sort) | head -5)"
fi
done_testing
