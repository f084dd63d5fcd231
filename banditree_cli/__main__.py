"""``python -m banditree_cli``: the ``banditree`` console command."""

from banditree_cli import app

app(prog_name="banditree")
