"""`python -m vramguard ARGS` and the `vramguard` console script: exec the bundled command with ARGS.

The command replaces this Python process (os.execv): its exit status, signals and stdin are the command's own, as
if it had been started directly.
"""
import os
import sys

from vramguard import command_path


def main():
    cmd = command_path()
    try:
        os.execv(cmd, ["vramguard"] + sys.argv[1:])
    except OSError as e:
        sys.stderr.write("vramguard: error: cannot run the bundled command %s: %s (reinstall the wheel)\n"
                         % (cmd, e.strerror))
        return 127


if __name__ == "__main__":
    sys.exit(main())
