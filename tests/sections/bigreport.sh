#!/usr/bin/env bash
# Section bigreport: a report of many call sites and deep stacks (bench/gen_bigreport.py, 500 sites x 64 frames, the
# shape of issue 29's 231 MB benchmark) reads back to the same text and diff as before the reader was made faster
# (goldens in tests/cli/bigreport/, written by the reader before issue 29), and cut anywhere it is one line of
# error. Needs: make (vramguard), python3.
source tests/lib/section.sh

echo "== big reports"
if ! command -v python3 >/dev/null; then
	skip "bigreport" "python3 is missing (it writes the report)"
	done_testing
	exit 0
fi
G=tests/cli/bigreport
python3 bench/gen_bigreport.py --sites 500 "$W/a.json"
python3 bench/gen_bigreport.py --sites 500 --variant 1 "$W/b.json"
sed '0,/"pid": 48213/s//"pid": 48214/' "$W/b.json" >"$W/other.json"       # another process: matched by stack

# same NAME GOLDEN: $CO (the last cli's stdout) is the golden file, byte for byte.
same() {
	if diff <(printf '%s\n' "$CO") "$G/$2" >/dev/null; then ok "$1"; else
		bad "$1" "$(diff <(printf '%s\n' "$CO") "$G/$2" | head -5)"; fi
}
cli "report: 500 sites x 64 frames" 0 '^vramguard: report \(signal\)' -- $VG report "$W/a.json"
same "  the text is the golden's" report.txt
cli "diff: the same process's next report" 0 '^vramguard: diff' -- $VG diff --all --rows 60 "$W/a.json" "$W/b.json"
same "  the diff (by id) is the golden's" diff.txt
cli "diff: another process's report" 0 '^vramguard: diff' -- $VG diff --rows 60 "$W/a.json" "$W/other.json"
same "  the diff (by stack) is the golden's" diff-stack.txt

# Cut inside a long run of plain characters (the reader takes such runs at once) and elsewhere: one line each.
size=$(stat -c %s "$W/a.json")
nbad=0
for at in $((size / 3)) $((size / 2)) $((size - 40)) 100; do
	head -c "$at" "$W/a.json" >"$W/cut.json"
	$VG report "$W/cut.json" >/dev/null 2>"$ERR"
	rc=$?
	if [ "$rc" -eq 0 ] || [ "$(wc -l <"$ERR")" -ne 1 ] || ! grep -q 'unexpected end of input' "$ERR"; then
		nbad=$((nbad + 1))
		echo "cut at $at: exit $rc: $(head -3 "$ERR")" >>"$LOG"
	fi
done
if [ "$nbad" -eq 0 ]; then ok "cut at 4 places: each one line, 'unexpected end of input'"; else
	bad "cut reports" "$nbad of 4 wrong (see $LOG)"; fi
printf '{"schema": "vramguard.report/1", "hostname": "%s' "$(head -c 100000 /dev/zero | tr '\0' a)" >"$W/cut.json"
cli "a 100 000-byte string cut by the end of the file" 1 '^$' -- $VG report "$W/cut.json"
expect_err_lines "  one line of error" 'line 1, column [0-9]+: unexpected end of input|unexpected end of input' 1

done_testing
