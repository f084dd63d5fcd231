"""``benchmarks.scale.metrics_scale``: the scrapes made while predictions are timed leave the
answers compressed; they are decompressed afterwards (not a timed test)."""

from __future__ import annotations

import functools
import gzip

import httpx
import pytest

from benchmarks.scale import metrics_scale

TEXT = b"# HELP x_total x\n# TYPE x_total counter\n" + b'x_total{model="m1"} 1.0\n' * 5000


def test_scrapes_keep_the_answer_compressed_until_predictions_are_no_longer_timed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        assert "gzip" in request.headers["accept-encoding"]  # as Prometheus scrapes
        body = httpx.ByteStream(gzip.compress(TEXT))  # a stream, as a server's answer comes
        return httpx.Response(200, stream=body, headers={"content-encoding": "gzip"})

    real_client, real_decompress = httpx.Client, gzip.decompress
    decompressed: list[int] = []

    def decompress(data: bytes) -> bytes:
        decompressed.append(len(data))
        return real_decompress(data)

    transport = httpx.MockTransport(answer)
    monkeypatch.setattr(httpx, "Client", functools.partial(real_client, transport=transport))
    monkeypatch.setattr(metrics_scale.gzip, "decompress", decompress)
    monkeypatch.setattr(metrics_scale.time, "sleep", lambda seconds: None)
    seconds: list[float] = []
    answers: list[tuple[bytes, str | None]] = []
    metrics_scale.scrape_times("http://banditree.test", 3, seconds, answers)
    assert len(seconds) == 3 and all(s >= 0 for s in seconds)
    # the timed part holds the compressed answers: the benchmark's predicting thread shares
    # this interpreter, which a decompression of tens of MB holds
    assert decompressed == []
    assert [encoding for _, encoding in answers] == ["gzip"] * 3
    assert all(len(raw) < len(TEXT) / 10 for raw, _ in answers)
    assert metrics_scale.exposition_size(*answers[-1]) == len(TEXT)
    assert decompressed == [len(answers[-1][0])]
    assert metrics_scale.exposition_size(TEXT, None) == len(TEXT)  # an answer not compressed
