"""The models kept in memory: least recently used let go past the bound, busy ones kept."""

from __future__ import annotations

from collections.abc import Callable

from service.domain.runtime.api import Residency


def test_the_least_recently_used_idle_models_are_let_go() -> None:
    resident = Residency(2)
    let_go: list[str] = []
    busy = {"b"}

    def releaser(name: str) -> Callable[[], bool]:
        def release() -> bool:
            if name in busy:
                return False
            let_go.append(name)
            return True

        return release

    resident.loaded("a", releaser("a"))
    resident.loaded("b", releaser("b"))
    resident.used("a")  # b is now the least recently used
    resident.loaded("c", releaser("c"))
    # b is busy: kept (and made the most recent), a let go instead
    assert let_go == ["a"] and len(resident) == 2 and "a" not in resident
    busy.clear()
    resident.loaded("d", releaser("d"))
    assert let_go == ["a", "c"] and sorted(["b", "d"]) == sorted(n for n in "abcd" if n in resident)
    resident.dropped("b")
    assert len(resident) == 1


def test_no_bound_keeps_everything() -> None:
    resident = Residency(0)
    resident.loaded("a", lambda: True)
    assert len(resident) == 0 and "a" not in resident
