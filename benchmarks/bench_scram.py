"""SCRAM costs, side by side with a baseline in one run: the server's side of one login, and
creating a credential.

    python benchmarks/bench_scram.py [--quick]

Login: one full SCRAM exchange as a broker sees it (a new server, the client-first message,
the client-final message), timed on the server's calls only. The client's PBKDF2 is done once
before timing; its per-login HMACs run between the server's calls, outside the timed part.
Both servers make their own random nonce. Baseline: scramp's server (ScramMechanism.make_server)
on the same messages and credential.

Credential creation: ScramFormatter.generate_credential (PBKDF2, then the stored and server
keys) at 4096 and 16384 iterations. Baselines: the bare PBKDF2 of the same password and salt
through cryptography, which generate_credential cannot beat (the target is within 1.2x), and
scramp's make_auth_info (SASLprep, then hashlib's PBKDF2 and the same keys).

Prints a Markdown table with ratios and the machine.
"""

from __future__ import annotations

import argparse
import base64
import os
import platform
import statistics
import subprocess
import sys
import time

import scramp
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

from kafkasec import KafkaPrincipal, KafkaSecurity, RequestContext, ScramCredentialInfo, UserScramCredentialUpsertion
from kafkasec.scram import ScramFormatter
from kafkasec.scram.client import ScramClient
from kafkasec.scram.server import ScramServer

PASSWORD = "alice-secret"
SALT = b"bench-salt-0123456789"
USER = "alice"


