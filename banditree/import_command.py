"""``banditree models import NAME FILE``: create a served model warm-started from a trained tree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

#: the warm start's step unless one is given: RMSprop's first updates are up to 10x the
#: rate, and at the cold default (3e-3) they undo part of the trained tree
#: (``python -m benchmarks.quality.warm_start --warm-learning-rate 1e-3``)
WARM_START_LEARNING_RATE = 1e-3

models_app = typer.Typer(
    name="models", help="Manage models of a running 'banditree serve'.", no_args_is_help=True
)


def _overrides(config_file: Path | None) -> dict[str, Any]:
    if config_file is None:
        return {}
    try:
        data = json.loads(config_file.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise typer.BadParameter(
            f"cannot read a JSON object: {err}", param_hint="--config"
        ) from None
    if not isinstance(data, dict):
        raise typer.BadParameter("must hold a JSON object of config fields", param_hint="--config")
    return data


@models_app.command("import")
def import_command(
    name: str = typer.Argument(..., help="Name of the model to create."),
    model_file: Path = typer.Argument(
        ..., help="A model.safetensors written by 'banditree train'."
    ),
    server: str = typer.Option(
        "http://127.0.0.1:8000", "--server", envvar="BANDITREE_SERVER", help="Service URL."
    ),
    api_key: str | None = typer.Option(
        None, "--api-key", envvar="BANDITREE_API_KEY", help="API key (admin) of the service."
    ),
    config_file: Path | None = typer.Option(
        None,
        "--config",
        help="JSON object of PUT /v1/models fields (explorer, learning_rate, policy, ...) "
        "laid over the config read from the file.",
    ),
    learning_rate: float | None = typer.Option(
        None,
        "--learning-rate",
        min=0.0,
        help=f"the model's learning rate (default: --config's, else {WARM_START_LEARNING_RATE:g},"
        " the warm start's recommended step)",
    ),
    timeout_seconds: float = typer.Option(60.0, "--timeout-seconds", help="HTTP timeout."),
) -> None:
    """PUT /v1/models/NAME with the tree in FILE as "initial_model" (the bandit starts from it)."""
    import httpx

    from banditree.models.dgt.trained import InvalidModelFile, TrainedTree

    try:
        trained = TrainedTree.load(model_file)
    except InvalidModelFile as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
    body = {
        **trained.learner_config(),
        "learning_rate": WARM_START_LEARNING_RATE,
        **_overrides(config_file),
        "initial_model": trained.to_base64(),
    }
    if learning_rate is not None:
        body["learning_rate"] = learning_rate
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    url = f"{server.rstrip('/')}/v1/models/{name}"
    try:
        response = httpx.put(url, json=body, headers=headers, timeout=timeout_seconds)
    except httpx.HTTPError as err:
        typer.echo(f"error: cannot reach {server}: {err}", err=True)
        raise typer.Exit(1) from None
    if response.status_code >= 400:
        try:
            detail = response.json().get("detail", response.text)
        except ValueError:
            detail = response.text
        typer.echo(f"error: {response.status_code} {detail}", err=True)
        raise typer.Exit(1)
    created = response.json()
    typer.echo(
        f"created model {created.get('name', name)!r} from {model_file.name} "
        f"(task {trained.task}, height {trained.height}, {trained.n_features} features, "
        f"learning rate {body['learning_rate']:g})"
    )


def register(app: typer.Typer) -> None:
    """Add the ``models`` command group to ``app``."""
    app.add_typer(models_app)
