"""``python -m simulate DATA --model dgt --out DIR`` (same as ``banditree simulate``)."""

import typer

from simulate.cli import register


def main() -> None:
    """Run the simulator's command line on its own."""
    app = typer.Typer(add_completion=False)
    register(app)
    app()


if __name__ == "__main__":
    main()
