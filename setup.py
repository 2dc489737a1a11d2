"""Compiled kernels: every ``*.pyx`` under ``src/dialeval`` becomes an extension module.

Project metadata lives in pyproject.toml; this file exists only because setuptools declares C
extensions in code. A new kernel needs no edit here: drop ``name.pyx`` next to the Python
module that uses it and it is built as ``dialeval.<package>.name`` by ``pip install``
(``python3 setup.py build_ext --inplace`` builds them inside a source tree).

Each extension is optional: on a machine without a C compiler ``pip install`` still succeeds
and the metrics run their numpy/Python reference path (same numbers, slower). ``install.sh``
checks that the kernels were built.
"""

from pathlib import Path

from setuptools import Extension, setup

SRC = Path(__file__).parent / "src"


def _extensions():
    pyx = sorted(SRC.glob("dialeval/**/*.pyx"))
    if not pyx:
        return []
    from Cython.Build import cythonize

    modules = [
        Extension(".".join(p.relative_to(SRC).with_suffix("").parts), [str(p.relative_to(Path(__file__).parent))],
                  extra_compile_args=["-O3"], optional=True)
        for p in pyx
    ]
    return cythonize(modules, language_level=3, quiet=True,
                     compiler_directives={"boundscheck": False, "wraparound": False,
                                          "cdivision": True, "initializedcheck": False})


setup(ext_modules=_extensions())
