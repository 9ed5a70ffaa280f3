"""Process start-up shared by every command: logging and the database connection."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

from tortoise import Tortoise

from models.config import tortoise_config
from settings import Settings

# color_message: uvicorn attaches an ANSI-coloured copy of its message, noise in a log line
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {
    "message",
    "asctime",
    "color_message",
}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extras = " ".join(f"{k}={v}" for k, v in record.__dict__.items() if k not in _STANDARD)
        return f"{line} {extras}" if extras else line


class WithoutQueryString(logging.Filter):
    """uvicorn's request lines name the path only: signed media links and GET documents carry secrets."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                arg.split("?", 1)[0] if isinstance(arg, str) and arg.startswith("/") else arg
                for arg in record.args
            )
        return True


def configure_logging(settings: Settings) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if settings.log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.log_level.upper())
    # SQL statements carry parameters (token digests, hashes): never at INFO
    logging.getLogger("tortoise").setLevel(max(logging.WARNING, root.level))
    for name in ("uvicorn.access", "uvicorn.error"):  # HTTP lines, and websocket lines
        requests = logging.getLogger(name)
        if not any(isinstance(f, WithoutQueryString) for f in requests.filters):
            requests.addFilter(WithoutQueryString())


async def open_database(settings: Settings) -> None:
    # the global fallback makes the connection visible to every task and thread of this process
    await Tortoise.init(config=tortoise_config(settings), _enable_global_fallback=True)


async def close_database() -> None:
    await Tortoise.close_connections()
