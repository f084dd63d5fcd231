"""The service files one predict and one feedback run through, in the order first entered.

``python -m tools.request_path`` starts an app on the embedded store in a temporary
directory (in process, through httpx's ASGI transport: the fast front answers as it
does behind uvicorn), creates a model, sends a warm-up predict and feedback, then
records with :func:`sys.setprofile` every Python function called on the event loop's
thread during one more predict and one more feedback, and prints the files of
``service/`` (and the count of ``banditree/`` files) that each entered.  The code map
(``docs/explanation/architecture.md``) quotes its output.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]


def _area(path: str) -> str | None:
    relative = Path(path).resolve()
    try:
        parts = relative.relative_to(ROOT).parts
    except ValueError:
        return None
    return "/".join(parts) if parts and parts[0] in ("service", "banditree") else None


class Recorder:
    """Files of the project entered by calls while it is on, in first-entry order.

    Only calls in the request's own task, or in callbacks of the loop outside any task
    (a loop tick's decisions), count: the service's background tasks (the learner, the
    loop-lag timer, maintenance) run on the same thread and are left out.
    """

    def __init__(self) -> None:
        self.files: dict[str, None] = {}
        #: (caller's file, callee's file) of every call from a project file to another
        self.calls: set[tuple[str, str]] = set()
        self.task: asyncio.Task[Any] | None = None

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or frame.f_code.co_name == "<module>":
            return  # a module imported on the way runs no part of the request
        try:
            current = asyncio.current_task()
        except RuntimeError:
            return
        if current is not None and current is not self.task:
            return
        found = _area(frame.f_code.co_filename)
        if found is not None:
            self.files.setdefault(found, None)
            caller = frame.f_back
            source = None if caller is None else _area(caller.f_code.co_filename)
            if source is not None and source != found:
                self.calls.add((source, found))

    async def during(self, call: Any) -> httpx.Response:
        self.task = asyncio.current_task()
        sys.setprofile(self)
        try:
            return await call
        finally:
            sys.setprofile(None)


#: the service's areas, each calling only those after it
AREAS = ("edge", "http", "domain", "store", "telemetry")


def upward_calls(calls: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """The calls of ``calls`` from a service area to one above it (:data:`AREAS`)."""
    rank = {area: i for i, area in enumerate(AREAS)}

    def area(path: str) -> int | None:
        parts = path.split("/")
        return rank.get(parts[1]) if parts[0] == "service" and len(parts) > 2 else None

    out = []
    for source, target in sorted(calls):
        low, high = area(source), area(target)
        if low is not None and high is not None and high < low:
            out.append((source, target))
    return out


async def request_paths() -> dict[str, list[str]]:
    """The project files one traced predict and one traced feedback entered."""
    return {name: files for name, (files, _) in (await request_traces()).items()}


async def request_traces() -> dict[str, tuple[list[str], set[tuple[str, str]]]]:
    """The project files one traced predict and one traced feedback entered, in
    first-entry order, and the calls between files each made."""
    from service.main import create_app
    from service.settings import Settings

    with tempfile.TemporaryDirectory() as data:
        settings = Settings.model_validate(
            {"data_dir": data, "api_keys": ["app"], "admin_keys": ["admin"]}
        )
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
                admin = {"authorization": "Bearer admin"}
                user = {"authorization": "Bearer app"}
                body = {"n_actions": 3, "n_features": 2, "seed": 0}
                made = await http.put("/v1/models/m", json=body, headers=admin)
                made.raise_for_status()
                out: dict[str, tuple[list[str], set[tuple[str, str]]]] = {}
                for round_ in ("warm-up", "traced"):
                    predict = Recorder()
                    answer = await predict.during(
                        http.post(
                            "/v1/models/m/predict", json={"context": [0.1, 0.2]}, headers=user
                        )
                    )
                    answer.raise_for_status()
                    feedback = Recorder()
                    sent = {"event_id": answer.json()["event_id"], "loss": 0.5}
                    done = await feedback.during(
                        http.post("/v1/models/m/feedback", json=sent, headers=user)
                    )
                    done.raise_for_status()
                    if round_ == "traced":
                        out = {
                            "predict": (list(predict.files), predict.calls),
                            "feedback": (list(feedback.files), feedback.calls),
                        }
                return out


def main() -> None:
    for name, (files, calls) in asyncio.run(request_traces()).items():
        service = [f for f in files if f.startswith("service/")]
        library = [f for f in files if f.startswith("banditree/")]
        upward = upward_calls(calls)
        print(
            f"{name}: {len(service)} service files, {len(library)} banditree files, "
            f"{len(upward)} calls up an area"
        )
        for path in service:
            print(f"  {path}")
        for source, target in upward:
            print(f"  up: {source} -> {target}")


if __name__ == "__main__":
    main()
