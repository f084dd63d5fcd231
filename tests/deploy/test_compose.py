"""The compose file parses and names only images and repository paths that exist.

Docker cannot run here; ``docker compose config`` is used when the plugin is present,
and the file is checked with PyYAML either way.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import yaml

from tests.deploy.shipped_files import COMPOSE_FILE, DOCKER_DIR, PROMETHEUS_CONFIG, PROVISIONING_DIR

DOCKERFILE = DOCKER_DIR / "Dockerfile"
_PINNED_IMAGE = re.compile(r"^[a-z0-9][a-z0-9./_-]*:[A-Za-z0-9][A-Za-z0-9._-]*$")


def _compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE_FILE.read_text())


def _bind_mounts(service: dict[str, Any]) -> dict[str, Path]:
    """Container target -> host path, for the service's bind mounts (relative to docker/)."""
    mounts = {}
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        if source.startswith("."):
            mounts[target] = (DOCKER_DIR / source).resolve()
    return mounts


def _compose_plugin_present() -> bool:
    if shutil.which("docker") is None:
        return False
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=30)
    return probe.returncode == 0


@pytest.mark.skipif(not _compose_plugin_present(), reason="docker compose plugin not installed")
def test_docker_compose_config_accepts_the_file() -> None:
    result = subprocess.run(
        ["docker", "compose", "-f", str(COMPOSE_FILE), "config", "--quiet"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


def test_stack_has_service_redis_prometheus_grafana() -> None:
    assert set(_compose()["services"]) == {"banditree", "redis", "prometheus", "grafana"}


def test_images_are_built_here_or_pinned() -> None:
    for name, service in _compose()["services"].items():
        if "build" in service:
            continue
        image = service["image"]
        assert _PINNED_IMAGE.match(image), f"{name}: image {image!r} has no explicit tag"
        assert not image.endswith(":latest"), f"{name}: image {image!r} is not pinned"


def test_service_build_uses_the_repository_dockerfile_and_sources() -> None:
    build = _compose()["services"]["banditree"]["build"]
    context = (DOCKER_DIR / build["context"]).resolve()
    assert (context / build["dockerfile"]).resolve() == DOCKERFILE.resolve()
    assert (context / "pyproject.toml").is_file()
    copies = re.findall(r"^COPY (?!--from)(.+?) \S+$", DOCKERFILE.read_text(), flags=re.MULTILINE)
    assert copies
    for sources in copies:
        for source in sources.split():
            assert (context / source).exists(), f"Dockerfile copies missing {source}"


def test_dockerfile_is_multi_stage_cpu_torch_non_root_with_health_check() -> None:
    text = DOCKERFILE.read_text()
    assert len(re.findall(r"^FROM ", text, flags=re.MULTILINE)) >= 2
    assert '"torch==2.13.0"' in text and "download.pytorch.org/whl/cpu" in text
    users = re.findall(r"^USER (\S+)", text, flags=re.MULTILINE)
    assert users and not users[-1].startswith(("root", "0"))
    assert re.search(r"^HEALTHCHECK .*\n.*/healthz", text, flags=re.MULTILINE)
    assert re.search(r'^CMD \["banditree", "serve", "--host", "0.0.0.0"', text, flags=re.MULTILINE)


def test_every_bind_mount_source_exists() -> None:
    for name, service in _compose()["services"].items():
        for target, source in _bind_mounts(service).items():
            assert source.exists(), f"{name}: {source} (mounted at {target}) does not exist"


def test_named_volumes_are_declared_and_redis_appends_to_one() -> None:
    compose = _compose()
    declared = set(compose["volumes"])
    for name, service in compose["services"].items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if not source.startswith((".", "/")):
                assert source in declared, f"{name}: volume {source} not declared"
    redis = compose["services"]["redis"]
    assert "--appendonly" in redis["command"]
    assert redis["command"][redis["command"].index("--appendonly") + 1] == "yes"
    assert any(volume.split(":")[1] == "/data" for volume in redis["volumes"])


def test_prometheus_reads_the_shipped_config_and_scrapes_the_service() -> None:
    services = _compose()["services"]
    prometheus = services["prometheus"]
    mounts = _bind_mounts(prometheus)
    config_flag = next(arg for arg in prometheus["command"] if arg.startswith("--config.file="))
    config_target = config_flag.split("=", 1)[1]
    assert mounts[config_target] == PROMETHEUS_CONFIG.resolve()
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    for rule_file in config["rule_files"]:
        target = str(Path(config_target).parent / rule_file)
        assert target in mounts and mounts[target].is_file(), f"rule file {rule_file} not mounted"
    job = next(job for job in config["scrape_configs"] if job["job_name"] == "banditree")
    targets = [target for group in job["static_configs"] for target in group["targets"]]
    assert targets == ["banditree:8000"]
    assert "banditree" in services and "EXPOSE 8000" in DOCKERFILE.read_text()


def test_grafana_mounts_provisioning_and_the_provider_path() -> None:
    grafana = _compose()["services"]["grafana"]
    mounts = _bind_mounts(grafana)
    assert mounts["/etc/grafana/provisioning"] == PROVISIONING_DIR.resolve()
    providers = yaml.safe_load((PROVISIONING_DIR / "dashboards" / "banditree.yaml").read_text())
    for provider in providers["providers"]:
        host_dir = mounts[provider["options"]["path"]]
        assert list(host_dir.glob("*.json")), f"no dashboards in {host_dir}"
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    mount, _, file_name = home.rpartition("/")
    assert (mounts[mount] / file_name).is_file()
    datasources = yaml.safe_load((PROVISIONING_DIR / "datasources" / "prometheus.yaml").read_text())
    for source in datasources["datasources"]:
        url = urlparse(source["url"])
        assert url.hostname in _compose()["services"] and url.port == 9090
