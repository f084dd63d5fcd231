"""``/v1/models/{name}/checkpoints`` and ``/rollback``."""

from __future__ import annotations

from fastapi import APIRouter

from service.domain.schemas import CheckpointList, CheckpointPublic, RollbackCreate
from service.http.deps import RuntimeDep
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
