"""``Client.rank`` / ``reward`` / ``activate`` (and the async client's) against a live server."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from banditree.client import AsyncClient, BanditreeError, Client
from tests.service.live_server import LiveServer

KEYS = {"BANDITREE_API_KEYS": "app-key", "BANDITREE_ADMIN_KEYS": "admin-key"}
ITEMS = {"a1": {"kind": "news"}, "a2": {"kind": "sport"}, "a3": {"kind": "music"}}


def test_the_clients_rank_reward_and_activate(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path
) -> None:
    server = live_servers({**KEYS, "BANDITREE_DATA_DIR": str(tmp_path / "data")})
    with Client(server.url, api_key="admin-key") as admin:
        info = admin.create_model("feed", {"task": "ranking"})
        assert info.config["task"] == "ranking"
    with Client(server.url, api_key="app-key") as client:
        ranked = client.rank("feed", {"user": {"lang": "en"}}, ITEMS, excluded_actions=["a3"])
        assert ranked.reward_action_id in ("a1", "a2")
        assert ranked.ranking[0][0] == ranked.reward_action_id and ranked.ranking[-1] == ("a3", 0.0)
        assert client.reward("feed", ranked.event_id, 1.0).status == "accepted"
        assert client.reward("feed", ranked.event_id, 1.0).status == "already_accepted"
        deferred = client.rank(
            "feed", {"user": {"lang": "de"}}, [{"id": k, "features": v} for k, v in ITEMS.items()],
            event_id="later", defer_activation=True,
        )  # fmt: skip
        assert deferred.event_id == "later"
        with pytest.raises(BanditreeError) as early:
            client.reward("feed", "later", 1.0)
        assert early.value.status == 422 and early.value.field == "event_id"
        assert client.activate("feed", "later") == 1
        assert client.reward("feed", "later", 0.0).status == "accepted"
        with pytest.raises(BanditreeError) as bad:
            client.rank("feed", {}, [{"id": "x"}, {"id": "x"}])
        assert bad.value.status == 422 and bad.value.field == "actions[1].id"

    async def run() -> None:
        async with AsyncClient(server.url, api_key="app-key") as client:
            ranked = await client.rank("feed", {"user": {"lang": "fr"}}, ITEMS)
            assert await client.activate("feed", ranked.event_id) == 0  # was active already
            assert (await client.reward("feed", ranked.event_id, 0.5)).status == "accepted"

    asyncio.run(run())

    # the log, exported as DSJson by the command line, is read by Vowpal Wabbit
    from typer.testing import CliRunner

    from banditree_cli import app

    out = tmp_path / "feed.dsjson"
    exported = CliRunner().invoke(
        app, ["log", "export", "feed", "--out", str(out), "--format", "dsjson", "--server",
              server.url, "--api-key", "admin-key", "--no-progress"],
    )  # fmt: skip
    assert exported.exit_code == 0, exported.output
    lines = out.read_text().splitlines()
    assert len(lines) == 3  # the three rewarded decisions
    vw = pytest.importorskip("vowpalwabbit")
    workspace = vw.Workspace(f"--cb_explore_adf --dsjson -d {out} --quiet --strict_parse")
    workspace.run_parser()
    assert workspace.get_weighted_examples() == 3
    workspace.finish()


def test_the_clients_multi_slot_calls(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path
) -> None:
    server = live_servers({**KEYS, "BANDITREE_DATA_DIR": str(tmp_path / "data")})
    with Client(server.url, api_key="admin-key") as admin:
        admin.create_model("page", {"task": "ranking"})
    slots = [
        {"id": "hero", "features": {"size": "large"}},
        {"id": "side", "features": {"size": "small"}, "excluded_actions": ["a1"]},
        {"id": "more"},
        {"id": "empty"},
    ]
    with Client(server.url, api_key="app-key") as client:
        filled = client.rank_multi_slot("page", {"user": {"lang": "en"}}, ITEMS, slots)
        assert [s.id for s in filled.slots] == ["hero", "side", "more", "empty"]
        shown = [s.reward_action_id for s in filled.slots]
        assert sorted(shown[:3]) == ["a1", "a2", "a3"] and shown[1] != "a1" and shown[3] is None
        assert filled.slots[0].ranking[0][0] == shown[0] and filled.slots[3].ranking == ()
        assert client.reward_multi_slot("page", filled.event_id, {"hero": 1.0, "side": 0.0}) == 2
        deferred = client.rank_multi_slot(
            "page", {}, ITEMS, {"a": {"size": "large"}, "b": {"size": "small"}},
            event_id="p2", defer_activation=True,
        )  # fmt: skip
        assert deferred.event_id == "p2" and len(deferred.slots) == 2
        with pytest.raises(BanditreeError) as early:
            client.reward_multi_slot("page", "p2", {"a": 1.0})
        assert early.value.status == 422
        assert client.activate_multi_slot("page", "p2") == 2
        with pytest.raises(BanditreeError) as unknown:
            client.reward_multi_slot("page", "p2", {"c": 1.0})
        assert unknown.value.status == 422 and unknown.value.field == "rewards[0].slot_id"

    async def run() -> None:
        async with AsyncClient(server.url, api_key="app-key") as client:
            done = await client.rank_multi_slot(
                "page", {}, ITEMS, {"x": {}, "y": {}}, event_id="p3"
            )
            assert await client.activate_multi_slot("page", "p3") == 0  # active already
            assert await client.reward_multi_slot("page", done.event_id, {"x": 0.5, "y": 1.0}) == 2

    asyncio.run(run())
