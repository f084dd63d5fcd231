from typer.testing import CliRunner

from banditree import __version__
from banditree.cli import app


def test_version_and_help() -> None:
    runner = CliRunner()
    out = runner.invoke(app, ["--version"])
    assert out.exit_code == 0 and __version__ in out.output
    out = runner.invoke(app, ["--help"])
    assert out.exit_code == 0 and "banditree" in out.output.lower()
