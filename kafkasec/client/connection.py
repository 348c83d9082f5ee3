"""A small asyncio Kafka-protocol client over kio: what a broker uses to reach its controller,
what the kafkasec command uses to administer a cluster (:mod:`kafkasec.client.admin`), and what
tests and benchmarks use for the APIs no real client has (the delegation-token APIs).

::

    async with await KafkaConnection.open("127.0.0.1", 9092, client_id="tool") as connection:
        await connection.login("SCRAM-SHA-256", "alice", "alice-secret")
        response = await connection.request(body)      # a kio request body -> its response body

Requests go out one at a time per connection (a lock keeps them in order), which is all a
control path needs. A login the server refuses raises SaslAuthenticationError with its message.
After :meth:`KafkaConnection.negotiate` (ApiVersions), :meth:`KafkaConnection.send` builds each
request at the highest version both sides speak.
"""

from __future__ import annotations

import asyncio
import ssl

from kafkasec.client.login import ClientLogin
from kafkasec.errors import KafkaError, SaslAuthenticationError, UnsupportedVersionError
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.api_versions import kio_versions

API_VERSIONS_VERSION = 3  # the first with the client's software name (KIP-511)
SOFTWARE_NAME = "kafkasec"
MAX_RESPONSE_BYTES = 256 * 1024 * 1024
"""The largest answer read: a Metadata answer for a very large cluster is tens of megabytes."""


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
        self.server_versions: dict[int, tuple[int, int]] = {}
        """API key -> (lowest, highest) version the server speaks, once :meth:`negotiate` has asked."""

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        *,
        client_id: str | None = "kafkasec",
        timeout: float = 10.0,
        ssl_context: ssl.SSLContext | None = None,
        read_buffer_bytes: int = 2**16,
    ) -> KafkaConnection:
        """Connect (over TLS with ``ssl_context``, checking the certificate names ``host`` when the
        context checks host names). ``read_buffer_bytes`` is how much is read ahead of the
        caller: more for a connection that carries large answers (the gateway's upstream)."""
        connecting = asyncio.open_connection(
            host, port, ssl=ssl_context, server_hostname=host if ssl_context else None, limit=read_buffer_bytes
        )
        reader, writer = await asyncio.wait_for(connecting, timeout)
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

    def streams(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """The connection's reader and writer, for a caller that takes the connection over once
        logged in (the gateway pipelines requests on it, :mod:`kafkasec.server.upstream`)."""
        return self._reader, self._writer

    def detach(self) -> tuple[asyncio.Transport, bytes]:
        """The connection's transport and the bytes read ahead of the caller, for a caller that
        reads the connection with a protocol of its own once logged in (the gateway's link
        upstream, :mod:`kafkasec.server.upstream`): it calls ``transport.set_protocol`` at once,
        before the event loop runs again, and gives its protocol those bytes first. The
        connection is not used after."""
        # StreamReader has no public way to take what it buffered (what the server sent beyond
        # the answers read so far), and the new protocol must see it first.
        buffered = self._reader._buffer  # type: ignore[attr-defined]
        leftover = bytes(buffered)
        buffered.clear()
        return self._writer.transport, leftover  # type: ignore[return-value]  # a stream's transport is one

    def next_correlation_id(self) -> int:
        self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
        return self._correlation_id

    async def exchange(self, frame: bytes) -> bytes:
        """Send one frame (without its size prefix) and return the next frame the server sends.

        ConnectionError when the server closes the connection first, or announces a frame
        larger than :data:`MAX_RESPONSE_BYTES` (what is not a Kafka server often does).
        """
        async with self._lock:
            self._writer.write(wire.size_prefixed(frame))
            await self._writer.drain()
            try:
                (size,) = wire.FRAME_SIZE.unpack(await self._reader.readexactly(wire.FRAME_SIZE.size))
                if not 0 <= size <= MAX_RESPONSE_BYTES:
                    raise ConnectionError(
                        f"the server announced a {size}-byte answer (at most {MAX_RESPONSE_BYTES}): is it a Kafka server?"
                    )
                return await self._reader.readexactly(size)
            except asyncio.IncompleteReadError:
                raise ConnectionError("the server closed the connection before it answered") from None

    async def request(self, body):
        """Send a kio request body; its response body. A mismatched correlation id is an error."""
        correlation_id = self.next_correlation_id()
        frame = wire.encode_request(body, correlation_id=correlation_id, client_id=self.client_id)
        answer = await self.exchange(frame)
        answered_id, response = wire.decode_response(answer, body.__api_key__, body.__version__)
        if answered_id != correlation_id:
            raise ConnectionError(f"the server answered correlation id {answered_id} to request {correlation_id}")
        return response

    async def negotiate(self) -> dict[int, tuple[int, int]]:
        """Ask the server which API versions it speaks (ApiVersions v3, as Kafka's clients do)."""
        body = wire.build(
            wire.request_schema(ApiKey.API_VERSIONS, API_VERSIONS_VERSION),
            client_software_name=SOFTWARE_NAME,
            client_software_version=_software_version(),
        )
        response = await self.request(body)
        if int(response.error_code) != 0:
            raise KafkaError.for_code(int(response.error_code), "the server refused ApiVersions")
        self.server_versions = {
            int(key.api_key): (int(key.min_version), int(key.max_version)) for key in response.api_keys
        }
        return self.server_versions

    def version_for(self, api_key: int) -> int:
        """The highest version of ``api_key`` both kio and the server speak (after :meth:`negotiate`)."""
        low, high = kio_versions(api_key)
        if api_key not in self.server_versions:
            raise UnsupportedVersionError(f"the server does not speak {ApiKey(api_key).name}")
        server_low, server_high = self.server_versions[api_key]
        version = min(high, server_high)
        if version < max(low, server_low):
            raise UnsupportedVersionError(
                f"the server speaks {ApiKey(api_key).name} v{server_low}-v{server_high}; kafkasec v{low}-v{high}"
            )
        return version

    def request_schema(self, api_key: int):
        """kio's request class of ``api_key`` at :meth:`version_for`: what :meth:`send` builds, and
        where a caller finds the item types of its arrays."""
        return wire.request_schema(api_key, self.version_for(api_key))

    async def send(self, api_key: int, **values):
        """A request of ``api_key`` with ``values`` (see :func:`wire.build`) at :meth:`version_for`; its response."""
        return await self.request(wire.build(self.request_schema(api_key), **values))

    async def login(self, mechanism: str, username: str, password: str, *, token_auth: bool = False) -> None:
        """A SCRAM or PLAIN login with a user's password or, with ``token_auth``, a delegation
        token's id and base64 HMAC (SCRAM)."""
        await self.authenticate(ClientLogin(mechanism, username, password, token_auth=token_auth))

    async def authenticate(self, login: ClientLogin) -> None:
        """Log in by SaslHandshake v1 and SaslAuthenticate, through ``login``'s conversation."""
        mechanism = login.mechanism
        handshake = await self.request(wire.build(wire.request_schema(ApiKey.SASL_HANDSHAKE, 1), mechanism=mechanism))
        if int(handshake.error_code) != 0:
            raise KafkaError.for_code(
                int(handshake.error_code), f"{mechanism} refused; the server offers {', '.join(handshake.mechanisms)}"
            )
        conversation = login.conversation()
        message = next(conversation)
        while True:
            answer = await self._authenticate(message)
            try:
                message = conversation.send(answer)
            except StopIteration:
                return

    async def _authenticate(self, token: bytes) -> bytes:
        response = await self.request(wire.build(wire.request_schema(ApiKey.SASL_AUTHENTICATE, 2), auth_bytes=token))
        if int(response.error_code) != 0:
            raise SaslAuthenticationError(response.error_message, error_code=int(response.error_code))
        # KIP-368: 0 when the session does not expire; call login() again before it ends.
        self.session_lifetime_ms = int(response.session_lifetime.total_seconds() * 1000)
        return bytes(response.auth_bytes)


def _software_version() -> str:
    from kafkasec import __version__

    # KIP-511's pattern allows letters, digits, '-' and '.': a local version's '+' is not one.
    return "".join(c if c.isalnum() or c in "-." else "-" for c in __version__)
