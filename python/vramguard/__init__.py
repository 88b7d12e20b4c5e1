"""vramguard: GPU memory quotas and leak reports for CUDA programs, from pip.

The wheel carries the C library (libvramguard.so, loaded with LD_PRELOAD) and the `vramguard` command, both built
for glibc 2.17 and later (manylinux2014). This package only finds them:

    vramguard run --limit 4G -- python train.py      # the command, on PATH after `pip install`
    python -m vramguard run --limit 4G -- python train.py
    env["LD_PRELOAD"] = vramguard.library_path()     # a launcher's or a notebook's subprocess
"""
import os

__all__ = ["library_path", "command_path"]

_BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin")


def library_path():
    """The absolute path of the bundled libvramguard.so, for LD_PRELOAD."""
    return os.path.join(_BIN, "libvramguard.so")


def command_path():
    """The absolute path of the bundled `vramguard` command (it finds the library next to itself)."""
    return os.path.join(_BIN, "vramguard")
