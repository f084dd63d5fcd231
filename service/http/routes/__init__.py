"""One ``APIRouter`` per resource."""

from service.http.routes import checkpoints, decisions, health, metrics, models

__all__ = ["checkpoints", "decisions", "health", "metrics", "models"]
