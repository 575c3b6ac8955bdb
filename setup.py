"""The C extension (contam.app.core._native, the signing loops); everything else is in pyproject.toml.

It is built by `pip install` (`make install`), which needs a C compiler and Python's headers."""

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class BuildNative(build_ext):
    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # distutils' CompileError / PlatformError, or the compiler missing
            raise SystemExit(
                f"contam: building its C extension (native/native.c) failed: {exc}\n"
                "contam needs a C compiler and Python's headers to install: on Debian or Ubuntu "
                "`apt-get install gcc python3-dev`"
            ) from exc


setup(
    ext_modules=[
        Extension(
            "contam.app.core._native",
            sources=["native/native.c"],
            include_dirs=["native"],
            depends=["native/xxhash.h"],
            extra_compile_args=["-O3"],
        )
    ],
    cmdclass={"build_ext": BuildNative},
)
