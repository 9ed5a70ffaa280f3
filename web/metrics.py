"""GET /metrics: Prometheus text, summed over every uvicorn worker when there are several."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from observability.exposition import CONTENT_TYPE, render_latest


async def metrics(request: Request) -> Response:
    # reading the multiprocess files is blocking file I/O: keep it off the event loop
    body = await run_in_threadpool(render_latest)
    return Response(body, media_type=CONTENT_TYPE)
