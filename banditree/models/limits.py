"""Size limits of the model families, importable without numpy (the config's bounds)."""

#: Tallest tree any family builds.
MAX_HEIGHT = 12
#: The most parameters one model may hold (a config asking for more is refused).
MAX_PARAMETERS = 20_000_000
