"""The compiled kernel's build (the rest of the package is declared in pyproject.toml).

``banditree.kernel._native`` is one C file against the CPython API, warnings as errors
(docs/decisions/native-kernel.md).  ``BANDITREE_SANITIZE=1`` builds it with
AddressSanitizer and UndefinedBehaviorSanitizer (``make sanitize``).
"""

import os

from setuptools import Extension, setup

# -fno-math-errno: sqrt and the like set no errno (nothing reads it), so a loop of them
# can be vectorised (_learn.h's VECTOR_CLONES); the values are the same
FLAGS = ["-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-fno-strict-aliasing"]
FLAGS += ["-fno-math-errno"]
LINK: list[str] = []
if os.environ.get("BANDITREE_SANITIZE"):
    SANITIZERS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
    FLAGS += [*SANITIZERS, "-fno-omit-frame-pointer", "-g"]
    LINK += SANITIZERS

setup(
    ext_modules=[
        Extension(
            "banditree.kernel._native",
            sources=["banditree/kernel/_native.c"],
            depends=[
                "banditree/kernel/_learn.h",
                "banditree/kernel/_chunk.h",
                "banditree/kernel/_blake2b.h",
                "banditree/kernel/_boosted.h",
                "banditree/kernel/_rank.h",
                "banditree/kernel/_json.h",
                "banditree/kernel/_stored.h",
                "banditree/kernel/_rows.h",
                "banditree/kernel/_forms.h",
                "banditree/kernel/_tel.h",
                "banditree/kernel/_hinge.h",
            ],
            extra_compile_args=FLAGS,
            extra_link_args=LINK,
        )
    ]
)
