"""Local stand-ins for Apple's and Google's push APIs, for tests: each records what it was sent and checks
the credentials as the real one does.

- `ApnsStandIn` speaks HTTP/2 only, with prior knowledge over cleartext (h2c), as APNs speaks nothing but
  HTTP/2: a client that falls back to HTTP/1.1 gets no answer. It answers 410 for tokens in `gone`.
- `FcmStandIn` is an OAuth token endpoint and FCM's HTTP v1 send, over HTTP/1.1: a send must carry the
  access token the token endpoint granted for a JWT assertion signed by the service account's key. It
  answers 404 (UNREGISTERED) for tokens in `gone`.
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import h2.config
import h2.connection
import h2.events
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

from harness.proofloop import free_port

ACCESS_TOKEN = "stand-in-access-token"


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def jwt_parts(token: str) -> tuple[dict[str, Any], dict[str, Any], bytes, bytes]:
    head, claims, signature = token.split(".")
    return json.loads(unb64(head)), json.loads(unb64(claims)), f"{head}.{claims}".encode(), unb64(signature)


@dataclass
class Received:
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class ApnsStandIn:
    key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    gone: set[str] = field(default_factory=set)
    received: list[Received] = field(default_factory=list)
    port: int = field(default_factory=free_port)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def key_pem(self) -> str:
        return self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        connection = h2.connection.H2Connection(config=config)
        connection.initiate_connection()
        writer.write(connection.data_to_send())
        streams: dict[int, tuple[dict[str, str], bytearray]] = {}
        try:
            while data := await reader.read(65536):
                for event in connection.receive_data(data):
                    if isinstance(event, h2.events.RequestReceived):
                        streams[event.stream_id] = (
                            {str(k): str(v) for k, v in event.headers or []},
                            bytearray(),
                        )
                    elif isinstance(event, h2.events.DataReceived) and event.stream_id in streams:
                        streams[event.stream_id][1].extend(event.data or b"")
                        connection.acknowledge_received_data(
                            event.flow_controlled_length or 0, event.stream_id
                        )
                    elif isinstance(event, h2.events.StreamEnded) and event.stream_id in streams:
                        headers, body = streams.pop(event.stream_id)
                        self.received.append(Received(headers, json.loads(bytes(body))))
                        device = headers[":path"].rsplit("/", 1)[-1]
                        status = "410" if device in self.gone else "200"
                        answer = [(":status", status), ("apns-id", headers.get("apns-id", ""))]
                        connection.send_headers(event.stream_id, answer, end_stream=True)
                writer.write(connection.data_to_send())
                await writer.drain()
        except (h2.exceptions.ProtocolError, ConnectionError):
            pass  # not HTTP/2 (or gone): a real APNs would not answer either
        finally:
            writer.close()

    def verify(self, received: Received, key_id: str, team_id: str) -> None:
        """What Apple checks of a provider token: ES256 by the team's key named by `kid`."""
        scheme, _, token = received.headers["authorization"].partition(" ")
        header, claims, signed, signature = jwt_parts(token)
        assert scheme == "bearer" and header == {"alg": "ES256", "kid": key_id} and claims["iss"] == team_id
        r, s = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
        from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

        self.key.public_key().verify(encode_dss_signature(r, s), signed, ec.ECDSA(hashes.SHA256()))


@contextmanager
def apns_stand_in() -> Iterator[ApnsStandIn]:
    stand_in = ApnsStandIn()
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    async def start() -> asyncio.Server:
        return await asyncio.start_server(stand_in._serve, "127.0.0.1", stand_in.port)

    def run() -> None:
        asyncio.set_event_loop(loop)
        server = loop.run_until_complete(start())
        ready.set()
        loop.run_forever()
        server.close()
        loop.run_until_complete(server.wait_closed())
        loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield stand_in
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


@dataclass
class FcmStandIn:
    key: rsa.RSAPrivateKey = field(default_factory=lambda: rsa.generate_private_key(65537, 2048))
    gone: set[str] = field(default_factory=set)
    received: list[Received] = field(default_factory=list)
    assertions: list[dict[str, Any]] = field(default_factory=list)
    port: int = field(default_factory=free_port)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def service_account(self) -> str:
        pem = self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
        return json.dumps(
            {
                "type": "service_account",
                "project_id": "proofloop-test",
                "client_email": "push@proofloop-test.iam.gserviceaccount.com",
                "private_key": pem,
                "token_uri": f"{self.url}/token",
            }
        )

    def _grant(self, form: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
        header, claims, signed, signature = jwt_parts(form["assertion"][0])
        if header.get("alg") != "RS256" or form.get("grant_type") != [
            "urn:ietf:params:oauth:grant-type:jwt-bearer"
        ]:
            return 400, {"error": "invalid_request"}
        try:
            self.key.public_key().verify(signature, signed, padding.PKCS1v15(), hashes.SHA256())
        except Exception:
            return 400, {"error": "invalid_grant"}
        self.assertions.append(claims)
        return 200, {"access_token": ACCESS_TOKEN, "expires_in": 3600, "token_type": "Bearer"}

    def _send(self, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if headers.get("authorization") != f"Bearer {ACCESS_TOKEN}":
            return 401, {"error": {"status": "UNAUTHENTICATED"}}
        self.received.append(Received(headers, body))
        if body["message"]["token"] in self.gone:
            return 404, {"error": {"status": "NOT_FOUND", "details": [{"errorCode": "UNREGISTERED"}]}}
        return 200, {"name": "projects/proofloop-test/messages/1"}


@contextmanager
def fcm_stand_in() -> Iterator[FcmStandIn]:
    stand_in = FcmStandIn()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            headers = {k.lower(): v for k, v in self.headers.items()}
            if self.path == "/token":
                status, answer = stand_in._grant(parse_qs(raw.decode()))
            elif self.path == "/v1/projects/proofloop-test/messages:send":
                status, answer = stand_in._send(headers, json.loads(raw))
            else:
                status, answer = 404, {}
            payload = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", stand_in.port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stand_in
    finally:
        server.shutdown()
        server.server_close()
