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
import types
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import mkdocs_gen_files
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

_BOUNDS = {
    "ge": ">=",
    "gt": ">",
    "le": "<=",
    "lt": "<",
    "min_length": "length >=",
    "max_length": "length <=",
}


def _cell(text: object) -> str:
    """Text fit for one Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def type_name(annotation: Any) -> str:
    """``int | None``, ``list[int]``, ``"a" | "b"`` for a field's annotation."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " \\| ".join(f'`"{a}"`' if isinstance(a, str) else f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(type_name(a) for a in args)
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin is not None:
        inner = ", ".join(type_name(a).strip("`") for a in args)
        return f"`{getattr(origin, '__name__', str(origin))}[{inner}]`"
    if annotation is type(None):
        return "`null`"
    return f"`{getattr(annotation, '__name__', str(annotation))}`"


def default_text(field: FieldInfo) -> str:
    """The default as JSON would spell it; a computed default says so."""
    if field.default_factory is not None:
        try:
            value = field.default_factory()  # type: ignore[call-arg]
        except TypeError:  # a factory of the other fields: see the description
            return "computed"
        return f"`{value!r}`"
    if field.default is PydanticUndefined:
        return "**required**"
    if field.default is None:
        return "`null`"
    if isinstance(field.default, bool):
        return f"`{str(field.default).lower()}`"
    if isinstance(field.default, str):
        return f'`"{field.default}"`'
    return f"`{field.default}`"


def bounds_text(field: FieldInfo) -> str:
    """``>= 1, <= 10000`` from the field's constraints."""
    found = []
    for item in field.metadata:
        for attribute, symbol in _BOUNDS.items():
            value = getattr(item, attribute, None)
            if value is not None:
                found.append(
                    f"{symbol} {value:,}" if isinstance(value, int) else f"{symbol} {value}"
                )
    return ", ".join(found)


def field_rows(model: type[BaseModel], skip: Iterable[str] = ()) -> list[str]:
    """One table row per field of ``model`` (a field that is itself a model: its rows, dotted)."""
    rows = []
    for name, field in model.model_fields.items():
        if name in skip:
            continue
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            rows += [row.replace("| `", f"| `{name}.", 1) for row in field_rows(annotation)]
            continue
        rows.append(
            f"| `{name}` | {type_name(annotation)} | {default_text(field)} | "
            f"{_cell(bounds_text(field))} | {_cell(field.description or '')} |"
        )
    return rows


TABLE_HEAD = "| field | type | default | bounds | meaning |\n|---|---|---|---|---|\n"


def config_page() -> str:
    from banditree.learners import LearnerConfig
    from service.schemas import ModelCreate

    own = set(LearnerConfig.model_fields)
    service_rows = field_rows(ModelCreate, skip=own)
    return (
        "# Learner configuration\n\n"
        "Generated from `banditree.learners.LearnerConfig` at build time. The same record "
        "configures the library (`build_learner`), the simulator (`banditree simulate`) and "
        "the service (the body of `PUT /v1/models/{name}`). Unknown fields are refused. "
        "Why the defaults are what they are: [Exploration and the defaults]"
        "(../explanation/defaults.md).\n\n"
        + TABLE_HEAD
        + "\n".join(field_rows(LearnerConfig))
        + "\n\n## Service fields of `PUT /v1/models/{name}`\n\n"
        "Generated from `service.schemas.ModelCreate`: the body is the learner configuration "
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
            f"{_cell(bounds_text(field))} | {_cell(field.description or '')} |"
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
    from service.auth import ADMIN_OPERATIONS
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
    return _cell(text.replace("``", "`"))


def metrics_page() -> str:
    from service.metrics import ServiceMetrics

    metrics = ServiceMetrics()
    rows = []
    for collector in vars(metrics).values():
        name = getattr(collector, "_name", None)
        kind = getattr(collector, "_type", None)
        if not name or not kind:
            continue
        exposed = f"{name}_total" if kind == "counter" else name
        labels = ", ".join(f"`{label}`" for label in getattr(collector, "_labelnames", ()))
        rows.append(f"| `{exposed}` | {kind} | {labels} | {_cell(collector._documentation)} |")
    return (
        "# Metrics\n\n"
        "Generated from `service.metrics.ServiceMetrics` at build time: every metric a "
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
