# shellcheck shell=bash
# tests/gpu/install.sh: the packages of docs/install.md on the real driver, sourced by tests/gpu/run.sh (its helpers
# run, program, result, ... and variables). VG_ONLY=install runs only library_loads and these.
#   VG_DEB  the .deb (default: build/vramguard_*_amd64.deb, from `make deb`)
#   VG_WHL  the wheel (default: build/vramguard-*-manylinux2014_x86_64.whl, from `make wheel`)
# install_deb: `apt install ./DEB` as root (dpkg -i where apt is missing), the installed command's `vramguard check`
# must find the real driver and its GPUs, `vramguard run --limit 4096M` must hold in PyTorch (cli_torch.py), and
# `apt purge` must leave none of the package's files. install_wheel: `pip install --no-index` into $PY's
# environment (the one with torch), the console script and `python -m vramguard run` must hold the same quota, and
# vramguard.library_path() must be the installed library; `pip uninstall` after.

# install_deb: the Debian package on the GPU machine, installed, used and purged.
install_deb() {
	local name=install_deb deb why="" list left how chk gpu0
	deb=${VG_DEB:-$(first_file "$PWD"/build/vramguard_*_amd64.deb)}
	if [ -z "$deb" ]; then result SKIP $name "no .deb (make deb, or set VG_DEB)"; return; fi
	if [ "$(id -u)" != 0 ] || ! command -v dpkg >/dev/null; then result SKIP $name "needs root and dpkg"; return; fi
	if dpkg-query -W vramguard >/dev/null 2>&1; then result SKIP $name "a vramguard package is installed already"; return; fi
	if command -v apt >/dev/null; then
		how="apt install ./$(basename "$deb")"
		run $name.install sh -c "cd '$(dirname "$deb")' && apt install -y './$(basename "$deb")'"
	else
		how="dpkg -i $(basename "$deb")"
		run $name.install dpkg -i "$deb"
	fi
	if [ "$RC" -ne 0 ]; then result FAIL $name "$how: $(why_rc)$(stderr_tail)"; return; fi
	list=$(dpkg -L vramguard 2>>"$LOG")
	run $name.check /usr/bin/vramguard check
	chk=$(grep -m1 '^libcuda.so.1:' "$BUILD/o" | cut -c1-80)
	gpu0=$(grep -m1 '^  GPU 0 ' "$BUILD/o" | sed 's/^  //' | cut -c1-60)
	if [ "$RC" -ne 0 ] || [ -z "$gpu0" ] ||
		! grep -q '^library: */usr/lib/x86_64-linux-gnu/vramguard/libvramguard.so$' "$BUILD/o"; then
		why="vramguard check: $(why_rc), $(grep -m1 '^library:' "$BUILD/o"), ${gpu0:-no GPU 0}"
	fi
	run $name.run /usr/bin/vramguard run --limit 4096M -- "$PY" "$HERE/cli_torch.py" 4096
	[ "$RC" -eq 0 ] || why="${why:+$why; }vramguard run --limit 4096M: $(why_rc): $(bads)$(stderr_tail)"
	local fig
	fig=$(figures)
	if command -v apt >/dev/null; then run $name.purge apt purge -y vramguard; else run $name.purge dpkg --purge vramguard; fi
	[ "$RC" -eq 0 ] || why="${why:+$why; }purge: $(why_rc)"
	left=$(while read -r p; do
		case $p in /. | "") continue ;; esac
		if [ -d "$p" ] && [ ! -L "$p" ]; then case $p in *vramguard*) echo "$p" ;; esac
		elif [ -e "$p" ] || [ -L "$p" ]; then echo "$p"; fi
	done <<<"$list")
	[ -z "$left" ] || why="${why:+$why; }left after the purge: $(head -3 <<<"$left" | paste -sd' ')"
	if [ -z "$why" ]; then
		result PASS $name "$how; check: $chk, $gpu0; run --limit 4096M under PyTorch: $fig; purged ($(grep -c . <<<"$list") paths, none left)"
	else result FAIL $name "$why; ${fig:+$fig}"; fi
}

# install_wheel: the wheel in the Python environment that has torch, used through its three ways in, uninstalled.
install_wheel() {
	local name=install_wheel whl why="" bin lp fig
	whl=${VG_WHL:-$(first_file "$PWD"/build/vramguard-*-py3-none-manylinux2014_x86_64.whl)}
	if [ -z "$whl" ]; then result SKIP $name "no wheel (make wheel, or set VG_WHL)"; return; fi
	if ! torch_ok; then result SKIP $name "torch with CUDA not importable"; return; fi
	run $name.install "$PY" -m pip install -q --no-index --force-reinstall "$whl"
	if [ "$RC" -ne 0 ]; then result FAIL $name "pip install --no-index: $(why_rc)$(stderr_tail)"; return; fi
	bin=$("$PY" -c 'import sys, os; print(os.path.join(sys.prefix, "bin"))')
	run $name.script "$bin/vramguard" run --limit 4096M -- "$PY" "$HERE/cli_torch.py" 4096
	[ "$RC" -eq 0 ] || why="console script $bin/vramguard run: $(why_rc): $(bads)$(stderr_tail)"
	run $name.module "$PY" -m vramguard run --limit 4096M -- "$PY" "$HERE/cli_torch.py" 4096
	[ "$RC" -eq 0 ] || why="${why:+$why; }python -m vramguard run: $(why_rc): $(bads)$(stderr_tail)"
	fig=$(figures)
	lp=$("$PY" -c 'import vramguard; print(vramguard.library_path())' 2>>"$LOG")
	case $lp in */site-packages/vramguard/_bin/libvramguard.so) [ -f "$lp" ] || why="${why:+$why; }no file $lp" ;;
	*) why="${why:+$why; }vramguard.library_path() = '$lp'" ;; esac
	run $name.uninstall "$PY" -m pip uninstall -y -q vramguard
	[ "$RC" -eq 0 ] || why="${why:+$why; }pip uninstall: $(why_rc)"
	if [ -z "$why" ]; then
		result PASS $name "pip install --no-index $(basename "$whl") into $("$PY" -c 'import sys; print(sys.prefix)'); $bin/vramguard run and python -m vramguard run --limit 4096M under PyTorch: $fig; library_path() $lp"
	else result FAIL $name "$why${fig:+; $fig}"; fi
}

install_checks() { install_deb; install_wheel; }
