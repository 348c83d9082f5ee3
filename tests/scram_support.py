"""What the SCRAM tests share: RFC 7677's exchange (and the same under SCRAM-SHA-512, as
Kafka's ScramFormatter computes it), credentials and tokens, a server with a fixed nonce."""

import base64

from kafkasec.scram import ScramFormatter, ScramMechanism
from kafkasec.scram.server import ScramServer

MECHANISMS = ["SCRAM-SHA-256", "SCRAM-SHA-512"]
PASSWORDS = {"user": "pencil", "alice": "alice-secret", "a,b=c": "pa,ss=word"}
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_NONCE = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_FINALS = {
    "SCRAM-SHA-256": (
        f"c=biws,r={RFC_NONCE},p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
        "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
    ),
    # The same exchange under SCRAM-SHA-512, as Kafka's ScramFormatter computes it.
    "SCRAM-SHA-512": (
        f"c=biws,r={RFC_NONCE},p=gMGXRcevScNtxZ6/8lQYpGtnsNAc3mGcmNomv+xnoOMw+3R2xNJdMNnzMlTN8PPC6wdp6dybEmDYXYTxwnYPJQ==",
        "v=ZQnYEgWQMFmmsM8aQMF0nDDCy/AgCzkwk8CmMZYcMg0vSVlKDanekLtifDSeVGT4+5ZxXnJq199RVG2rR7N7Zw==",
    ),
}

_CREDENTIALS = {
    mechanism: {
        user: ScramFormatter(mechanism).generate_credential(password, 4096, salt=RFC_SALT if user == "user" else None)
        for user, password in PASSWORDS.items()
    }
    for mechanism in MECHANISMS
}

TOKEN_HMAC = b"\x8f\x00token-hmac\xff"
TOKEN_PASSWORD = base64.b64encode(TOKEN_HMAC).decode()
TOKEN_CREDENTIALS = {
    mechanism: ScramFormatter(mechanism).generate_credential(TOKEN_PASSWORD, 4096) for mechanism in MECHANISMS
}


def credentials(mechanism):
    return _CREDENTIALS[ScramMechanism.coerce(mechanism).mechanism_name].get


def tokens(mechanism):
    table = {"token-1": ("alice", TOKEN_CREDENTIALS[mechanism]), "token-no-credential": ("bob", None)}
    return table.get


def server_for(mechanism="SCRAM-SHA-256", nonce=RFC_SERVER_NONCE, **kwargs):
    return ScramServer(
        mechanism,
        credentials(mechanism),
        token_callback=kwargs.pop("token_callback", tokens(mechanism)),
        nonce_factory=lambda: nonce,
        **kwargs,
    )