class Client:
    """The client's side after PBKDF2: only the HMACs each login needs."""

    def __init__(self, mechanism: str, iterations: int):
        self.formatter = ScramFormatter(mechanism)
        self.salted = self.formatter.salted_password(PASSWORD, SALT, iterations)
        self.bare = f"n={USER},r=fyko+d2lbbFgONRv9qkxdawL"
        self.first = ("n,," + self.bare).encode()

    def final(self, server_first: bytes) -> bytes:
        nonce = server_first.split(b",", 1)[0][2:].decode()
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self.bare},{server_first.decode()},{without_proof}".encode()
        proof = self.formatter.client_proof(self.salted, auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()


def server_side_ns(new_server, client_first: bytes, client_final) -> int:
    """The nanoseconds a new server spends on one login; the client's work is not timed."""
    start = time.perf_counter_ns()
    server = new_server()
    server_first = server.evaluate_response(client_first)
    elapsed = time.perf_counter_ns() - start
    final = client_final(server_first)
    start = time.perf_counter_ns()
    server.evaluate_response(final)
    complete = server.is_complete
    elapsed += time.perf_counter_ns() - start
    assert complete
    return elapsed


def kafkasec_login(mechanism, credential, client):
    store = {USER: credential}
    return lambda: server_side_ns(lambda: ScramServer(mechanism, store.get), client.first, client.final)


def facade_logins(mechanism):
    """A token login and a user login, both through KafkaSecurity.scram_server (store lookups
    and, for the token, the manager's cached credential included)."""
    security = KafkaSecurity.from_config({"delegation.token.secret.key": "bench-secret"})
    upsertion = UserScramCredentialUpsertion(USER, ScramCredentialInfo(mechanism, 4096), PASSWORD, salt=SALT)
    security.alter_user_scram_credentials([upsertion])
    context = RequestContext(KafkaPrincipal.user(USER), "10.0.0.1", security_protocol="SASL_SSL")
    token = security.create_delegation_token(context)
    security.delegation_tokens.token_login(token.token_id, mechanism)  # derive its credential once

    def timed(client):
        # The client's first message is made before server_side_ns starts its clock.
        return lambda: server_side_ns(lambda: security.scram_server(mechanism), client.first_message(), client.final_message)

    return {
        "token": timed(ReplayingClient(mechanism, token.token_id, token.hmac_as_base64, token_auth=True)),
        "user": timed(ReplayingClient(mechanism, USER, PASSWORD)),
    }


class ReplayingClient:
    """A kafkasec ScramClient per login, its PBKDF2 done once and reused (outside the timing)."""

    def __init__(self, mechanism, username, password, **kwargs):
        self.args = (mechanism, username, password)
        self.kwargs = kwargs
        self.salted = {}

    def first_message(self) -> bytes:
        self.client = ScramClient(*self.args, **self.kwargs)
        self.client._formatter = CachedFormatter(self.client._formatter, self.salted)
        return self.client.first_message()

    def final_message(self, server_first: bytes) -> bytes:
        return self.client.final_message(server_first)


class CachedFormatter:
    def __init__(self, formatter, cache):
        self._formatter, self._cache = formatter, cache

    def salted_password(self, password, salt, iterations):
        key = (password, salt, iterations)
        if key not in self._cache:
            self._cache[key] = self._formatter.salted_password(password, salt, iterations)
        return self._cache[key]

    def __getattr__(self, name):
        return getattr(self._formatter, name)


def scramp_login(mechanism, credential, client):
    scram_mechanism = scramp.ScramMechanism(mechanism)
    auth_info = (credential.salt, credential.stored_key, credential.server_key, credential.iterations)

    def auth_fn(username):
        return auth_info

    first = client.first.decode()

    def login() -> int:
        start = time.perf_counter_ns()
        server = scram_mechanism.make_server(auth_fn)
        server.set_client_first(first)
        server_first = server.get_server_first()
        elapsed = time.perf_counter_ns() - start
        final = client.final(server_first.encode()).decode()
        start = time.perf_counter_ns()
        server.set_client_final(final)
        server.get_server_final()
        elapsed += time.perf_counter_ns() - start
        return elapsed

    return login


def login_us(logins_by_name: dict, samples: int, logins: int) -> dict[str, float]:
    """Median over ``samples`` of the mean server µs per login over ``logins`` logins; the
    servers take turns sample by sample, so that a busy moment of the machine hits both."""
    timings: dict[str, list[float]] = {name: [] for name in logins_by_name}
    for login in logins_by_name.values():
        for _ in range(min(logins, 200)):
            login()
    for _ in range(samples):
        for name, login in logins_by_name.items():
            timings[name].append(sum(login() for _ in range(logins)) / logins / 1000)
    return {name: statistics.median(values) for name, values in timings.items()}


def creation_ms(functions: dict, samples: int) -> dict[str, float]:
    """Median ms per call over ``samples`` calls, the functions taking turns."""
    timings: dict[str, list[float]] = {name: [] for name in functions}
    for function in functions.values():
        function()
    for _ in range(samples):
        for name, function in functions.items():
            start = time.perf_counter_ns()
            function()
            timings[name].append((time.perf_counter_ns() - start) / 1e6)
    return {name: statistics.median(values) for name, values in timings.items()}


def raw_pbkdf2(mechanism: str, iterations: int):
    algorithm = {"SCRAM-SHA-256": hashes.SHA256, "SCRAM-SHA-512": hashes.SHA512}[mechanism]

    def derive():
        return PBKDF2HMAC(algorithm(), algorithm.digest_size, SALT, iterations).derive(PASSWORD.encode())

    return derive


def machine() -> str:
    try:
        nproc = subprocess.run(["nproc"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        nproc = str(os.cpu_count())
    return f"{platform.platform()}, nproc {nproc}, python -VV: {sys.version.splitlines()[0]}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples: a smoke run of a few seconds")
    args = parser.parse_args(argv)
    samples, logins, creations = (3, 300, 3) if args.quick else (15, 1000, 21)

    print(f"machine: {machine()}, load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print("| case | kafkasec | baseline | kafkasec / baseline | target |")
    print("|---|---|---|---|---|")
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        credential = ScramFormatter(mechanism).generate_credential(PASSWORD, 4096, salt=SALT)
        client = Client(mechanism, 4096)
        timings = login_us(
            {"ours": kafkasec_login(mechanism, credential, client), "scramp": scramp_login(mechanism, credential, client)},
            samples,
            logins,
        )
        ours, theirs = timings["ours"], timings["scramp"]
        verdict = "ok" if 1e6 / ours >= 20_000 else "MISSED"
        print(
            f"| {mechanism} login, server side (vs scramp's server) | {ours:.1f} µs = {1e6 / ours:,.0f}/s "
            f"| {theirs:.1f} µs = {1e6 / theirs:,.0f}/s | {ours / theirs:.2f}x | >= 20,000/s per core: {verdict} |"
        )
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        timings = login_us(facade_logins(mechanism), samples, logins)
        ours, theirs = timings["token"], timings["user"]
        print(
            f"| {mechanism} token login through KafkaSecurity.scram_server (vs a user login through it) "
            f"| {ours:.1f} µs = {1e6 / ours:,.0f}/s | {theirs:.1f} µs = {1e6 / theirs:,.0f}/s | {ours / theirs:.2f}x | — |"
        )
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        formatter = ScramFormatter(mechanism)
        for iterations in (4096, 16384):
            scramp_mechanism = scramp.ScramMechanism(mechanism)
            timings = creation_ms(
                {
                    "ours": lambda formatter=formatter, iterations=iterations: formatter.generate_credential(
                        PASSWORD, iterations, salt=SALT
                    ),
                    "raw": raw_pbkdf2(mechanism, iterations),
                    "scramp": lambda scramp_mechanism=scramp_mechanism, iterations=iterations: scramp_mechanism.make_auth_info(
                        PASSWORD, iteration_count=iterations, salt=SALT
                    ),
                },
                creations,
            )
            ours, raw, theirs = timings["ours"], timings["raw"], timings["scramp"]
            verdict = "ok" if ours <= 1.2 * raw else "MISSED"
            print(
                f"| {mechanism} credential, {iterations} iterations (vs raw PBKDF2) | {ours:.2f} ms "
                f"| {raw:.2f} ms | {ours / raw:.2f}x | <= 1.2x: {verdict} |"
            )
            print(
                f"| {mechanism} credential, {iterations} iterations (vs scramp's make_auth_info) | {ours:.2f} ms "
                f"| {theirs:.2f} ms | {ours / theirs:.2f}x | — |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
