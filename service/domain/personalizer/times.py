"""Personalizer's time formats: ISO 8601 instants and durations."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

from service.domain.errors import InvalidRequest

_DURATION = re.compile(
    r"^P(?:(?P<d>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$"
)


def iso_time(seconds: float) -> str:
    """The instant ``seconds`` after the epoch, UTC, as ISO 8601 (``...Z``)."""
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def parse_time(text: object, field: str) -> float:
    """Seconds after the epoch of an ISO 8601 instant (no zone: UTC); 400 naming ``field``."""
    if not isinstance(text, str):
        raise InvalidRequest(f"{field}: an ISO 8601 time is required, got {text!r}", field)
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidRequest(f"{field}: {text!r} is not an ISO 8601 time", field) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def iso_duration(seconds: float) -> str:
    """``seconds`` as an ISO 8601 duration (``PT10M``, ``P2D``, ``PT0.5S``)."""
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"a duration must be finite and >= 0, got {seconds}")
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    date = f"{int(days)}D" if days else ""
    clock = "".join(
        f"{v:g}{unit}" for v, unit in ((int(hours), "H"), (int(minutes), "M"), (secs, "S")) if v
    )
    if not date and not clock:
        return "PT0S"
    return f"P{date}" + (f"T{clock}" if clock else "")


def parse_duration(text: object, field: str) -> float:
    """Seconds of an ISO 8601 duration (days at most: no months or years); 400 naming ``field``."""
    match = _DURATION.match(text) if isinstance(text, str) else None
    if match is None or text in ("P", "PT"):
        raise InvalidRequest(
            f"{field}: an ISO 8601 duration such as PT10M is required, got {text!r}", field
        )
    parts = {k: float(v) if v else 0.0 for k, v in match.groupdict().items()}
    return parts["d"] * 86400 + parts["h"] * 3600 + parts["m"] * 60 + parts["s"]
