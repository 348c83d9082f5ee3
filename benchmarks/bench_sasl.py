"""Logins per second for each SASL mechanism through the facade, and one JWT validation.

    python benchmarks/bench_sasl.py [--seconds S]

Each login is what a broker does for a new connection once the bytes are in: a server from
``KafkaSecurity.sasl_server`` (the mechanism table), every client message evaluated, and the
principal built from the authentication context. The clients' work is kept out where it is
heavy and a real client does it once: SCRAM's PBKDF2 on the client side is cached (as in
bench_endpoint.py), and the JWTs are signed before timing. Mechanisms are timed in alternation,
round after round, in one process; the table gives each one's best round and its ratio to
SCRAM-SHA-256. The JWT row times ``JwksValidator.validate`` alone, with the JWKS cached (the
target: at most 100 µs on this machine).
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]
os.environ["KAFKASEC_LOAD_PLUGINS"] = ""

from bench_endpoint import cache_client_pbkdf2  # noqa: E402

from kafkasec import KafkaSecurity, ScramCredentialInfo, UserScramCredentialUpsertion  # noqa: E402
from kafkasec.client.login import oauthbearer_initial_response, unsecured_jwt  # noqa: E402
from kafkasec.sasl.jwks import JwksValidator  # noqa: E402
from kafkasec.scram.client import ScramClient  # noqa: E402

from identity_provider import AUDIENCE, ISSUER, IdentityProvider  # noqa: E402

PASSWORD = "alice-secret"
JAAS = f'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="{PASSWORD}";'


def scram_login(security, mechanism: str) -> None:
    client = ScramClient(mechanism, "alice", PASSWORD)
    server = security.sasl_server(mechanism)
    first = server.evaluate_response(client.first_message())
    client.verify_server_final(server.evaluate_response(client.final_message(first)))
    security.build_principal(server.authentication_context("127.0.0.1"))


def one_message_login(security, mechanism: str, message: bytes) -> None:
    server = security.sasl_server(mechanism)
    server.evaluate_response(message)
    assert server.is_complete
    security.build_principal(server.authentication_context("127.0.0.1"))


def per_second(function, seconds: float) -> float:
    done, started = 0, time.perf_counter()
    deadline = started + seconds
    while time.perf_counter() < deadline:
        function()
        done += 1
    return done / (time.perf_counter() - started)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    cache_client_pbkdf2()
    provider = IdentityProvider()
    with provider.serving() as jwks_url:
        plain_and_jwt = KafkaSecurity(config={
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "sasl.oauthbearer.jwks.endpoint.url": jwks_url,
            "sasl.oauthbearer.expected.audience": AUDIENCE,
            "sasl.oauthbearer.expected.issuer": ISSUER,
        })
        unsecured = KafkaSecurity()
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            plain_and_jwt.alter_user_scram_credentials(
                [UserScramCredentialUpsertion("alice", ScramCredentialInfo(mechanism, 4096), PASSWORD)]
            )
        signed = provider.token("alice", lifetime_s=3600)
        validator = JwksValidator(jwks_url, expected_audience=[AUDIENCE], expected_issuer=ISSUER)
        # The validator fetches its JWKS on a thread of its own and refuses tokens until it has it.
        if not validator.keys.wait_until_known(10):
            raise RuntimeError(f"the JWKS at {jwks_url} was not fetched within 10 s")
        validator.validate(signed)
        candidates = {
            "SCRAM-SHA-256": functools.partial(scram_login, plain_and_jwt, "SCRAM-SHA-256"),
            "SCRAM-SHA-512": functools.partial(scram_login, plain_and_jwt, "SCRAM-SHA-512"),
            "PLAIN": functools.partial(one_message_login, plain_and_jwt, "PLAIN", f"\0alice\0{PASSWORD}".encode()),
            "OAUTHBEARER (JWT, JWKS cached)": functools.partial(one_message_login, plain_and_jwt, "OAUTHBEARER", oauthbearer_initial_response(signed)),
            "OAUTHBEARER (unsecured JWT)": functools.partial(one_message_login, unsecured, "OAUTHBEARER", oauthbearer_initial_response(unsecured_jwt({'sub': 'alice', 'exp': int(time.time()) + 3600}))),
        }
        best = dict.fromkeys(candidates, 0.0)
        validations = 0.0
        for _ in range(args.rounds):
            for name, login in candidates.items():
                best[name] = max(best[name], per_second(login, args.seconds))
            validations = max(validations, per_second(functools.partial(validator.validate, signed), args.seconds))
        plain_and_jwt.close()
        unsecured.close()
        validator.close()
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{time.strftime('%Y-%m-%d')}; best of {args.rounds} alternating rounds of {args.seconds:g} s.\n")
    print("| login through `KafkaSecurity` | logins/s | ratio to SCRAM-SHA-256 |")
    print("|---|---:|---:|")
    for name, rate in best.items():
        print(f"| {name} | {rate:,.0f} | {rate / best['SCRAM-SHA-256']:.2f}x |")
    print(f"\nOne JWT validation (RS256, JWKS cached): {1e6 / validations:.0f} µs (target ≤ 100 µs).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
