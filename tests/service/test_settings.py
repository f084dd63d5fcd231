"""Settings come from BANDITREE_* variables; a bad one stops the start, naming the variable."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from banditree_cli import app
from service.settings import SettingsError, load_settings


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BANDITREE_API_KEYS", " a, b ,,c")
    monkeypatch.setenv("BANDITREE_ADMIN_KEYS", "root")
    monkeypatch.setenv("BANDITREE_CHECKPOINT_KEEP", "7")
    monkeypatch.setenv("BANDITREE_REDIS_URL", "redis://127.0.0.1:6379/3")
    settings = load_settings()
    assert settings.api_keys == ["a", "b", "c"] and settings.admin_keys == ["root"]
    assert settings.checkpoint_keep == 7 and settings.auth_enabled
    assert settings.redis_url == "redis://127.0.0.1:6379/3"
    assert (settings.host, settings.port) == ("127.0.0.1", 8000)


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("BANDITREE_PORT", "70000", "BANDITREE_PORT: Input should be less than or equal to 65535"),
        ("BANDITREE_CHECKPOINT_KEEP", "0", "BANDITREE_CHECKPOINT_KEEP: Input should be greater"),
        ("BANDITREE_EVENT_TTL_SECONDS", "-1", "BANDITREE_EVENT_TTL_SECONDS"),
        ("BANDITREE_REDIS_URL", "localhost:6379", "BANDITREE_REDIS_URL: Value error, must start"),
        ("BANDITREE_DEFAULT_LOSS", "nan", "BANDITREE_DEFAULT_LOSS"),
        ("BANDITREE_LOG_LEVEL", "loud", "BANDITREE_LOG_LEVEL"),
        ("BANDITREE_WORKERS", "4", "workers > 1 needs BANDITREE_REDIS_URL"),
    ],
)
def test_bad_setting_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, message: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError) as err:
        load_settings()
    assert message in str(err.value)


def test_serve_refuses_a_bad_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BANDITREE_MAX_BATCH", "0")
    result = CliRunner().invoke(app, ["serve"])
    assert result.exit_code == 2
    assert "BANDITREE_MAX_BATCH" in result.output
    help_text = CliRunner().invoke(app, ["serve", "--help"]).output
    assert "--port" in help_text and "--workers" in help_text
