from banditree.cli import app

app(prog_name="banditree")
