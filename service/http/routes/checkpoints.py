"""``/v1/models/{name}/checkpoints`` (with a checkpoint's tree) and ``/rollback``."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Path, Request, Response

from banditree.persistence import CorruptCheckpoint, loads
from service.domain.errors import Conflict, NotFound
from service.domain.schemas import CheckpointList, CheckpointPublic, RollbackCreate, TreeExport
from service.http.deps import RuntimeDep
from service.http.routes.models import export_response
from service.store import CheckpointInfo

router = APIRouter(prefix="/v1/models", tags=["checkpoints"])


def checkpoint_public(info: CheckpointInfo) -> CheckpointPublic:
    return CheckpointPublic(
        sequence=info.sequence, version=info.version, created_at=info.created_at,
        size_bytes=info.size_bytes,
    )  # fmt: skip


@router.post("/{name}/checkpoints", status_code=201)
async def checkpoint_now(runtime: RuntimeDep) -> CheckpointPublic:
    """Checkpoint now, after every feedback accepted so far has been applied."""
    return checkpoint_public(await runtime.checkpoint())


@router.get("/{name}/checkpoints")
async def list_checkpoints(runtime: RuntimeDep) -> CheckpointList:
    """Stored checkpoints, newest first."""
    stored = await runtime.store.list_checkpoints(runtime.name)
    return CheckpointList(checkpoints=[checkpoint_public(i) for i in stored])


@router.post("/{name}/rollback")
async def rollback(body: RollbackCreate, runtime: RuntimeDep) -> CheckpointPublic:
    """Serve the newest valid checkpoint of ``version`` again (saved as the newest checkpoint)."""
    return checkpoint_public(await runtime.rollback(body.version))


@router.get(
    "/{name}/checkpoints/{sequence}/tree", response_model=TreeExport, response_class=Response
)
async def checkpoint_tree(
    sequence: Annotated[int, Path(ge=0, le=2**62, description="the checkpoint's sequence")],
    runtime: RuntimeDep,
    request: Request,
) -> Response:
    """The model as stored in checkpoint ``sequence``, in the form of ``GET .../tree``.

    404 when the model holds no such checkpoint (dropped by ``checkpoint_keep`` or never
    written); 409 when its bytes do not read back as a model.
    """
    blob = await runtime.store.load_checkpoint(runtime.name, sequence)
    if blob is None:
        stored = [i.sequence for i in await runtime.store.list_checkpoints(runtime.name)]
        raise NotFound(
            f"sequence: model {runtime.name!r} holds no checkpoint {sequence}; stored: {stored}",
            "sequence",
        )
    try:
        learner = await asyncio.to_thread(loads, blob)
    except CorruptCheckpoint as err:
        raise Conflict(
            f"sequence: checkpoint {sequence} does not read back: {err}", "sequence"
        ) from None
    return await export_response(learner, runtime.name, request)
