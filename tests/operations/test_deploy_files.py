"""docker-compose.yml and the Dockerfile name only real commands and settings, and scale as documented."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

import cli
from settings import Settings
from storage import open_blob_store
from web.graphiql import ASSETS_DIR

ROOT = Path(__file__).resolve().parents[2]
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES: dict[str, dict[str, Any]] = COMPOSE["services"]
DOCKERFILE = (ROOT / "Dockerfile").read_text()
SETTINGS_VARIABLES = {f"PROOFLOOP_{name.upper()}" for name in Settings.model_fields}
VARIABLE = re.compile(r"PROOFLOOP_[A-Z0-9_]+")


def command_of(service: dict[str, Any]) -> list[str]:
    command = service.get("command", [])
    return shlex.split(command) if isinstance(command, str) else [str(part) for part in command]


def test_every_proofloop_command_parses_with_the_real_cli() -> None:
    commands = [command_of(s) for s in SERVICES.values() if command_of(s)[:1] == ["proofloop"]]
    assert {c[1] for c in commands} == {"migrate", "serve", "worker"}
    for command in commands:
        cli.build_parser().parse_args(command[1:])  # exits (fails the test) on an unknown command or flag


def test_every_proofloop_variable_is_a_setting() -> None:
    text = (ROOT / "docker-compose.yml").read_text() + DOCKERFILE
    named = set(VARIABLE.findall(text))
    assert named, "no PROOFLOOP_ variable found"
    assert named <= SETTINGS_VARIABLES, named - SETTINGS_VARIABLES


def test_services_reach_postgres_and_redis_with_a_required_secret() -> None:
    for name in ("migrate", "api", "worker"):
        env = SERVICES[name]["environment"]
        assert env["PROOFLOOP_DATABASE_URL"].startswith("postgres://")
        assert env["PROOFLOOP_REDIS_URL"].startswith("redis://")
        assert ":?" in env["PROOFLOOP_SECRET_KEY"], "the secret key must be required, never defaulted"
        assert env["PROOFLOOP_HOST"] == "0.0.0.0"
    assert SERVICES["postgres"]["image"].startswith("postgres:15")
    assert SERVICES["redis"]["image"].startswith("redis:7")


def test_mail_goes_to_the_mailpit_service() -> None:
    mailpit = SERVICES["mailpit"]
    assert mailpit["image"].startswith("axllent/mailpit")
    assert any(str(port).endswith(":8025") for port in mailpit["ports"])
    for name in ("api", "worker"):
        smtp = SERVICES[name]["environment"]["PROOFLOOP_SMTP_URL"]
        assert "smtp://mailpit:1025" in smtp
    assert SERVICES["worker"]["depends_on"]["mailpit"]["condition"] == "service_healthy"


def test_api_scales_with_no_fixed_name_or_host_port() -> None:
    api = SERVICES["api"]
    assert "container_name" not in api
    for mapping in api.get("ports", []):
        host = str(mapping).rsplit(":", 1)[0] if ":" in str(mapping) else ""
        assert host == "" or "-" in host, f"fixed host port {mapping}: a second replica could not bind it"
    assert "volumes" not in api, "replicas share no disk: media live in the bucket"
    assert api["environment"]["PROOFLOOP_DATA_DIR"] == "/data"
    assert {"pgdata", "miniodata"} <= set(COMPOSE["volumes"])


def test_api_and_worker_keep_media_in_the_minio_bucket() -> None:
    minio, init = SERVICES["minio"], SERVICES["minio-init"]
    assert minio["image"].startswith("minio/minio:RELEASE.")
    assert "miniodata:/data" in minio["volumes"]
    assert init["depends_on"]["minio"]["condition"] == "service_healthy"
    assert "mc mb --ignore-existing media/proofloop" in " ".join(init["command"])
    user, password = minio["environment"]["MINIO_ROOT_USER"], minio["environment"]["MINIO_ROOT_PASSWORD"]
    assert init["environment"] == minio["environment"]
    for name in ("api", "worker"):
        service = SERVICES[name]
        env = service["environment"]
        store_url = env["PROOFLOOP_MEDIA_STORE_URL"].removeprefix("${PROOFLOOP_MEDIA_STORE_URL:-").rstrip("}")
        assert store_url == "s3://proofloop/media?endpoint=http://minio:9000&region=us-east-1"
        open_blob_store(store_url, Path("/data/media"), timeout=1)  # a URL the app accepts
        # MinIO's own account unless AWS_* are given: the same values the server was started with
        assert env["AWS_ACCESS_KEY_ID"].endswith(user + "}")
        assert env["AWS_SECRET_ACCESS_KEY"].endswith(password + "}")
        assert service["depends_on"]["minio-init"]["condition"] == "service_completed_successfully"


@pytest.mark.parametrize("name", ["api", "worker"])
def test_api_and_worker_wait_for_the_migration(name: str) -> None:
    depends = SERVICES[name]["depends_on"]
    assert depends["migrate"]["condition"] == "service_completed_successfully"


@pytest.mark.parametrize(
    ("name", "probe"),
    [("postgres", "pg_isready"), ("redis", "ping"), ("api", "/readyz"), ("worker", "/readyz")],
)
def test_healthchecks(name: str, probe: str) -> None:
    assert probe in " ".join(SERVICES[name]["healthcheck"]["test"])


def test_worker_healthcheck_uses_its_metrics_port() -> None:
    port = SERVICES["worker"]["environment"]["PROOFLOOP_WORKER_METRICS_PORT"]
    assert f"127.0.0.1:{port}/readyz" in " ".join(SERVICES["worker"]["healthcheck"]["test"])


def test_dockerfile_is_multi_stage_slim_and_runs_unprivileged() -> None:
    stages = re.findall(r"^FROM\s+(\S+)", DOCKERFILE, re.MULTILINE)
    assert len(stages) >= 2
    assert stages[-1] == "python:3.11-slim"
    users = re.findall(r"^USER\s+(\S+)", DOCKERFILE, re.MULTILINE)
    assert users, "the image must drop root"
    assert users[-1].split(":")[0] not in {"root", "0"}


def test_dockerfile_ships_graphiql_assets_where_the_app_serves_them() -> None:
    target = "/app/" + ASSETS_DIR.relative_to(ROOT).as_posix()
    assert re.search(rf"^COPY --from=\S+ \S+ {re.escape(target)}$", DOCKERFILE, re.MULTILINE)
