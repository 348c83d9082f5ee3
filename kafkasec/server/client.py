"""A small asyncio Kafka-protocol client over kio: what a broker uses to reach its controller, and
what tests and benchmarks use for the APIs no real client has (the delegation-token APIs).

::

    async with await KafkaConnection.open("127.0.0.1", 9092, client_id="tool") as connection:
        await connection.login("SCRAM-SHA-256", "alice", "alice-secret")
        response = await connection.request(body)      # a kio request body -> its response body

Requests go out one at a time per connection (a lock keeps them in order), which is all a
control path needs. A login the server refuses raises SaslAuthenticationError with its message.
"""

from __future__ import annotations

import asyncio

from kafkasec.errors import KafkaError, SaslAuthenticationError
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.scram.client import ScramClient


class KafkaConnection:
    """One connection to a Kafka-protocol server; build it with :meth:`open`."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, client_id: str | None):
        self._reader = reader
        self._writer = writer
        self.client_id = client_id
        self._correlation_id = 0
        self._lock = asyncio.Lock()
        self.session_lifetime_ms = 0
        """What the last login's SaslAuthenticate said (KIP-368): 0, or when to log in again."""

    @classmethod
    async def open(cls, host: str, port: int, *, client_id: str | None = "kafkasec", timeout: float = 10.0) -> KafkaConnection:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        return cls(reader, writer, client_id=client_id)

    async def __aenter__(self) -> KafkaConnection:
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.close()

    async def close(self) -> None:
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except (ConnectionError, OSError):
            pass  # the server may have closed first; the connection is gone either way

    def next_correlation_id(self) -> int:
        self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
        return self._correlation_id

    async def exchange(self, frame: bytes) -> bytes:
        """Send one frame (without its size prefix) and return the next frame the server sends."""
        async with self._lock:
            self._writer.write(wire.size_prefixed(frame))
            await self._writer.drain()
            (size,) = wire.FRAME_SIZE.unpack(await self._reader.readexactly(wire.FRAME_SIZE.size))
            return await self._reader.readexactly(size)

    async def request(self, body):
        """Send a kio request body; its response body. A mismatched correlation id is an error."""
        correlation_id = self.next_correlation_id()
        frame = wire.encode_request(body, correlation_id=correlation_id, client_id=self.client_id)
        answer = await self.exchange(frame)
        answered_id, response = wire.decode_response(answer, body.__api_key__, body.__version__)
        if answered_id != correlation_id:
            raise ConnectionError(f"the server answered correlation id {answered_id} to request {correlation_id}")
        return response

    async def login(self, mechanism: str, username: str, password: str, *, token_auth: bool = False) -> None:
        """A SCRAM login by SaslHandshake v1 and SaslAuthenticate, with a user's password or, with
        ``token_auth``, a delegation token's id and base64 HMAC."""
        handshake = await self.request(wire.build(wire.request_schema(ApiKey.SASL_HANDSHAKE, 1), mechanism=mechanism))
        if int(handshake.error_code) != 0:
            raise KafkaError.for_code(
                int(handshake.error_code), f"{mechanism} refused; the server offers {', '.join(handshake.mechanisms)}"
            )
        scram = ScramClient(mechanism, username, password, token_auth=token_auth)
        server_first = await self._authenticate(scram.first_message())
        server_final = await self._authenticate(scram.final_message(server_first))
        scram.verify_server_final(server_final)

    async def _authenticate(self, token: bytes) -> bytes:
        response = await self.request(wire.build(wire.request_schema(ApiKey.SASL_AUTHENTICATE, 2), auth_bytes=token))
        if int(response.error_code) != 0:
            raise SaslAuthenticationError(response.error_message, error_code=int(response.error_code))
        # KIP-368: 0 when the session does not expire; call login() again before it ends.
        self.session_lifetime_ms = int(response.session_lifetime.total_seconds() * 1000)
        return bytes(response.auth_bytes)
