"""OAUTHBEARER tokens from an identity provider, as Kafka's OAuthBearerLoginCallbackHandler gets them (KIP-768).

``sasl.oauthbearer.token.endpoint.url`` names either an HTTP(S) token endpoint, asked with the
OAuth client-credentials grant (``clientId``, ``clientSecret`` and the optional ``scope`` of the
JAAS options; the id and secret in a Basic Authorization header, URL-encoded first, as Kafka
sends them), or a ``file:`` URL whose file holds a token (reread at each login, so something
else may refresh it).
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Mapping

from kafkasec.errors import SaslAuthenticationError

DEFAULT_TIMEOUT_S = 10.0
_LARGEST_ANSWER = 1 << 20  # a token response is a few kB; more is not one


class TokenEndpoint:
    """Where a client's OAUTHBEARER token comes from; calling it returns a fresh token."""

    def __init__(self, url: str, options: Mapping[str, str], *, timeout_s: float = DEFAULT_TIMEOUT_S):
        scheme = urllib.parse.urlsplit(url).scheme.lower()
        if scheme not in ("http", "https", "file"):
            raise ValueError(f"sasl.oauthbearer.token.endpoint.url must be an http, https or file URL, not {url!r}")
        if scheme != "file" and not (options.get("clientId") and options.get("clientSecret")):
            raise ValueError("a token endpoint login needs clientId and clientSecret in sasl.jaas.config")
        self.url = url
        self.scheme = scheme
        self.client_id = options.get("clientId", "")
        self._client_secret = options.get("clientSecret", "")
        self.scope = options.get("scope")
        self.timeout_s = timeout_s

    def __repr__(self) -> str:
        return f"TokenEndpoint({self.url!r}, client_id={self.client_id!r})"

    def __call__(self) -> str:
        if self.scheme == "file":
            return self._read_file()
        return self._ask_endpoint()

    def _read_file(self) -> str:
        path = urllib.request.url2pathname(urllib.parse.urlsplit(self.url).path)
        try:
            with open(path, encoding="utf-8") as file:
                token = file.read().strip()
        except OSError as error:
            raise SaslAuthenticationError(f"the token file {path} cannot be read: {error.strerror}") from None
        if not token:
            raise SaslAuthenticationError(f"the token file {path} is empty")
        return token

    def _ask_endpoint(self) -> str:
        form = {"grant_type": "client_credentials", **({"scope": self.scope} if self.scope else {})}
        quote = urllib.parse.quote
        credentials = f"{quote(self.client_id, safe='')}:{quote(self._client_secret, safe='')}"
        request = urllib.request.Request(
            self.url,
            data=urllib.parse.urlencode(form).encode(),
            headers={
                "Authorization": "Basic " + base64.b64encode(credentials.encode()).decode(),
                "Content-Type": "application/x-www-form-urlencoded",
                "Accept": "application/json",
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                answer = response.read(_LARGEST_ANSWER + 1)
        except urllib.error.HTTPError as error:
            raise SaslAuthenticationError(f"the token endpoint {self.url} answered HTTP {error.code}") from None
        except (urllib.error.URLError, OSError) as error:
            raise SaslAuthenticationError(f"the token endpoint {self.url} cannot be reached: {error}") from None
        if len(answer) > _LARGEST_ANSWER:
            raise SaslAuthenticationError(f"the token endpoint {self.url} answered more than {_LARGEST_ANSWER} bytes")
        try:
            token = json.loads(answer)["access_token"]
        except (ValueError, KeyError, TypeError):
            raise SaslAuthenticationError(f"the token endpoint {self.url} answered without an access_token") from None
        if not isinstance(token, str) or not token:
            raise SaslAuthenticationError(f"the token endpoint {self.url} answered an empty access_token")
        return token
