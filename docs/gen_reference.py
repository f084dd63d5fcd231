"""Write the reference pages from the code, at every ``mkdocs build`` (mkdocs-gen-files).

* ``reference/config.md``: every ``LearnerConfig`` field (and the service fields of the
  ``PUT /v1/models/{name}`` body), with type, default, bounds and description;
* ``reference/settings.md``: every ``BANDITREE_*`` setting of the service;
* ``reference/http.md``: every route of the OpenAPI document, with its statuses;
* ``reference/metrics.md``: every Prometheus metric, with type and labels;
* ``benchmarks/*.md``: the measured results under ``benchmarks/results``.

Nothing here is written by hand: a new field, setting, route or metric appears at the
next build, and one without a description shows as such.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "docs"))  # reference_fields.py beside this script

from reference_fields import (  # noqa: E402 (found through the path set above)
    TABLE_HEAD,
    bounds_text,
    cell,
    default_text,
    field_rows,
    type_name,
)


def config_page() -> str:
    from banditree.learners.config import SECTIONS, LearnerConfig
    from service.domain.schemas import ModelCreate

    own = set(LearnerConfig.model_fields)
    service_rows = field_rows(ModelCreate, skip=own)
    sections = "".join(
        f"\n## {title.capitalize()}\n\n{cell(section.__doc__ or '')}\n\n"
        + TABLE_HEAD
        + "\n".join(field_rows(section))
        + "\n"
        for title, section in SECTIONS.items()
    )
    return (
        "# Learner configuration\n\n"
        "Generated from `banditree.learners.LearnerConfig` at build time. The same record "
        "configures the library (`build_learner`), the simulator (`banditree simulate`, one "
        "option per field: `--learning-rate` for `learning_rate`) and the service (the body "
        "of `PUT /v1/models/{name}`). It is one flat record (the body and its stored form "
        "name each field directly), defined in the sections below. Unknown fields are "
        "refused. A null default is resolved from the other fields, as its description "
        "says. Why the defaults are what they are: [Exploration and the defaults]"
        "(../explanation/defaults.md).\n"
        + sections
        + "\n## Service fields of `PUT /v1/models/{name}`\n\n"
        "Generated from `service.domain.schemas.ModelCreate`: the body is the learner configuration "
        "above plus these fields; unset, they fall back to the "
        '[service settings](settings.md). The body is strict: `true`, `"4"` or `4.0` is '
        "not an integer.\n\n" + TABLE_HEAD + "\n".join(service_rows) + "\n"
    )


def settings_page() -> str:
    from service.settings import Settings

    prefix = str(Settings.model_config.get("env_prefix", "BANDITREE_"))
    rows = []
    for name, field in Settings.model_fields.items():
        rows.append(
            f"| `{prefix}{name.upper()}` | {type_name(field.annotation)} | {default_text(field)} | "
            f"{cell(bounds_text(field))} | {cell(field.description or '')} |"
        )
    return (
        "# Service settings\n\n"
        "Generated from `service.settings.Settings` at build time. `banditree serve` reads "
        f"every setting from the environment variable `{prefix}<NAME>`; a bad value stops the "
        "start with a message naming the variable and its bound. Lists (`API_KEYS`, "
        "`ADMIN_KEYS`) are comma-separated.\n\n"
        "| variable | type | default | bounds | meaning |\n|---|---|---|---|---|\n"
        + "\n".join(rows)
        + "\n\nHow they play together (stores, durability, connection limits behind a proxy): "
        "[Deploy with Redis](../howto/deploy-redis.md) and [Scale out](../howto/scale-out.md).\n"
    )


def http_page() -> str:
    from service.edge.app import ADMIN_OPERATIONS
    from service.main import create_app
    from service.settings import Settings

    with tempfile.TemporaryDirectory() as data_dir:
        app = create_app(Settings(data_dir=Path(data_dir)))  # the store opens only at start
        schema = app.openapi()
    components = schema["components"]["schemas"]
    lines = [
        "# HTTP routes\n",
        f"Generated from the service's OpenAPI document (version {schema['info']['version']}) "
        "at build time. A running service serves the same document at `/openapi.json` and "
        "shows it at `/docs` (Swagger UI) and `/redoc`. Every error answer has the shape "
        "described in [Errors](errors.md). Routes under `/v1` need "
        "`Authorization: Bearer <key>` when keys are configured; those marked *admin* need an "
        "admin key.\n",
    ]
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            admin = " *(admin)*" if (method.upper(), path) in ADMIN_OPERATIONS else ""
            lines.append(f"## `{method.upper()} {path}`{admin}\n")
            lines.append(_rst_to_md(operation.get("description") or operation.get("summary", "")))
            lines.append("")
            body = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if body is not None:
                lines += _body_lines(body["schema"], components)
            query = [p for p in operation.get("parameters", []) if p.get("in") == "query"]
            if query:
                lines.append("| query parameter | meaning |\n|---|---|")
                lines += [f"| `{p['name']}` | {_parameter_text(p)} |" for p in query]
                lines.append("")
            lines.append("| status | meaning |\n|---|---|")
            for code, answer in operation.get("responses", {}).items():
                answer_schema = answer.get("content", {}).get("application/json", {}).get("schema")
                shape = f" ({_schema_type(answer_schema)})" if answer_schema else ""
                lines.append(f"| {code} | {_rst_to_md(answer.get('description', ''))}{shape} |")
            lines.append("")
    return "\n".join(lines)


def _body_lines(body: dict[str, Any], components: dict[str, Any]) -> list[str]:
    """The request body's fields as a table (the model body: a link to its reference)."""
    name = body.get("$ref", "").rsplit("/", 1)[-1]
    if name == "ModelCreate":
        return ["Body: the [learner configuration](config.md) and its service fields.\n"]
    properties = components.get(name, {}).get("properties", {})
    if not properties:
        return [f"Body: `{name or 'JSON'}`.\n"]
    required = set(components[name].get("required", []))
    rows = [f"Body (`{name}`):\n", "| field | type | meaning |", "|---|---|---|"]
    for field, spec in properties.items():
        note = " (required)" if field in required else ""
        meaning = _rst_to_md(spec.get("description", ""))
        rows.append(f"| `{field}`{note} | {_schema_type(spec)} | {meaning} |")
    return [*rows, ""]


