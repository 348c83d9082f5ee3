"""SCRAM credentials as Kafka derives and stores them: ScramFormatterTest's vectors, Kafka's own
keys for a password SASLprep would change, and the credential string both ways."""

import base64
import string

import pytest
import scramp

from kafkasec.scram import (
    MIN_ITERATIONS,
    ScramCredential,
    ScramCredentialInfo,
    ScramFormatter,
    ScramMechanism,
    UserScramCredentialUpsertion,
    credential_from_string,
    credential_to_string,
    random_salt,
)
from kafkasec.scram.credentials import xor

# RFC 7677 section 3, byte for byte (Kafka's ScramFormatterTest.rfc7677Example).
RFC7677 = {
    "password": "pencil",
    "client_first_bare": "n=user,r=rOprNGfwEbeRWgbNEkqO",
    "server_first": "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    "client_final_without_proof": "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
    "proof": "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
    "server_signature": "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
}

# Computed by Kafka's own ScramFormatter (clients/.../scram/internals/ScramFormatter.java, run
# on a JDK): the same exchange as RFC 7677 under SCRAM-SHA-512, for which no RFC gives a vector.
SHA512_EXCHANGE = {
    "proof": "gMGXRcevScNtxZ6/8lQYpGtnsNAc3mGcmNomv+xnoOMw+3R2xNJdMNnzMlTN8PPC6wdp6dybEmDYXYTxwnYPJQ==",
    "server_signature": "ZQnYEgWQMFmmsM8aQMF0nDDCy/AgCzkwk8CmMZYcMg0vSVlKDanekLtifDSeVGT4+5ZxXnJq199RVG2rR7N7Zw==",
    "stored_key": "6AAub3065EYRmyFpM2RNwqK+eGnrkYuEWbXn19LsEmBqzu8QaCXNc1FwpnX9NhH2hK/60dzj9DoO5DvVkOHbvg==",
    "server_key": "jZHbYjC1aHh0/hKbxyBuGFjDrgjgKTT1esA7awWiKcRZ0o/0b1yWEebBeSVkkCFewf91nLDfKF24mvD5nmE6rA==",
}

# A password that SASLprep changes: a soft hyphen (mapped to nothing), U+2168 ROMAN NUMERAL NINE
# (NFKC: "IX"), a combining diaeresis (NFKC: composed) and a no-break space (mapped to a space).
# Kafka hashes its plain UTF-8; these keys come from Kafka's ScramFormatter with the salt below.
NON_ASCII_PASSWORD = "I\u00adX\u2168 pa\u0308ss\u00a0"
NON_ASCII_SALT = b"kafkasec-salt"
NON_ASCII_KEYS = {
    "SCRAM-SHA-256": (
        "cLsqnIZc/i/g1RONYomQ69/lMgXYfaXU9NNWXWk3q4c=",
        "oZ0xatIYgr5t4j/5pfihLxfpQ0HVuV2TkxLAryjXEBY=",
    ),
    "SCRAM-SHA-512": (
        "D9Hyf/Cl5hTUNkcSSSAygYipEVmVJaPKHv2VaJyVSehU9VBDC2eJu+sH6k11O9cXhmfg9Ukhm8FJQNDleyrebQ==",
        "RqMSPpCGbhKQeXTt453hvJXu0BpdyoS3A+NxLzeWJS6+cvkxoZlY+Hb3EQJY/ODveWTG6CuvTPpZED4lLp9lGw==",
    ),
}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def auth_message() -> bytes:
    return ",".join(
        (RFC7677["client_first_bare"], RFC7677["server_first"], RFC7677["client_final_without_proof"])
    ).encode()


