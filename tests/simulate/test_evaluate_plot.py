"""``evaluate.png`` is laid out for one candidate or many: a legend naming every estimate,
nothing drawn over a title, refusals as footnotes."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pytest

from simulate.evaluate_plot import build_figure

REFUSAL = "one round carries 96% of the weighted reward (more than 20%)"


def candidate(value: float, refused: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"progressive_curve": [[1, 0.5], [10, value], [100, value]]}
    for key in ("ips", "snips", "dr", "progressive_value"):
        entry[key] = None if refused else value
        entry[f"{key}_ci95"] = None if refused else [value - 0.05, value + 0.05]
    entry["refusals"] = [REFUSAL] if refused else []
    return entry


def report(n: int) -> dict[str, Any]:
    return {
        "log": {"name": "obd", "n_rows": 10_000},
        "logged_policy": {"value": 0.5, "value_ci95": [0.48, 0.52],
                          "progressive_curve": [[1, 0.4], [100, 0.5]]},
        "candidates": {f"c{i}": candidate(0.4 + 0.03 * i, refused=i % 2 == 0) for i in range(n)},
    }  # fmt: skip


@pytest.mark.parametrize("n", [1, 2, 12])
def test_the_layout_holds_for_any_number_of_candidates(n: int) -> None:
    fig = build_figure(report(n))
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        legend_labels = {t.get_text() for leg in _legends(fig) for t in leg.get_texts()}
        assert {"IPS", "SNIPS", "DR", "progressive"} <= legend_labels
        titles = [_suptitle(fig)] + [ax.title for ax in fig.get_axes()]
        boxes = [t.get_window_extent(renderer) for t in titles if t is not None and t.get_text()]
        texts = [t for sub in [fig, *fig.subfigs] for t in sub.texts if t.get_text()]
        notes = [t for t in texts if REFUSAL in t.get_text()]
        assert notes, "the refusals are not shown"
        for note in notes:
            for box in boxes:
                assert not note.get_window_extent(renderer).overlaps(box)
        for ax in fig.get_axes():  # no panel squashed into a strip
            assert ax.get_window_extent(renderer).height > 150
        suptitle = boxes[0]
        for box in boxes[1:]:  # the panel titles stay clear of the figure's title
            assert not suptitle.overlaps(box)
        for leg in _legends(fig):  # and so do the legends
            assert not leg.get_window_extent(renderer).overlaps(suptitle)
        left = fig.get_axes()[0]
        assert len(left.get_yticklabels()) == n
    finally:
        plt.close(fig)


def _legends(fig: Any) -> list[Any]:
    return [leg for sub in [fig, *fig.subfigs] for leg in sub.legends]


def _suptitle(fig: Any) -> Any:
    for sub in [fig, *fig.subfigs]:
        if sub._suptitle is not None:
            return sub._suptitle
    return None