def _schema_type(spec: dict[str, Any]) -> str:
    """``number``, ``array of number``, ``integer or null``, ``Name`` from a JSON schema."""
    if "$ref" in spec:
        return f"`{spec['$ref'].rsplit('/', 1)[-1]}`"
    if "anyOf" in spec or "oneOf" in spec:
        return " or ".join(_schema_type(s) for s in spec.get("anyOf", spec.get("oneOf", [])))
    kind = spec.get("type", "")
    if kind == "array":
        return f"array of {_schema_type(spec.get('items', {})) or 'any'}"
    return str(kind)


def _parameter_text(parameter: dict[str, Any]) -> str:
    """A query parameter's description and default."""
    spec = parameter.get("schema", {})
    text = parameter.get("description") or spec.get("description", "")
    if "default" in spec:
        text += f" (default `{spec['default']}`)"
    return _rst_to_md(text)


def _rst_to_md(text: str) -> str:
    """Docstrings spell code ``like this`` and cross-references :func:`name`; Markdown `like this`."""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"`\1`", text)
    return cell(text.replace("``", "`"))


def metrics_page() -> str:
    from service.telemetry.metrics import ServiceMetrics

    metrics = ServiceMetrics()
    rows = []
    for collector in vars(metrics).values():
        name = getattr(collector, "_name", None)
        kind = getattr(collector, "_type", None)
        if not name or not kind:
            continue
        exposed = f"{name}_total" if kind == "counter" else name
        labels = ", ".join(f"`{label}`" for label in getattr(collector, "_labelnames", ()))
        rows.append(f"| `{exposed}` | {kind} | {labels} | {cell(collector._documentation)} |")
    return (
        "# Metrics\n\n"
        "Generated from `service.telemetry.metrics.ServiceMetrics` at build time: every metric a "
        "serving process exports at `/metrics` (Prometheus text format), per process. "
        "Histograms also export `_bucket`, `_sum` and `_count`.\n\n"
        "| metric | type | labels | meaning |\n|---|---|---|---|\n"
        + "\n".join(sorted(rows))
        + "\n\nWhat the data-path metrics tell about learning and replicas: "
        "[How learning runs](../explanation/data-path.md); the alert rules and dashboard "
        "built on them: [Deploy with Redis](../howto/deploy-redis.md#docker-compose-stack).\n"
    )


def benchmark_pages() -> list[str]:
    """Copy ``benchmarks/results/*.md`` (and their pictures) into the site; their names."""
    results = ROOT / "benchmarks" / "results"
    names = []
    for source in sorted(results.glob("*")):
        if source.suffix not in (".md", ".png"):
            continue
        with mkdocs_gen_files.open(f"benchmarks/{source.name}", "wb") as target:
            shutil.copyfileobj(source.open("rb"), target)
        if source.suffix == ".md":
            names.append(source.name)
    return names


def main() -> None:
    pages = {
        "reference/config.md": config_page(),
        "reference/settings.md": settings_page(),
        "reference/http.md": http_page(),
        "reference/metrics.md": metrics_page(),
    }
    for path, text in pages.items():
        with mkdocs_gen_files.open(path, "w") as page:
            page.write(text)
    benchmark_pages()


main()