@pytest.mark.parametrize(
    "mechanism, proof, server_signature",
    [
        ("SCRAM-SHA-256", RFC7677["proof"], RFC7677["server_signature"]),
        ("SCRAM-SHA-512", SHA512_EXCHANGE["proof"], SHA512_EXCHANGE["server_signature"]),
    ],
)
def test_rfc7677_example_proof_and_server_signature(mechanism, proof, server_signature):
    formatter = ScramFormatter(mechanism)
    salted = formatter.salted_password(RFC7677["password"], base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ=="), 4096)
    assert b64(formatter.client_proof(salted, auth_message())) == proof
    assert b64(formatter.server_signature(formatter.server_key(salted), auth_message())) == server_signature
    # What the server checks: the proof gives back the client key, whose hash is the stored key.
    credential = formatter.credential(b"W22ZaJ0SNY7soEsUEjb6gQ==", salted, 4096)
    client_key = xor(base64.b64decode(proof), formatter.client_signature(credential.stored_key, auth_message()))
    assert formatter.hash(client_key) == credential.stored_key == formatter.stored_key(formatter.client_key(salted))


def test_sha512_keys_match_kafka():
    formatter = ScramFormatter(ScramMechanism.SCRAM_SHA_512)
    credential = formatter.generate_credential("pencil", 4096, salt=base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ=="))
    assert b64(credential.stored_key) == SHA512_EXCHANGE["stored_key"]
    assert b64(credential.server_key) == SHA512_EXCHANGE["server_key"]


def test_minimum_iterations_is_rfc7677s():
    assert MIN_ITERATIONS == 4096


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_non_ascii_password_gives_kafkas_keys_not_saslprepd_ones(mechanism):
    credential = ScramFormatter(mechanism).generate_credential(NON_ASCII_PASSWORD, 4096, salt=NON_ASCII_SALT)
    assert (b64(credential.stored_key), b64(credential.server_key)) == NON_ASCII_KEYS[mechanism]
    _salt, stored_key, server_key, _ = scramp.ScramMechanism(mechanism).make_auth_info(
        NON_ASCII_PASSWORD, 4096, NON_ASCII_SALT
    )
    assert (stored_key, server_key) != (credential.stored_key, credential.server_key)
    # scramp's keys are those of the SASLprep'd password, which Kafka would give a different user.
    prepped = ScramFormatter(mechanism).generate_credential("IXIX p\u00e4ss ", 4096, salt=NON_ASCII_SALT)
    assert (stored_key, server_key) == (prepped.stored_key, prepped.server_key)


@pytest.mark.parametrize("password", ["pencil", "p\u00e4ssw\u00f6rd"])
def test_keys_agree_with_scramp_where_saslprep_changes_nothing(password):
    credential = ScramFormatter("SCRAM-SHA-256").generate_credential(password, 4096, salt=NON_ASCII_SALT)
    _salt, stored_key, server_key, _ = scramp.ScramMechanism("SCRAM-SHA-256").make_auth_info(
        password, 4096, NON_ASCII_SALT
    )
    assert (stored_key, server_key) == (credential.stored_key, credential.server_key)


def test_random_salts_differ_so_credentials_do():
    # Kafka's ScramCredentialUtilsTest.generateCredential.
    formatter = ScramFormatter("SCRAM-SHA-256")
    first, second = (formatter.generate_credential("password", 4096) for _ in range(2))
    assert credential_to_string(first) != credential_to_string(second)


def test_random_salt_is_base36_digits_of_130_random_bits():
    salts = {random_salt() for _ in range(50)}
    assert len(salts) == 50
    for salt in salts:
        assert set(salt.decode("ascii")) <= set(string.digits + string.ascii_lowercase)
        assert int(salt, 36) < 2**130


def test_credential_string_is_kafkas_format():
    credential = ScramCredential(b"salt", b"stored", b"server", 4096)
    text = credential_to_string(credential)
    assert text == "salt=c2FsdA==,stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=4096"
    assert credential_from_string(text) == credential


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_credential_string_round_trip(mechanism):
    # Kafka's ScramCredentialUtilsTest.stringConversion.
    credential = ScramFormatter(mechanism).generate_credential("password", 1024)
    assert credential.salt and credential.stored_key and credential.server_key
    assert credential_from_string(credential_to_string(credential)) == credential


def test_credential_string_field_order_does_not_matter():
    text = "iterations=8192,server_key=c2VydmVy,salt=c2FsdA==,stored_key=c3RvcmVk"
    assert credential_from_string(text) == ScramCredential(b"salt", b"stored", b"server", 8192)


VALID = credential_to_string(ScramFormatter("SCRAM-SHA-256").generate_credential("password", 2048))


@pytest.mark.parametrize(
    "text",
    [
        "abc",  # Kafka's invalidCredential
        VALID[VALID.index(",") :],  # missingFields: no salt, and an empty first part
        VALID[VALID.index(",") + 1 :],  # no salt
        VALID + ",a=test",  # extraneousFields
        "",
        "salt=c2FsdA==,stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=many",
        "salt=c2FsdA==,stored_key=not base64!,server_key=c2VydmVy,iterations=4096",
        "salt=c2FsdA=,stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=4096",
        "salt=c2FsdA==,stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=0",
        "salt=,stored_key=c3RvcmVk,server_key=c2VydmVy,iterations=4096",
    ],
)
def test_malformed_credential_strings_are_value_errors(text):
    with pytest.raises(ValueError):
        credential_from_string(text)


def test_credential_string_must_be_a_str():
    with pytest.raises(TypeError):
        credential_from_string(b"salt=c2FsdA==")


def test_secrets_stay_out_of_reprs():
    credential = ScramFormatter("SCRAM-SHA-256").generate_credential("hunter2", 4096, salt=b"pepper")
    upsertion = UserScramCredentialUpsertion("alice", ScramCredentialInfo("SCRAM-SHA-256", 4096), "hunter2", b"pepper")
    for text in (repr(credential), repr(upsertion)):
        assert "hunter2" not in text and "pepper" not in text
        assert b64(credential.stored_key) not in text and repr(credential.stored_key) not in text


def test_upsertion_from_password_or_salted_password_gives_one_credential():
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
    from_password = UserScramCredentialUpsertion("alice", info, "secret", b"salty").credential()
    salted = ScramFormatter(info.mechanism).salted_password("secret", b"salty", 4096)
    from_salted = UserScramCredentialUpsertion.from_salted_password("alice", info, b"salty", salted).credential()
    assert from_password == from_salted
    with pytest.raises(ValueError):
        UserScramCredentialUpsertion("alice", info, "secret", b"salty", salted_password=salted)


@pytest.mark.parametrize(
    "value, member",
    [
        ("SCRAM-SHA-256", ScramMechanism.SCRAM_SHA_256),
        ("scram-sha-512", ScramMechanism.SCRAM_SHA_512),
        (2, ScramMechanism.SCRAM_SHA_512),
    ],
)
def test_mechanism_coercion(value, member):
    assert ScramMechanism.coerce(value) is member
    assert member.mechanism_name == member.name.replace("_", "-")


def test_unknown_mechanism_has_no_name_or_hash():
    with pytest.raises(ValueError):
        _ = ScramMechanism.UNKNOWN.mechanism_name
    with pytest.raises(ValueError):
        ScramFormatter(ScramMechanism.UNKNOWN)
    with pytest.raises(ValueError):
        ScramMechanism.from_mechanism_name("SCRAM-SHA-1")
