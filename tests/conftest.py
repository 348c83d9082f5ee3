"""Shared fixtures. No entry-point plugin is loaded in tests: each test registers what it uses."""

import os

import pytest

os.environ["KAFKASEC_LOAD_PLUGINS"] = ""

from kafkasec import KafkaPrincipal, RequestContext, StandardAuthorizer  # noqa: E402


@pytest.fixture
def authorizer():
    return StandardAuthorizer(super_users="User:admin")


def context_for(principal: str, host: str = "127.0.0.1") -> RequestContext:
    return RequestContext(KafkaPrincipal.parse(principal), host)
