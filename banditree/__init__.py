"""banditree: online contextual bandits on hard oblique trees trained by gradient."""

__version__ = "0.1.0"

__all__ = ["__version__"]
