"""The vramguard wheel (`make wheel`; docs/install.md): this package with the library and the command, built for
glibc 2.17 and later, under the tag py3-none-manylinux2014_x86_64 (any Python 3: no extension module; the tag names
the platform the two ELF files need, which tests/sections/wheel.sh checks).

Run by the Makefile from a staging copy ($(BUILD)/wheel/src) where vramguard/_bin/ holds the two files and
VRAMGUARD_VERSION is config/config.h's VG_VERSION; Debian's setuptools and wheel, no network.
"""
import os

from setuptools import Distribution, setup
from wheel.bdist_wheel import bdist_wheel


class PlatformDistribution(Distribution):
    """Platform-specific files (the ELF pair): the package goes to platlib, the wheel's root, not purelib."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    """No extension module, so any Python 3 and no ABI: only the platform is named."""

    def get_tag(self):
        return "py3", "none", "manylinux2014_x86_64"


setup(
    name="vramguard",
    version=os.environ["VRAMGUARD_VERSION"],
    description="GPU memory quotas, leak tracking and reports for CUDA programs (an LD_PRELOAD library)",
    python_requires=">=3.6",
    packages=["vramguard"],
    package_data={"vramguard": ["_bin/vramguard", "_bin/libvramguard.so"]},
    entry_points={"console_scripts": ["vramguard = vramguard.__main__:main"]},
    distclass=PlatformDistribution,
    cmdclass={"bdist_wheel": PlatformWheel},
    zip_safe=False,
)
