"""One ``APIRouter`` per resource."""

from service.routes import checkpoints, decisions, health, metrics, models

__all__ = ["checkpoints", "decisions", "health", "metrics", "models"]
