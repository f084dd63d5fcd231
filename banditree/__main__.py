"""``python -m banditree``: the ``banditree`` console command (:mod:`banditree_cli`).

A launcher, not library code: nothing imports it, so its arrow up to the console
package is the one the import contract lets through.
"""

from banditree_cli import app

app(prog_name="banditree")
