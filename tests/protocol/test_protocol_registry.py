"""The handler registry: the kafkasec_api_handlers hook, built-ins as plugins, one error encoder."""

import pytest

from kafkasec import AclBinding, KafkaSecurity, RequestContext, hookimpl
from kafkasec.errors import KafkaError, KafkaErrorCode
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.errors import ApiError
from kafkasec.protocol.registry import ApiHandlers, collect_handlers
from kafkasec.store.base import StateBusyError

from server_support import CONFIG, add_users, logged_in, run, serving

ADMIN = RequestContext.for_principal("User:admin")


def describe_configs_handler(security, context, body, version):
    response_type = wire.response_schema(ApiKey.DESCRIBE_CONFIGS, version)
    result_type = wire.item_type(response_type, "results")
    results = tuple(
        wire.build(result_type, resource_type=r.resource_type, resource_name=r.resource_name, configs=(), **ApiError.NONE.fields())
        for r in body.resources
    )
    return wire.build(response_type, throttle_time_ms=0, results=results)


class ServesDescribeConfigs:
    @hookimpl
    def kafkasec_api_handlers(self, security):
        return {ApiKey.DESCRIBE_CONFIGS: describe_configs_handler}


class RefusesAclListing:
    @hookimpl
    def kafkasec_api_handlers(self):
        def refuse(security, context, body, version):
            raise KafkaError.for_code("POLICY_VIOLATION", "ACLs are listed by the audit team")

        return {ApiKey.DESCRIBE_ACLS: refuse}


def describe_acls_request(version=3):
    return wire.build(
        wire.request_schema(ApiKey.DESCRIBE_ACLS, version),
        resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
        principal_filter=None, host_filter=None, operation=1, permission_type=1,
    )


def frame_of(body, correlation_id=7):
    return wire.encode_request(body, correlation_id=correlation_id, client_id="test")


def handle(registry, security, body):
    request = wire.decode_request(frame_of(body))
    _, response = wire.decode_response(registry.handle(security, ADMIN, request), request.api_key, request.api_version)
    return response


def test_the_built_in_plugin_serves_the_sdk_admin_apis():
    with KafkaSecurity(super_users="User:admin") as security:
        served = collect_handlers(security)
        assert set(served) == {
            ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS, ApiKey.DESCRIBE_ACLS,
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            ApiKey.CREATE_DELEGATION_TOKEN, ApiKey.RENEW_DELEGATION_TOKEN,
            ApiKey.EXPIRE_DELEGATION_TOKEN, ApiKey.DESCRIBE_DELEGATION_TOKEN,
        }
        names = [impl.plugin_name for impl in security.plugin_manager.hook.kafkasec_api_handlers.get_hookimpls()]
        assert names == ["kafkasec.protocol.builtin_apis"]


def test_a_plugin_replaces_a_built_in_handler_and_its_error_is_encoded_as_kafka_does():
    with KafkaSecurity(super_users="User:admin", plugins=[RefusesAclListing()]) as security:
        security.create_acls([AclBinding.of("TOPIC", "t", "LITERAL", "User:a", "*", "READ", "ALLOW")])
        registry = ApiHandlers.collect(security, accepts_envelopes=False)
        response = handle(registry, security, describe_acls_request())
        assert (int(response.error_code), response.error_message) == (44, "ACLs are listed by the audit team")
        assert response.resources == ()


def test_two_plugins_serving_one_api_are_refused():
    class Another(ServesDescribeConfigs):
        pass

    with KafkaSecurity(plugins=[ServesDescribeConfigs(), Another()]) as security:
        with pytest.raises(ValueError, match="both serve DescribeConfigs"):
            collect_handlers(security)


def test_a_plugin_offering_something_else_than_a_handler_is_refused():
    class Broken:
        @hookimpl
        def kafkasec_api_handlers(self):
            return {ApiKey.DESCRIBE_CONFIGS: "not callable"}

    with KafkaSecurity(plugins=[Broken()]) as security:
        with pytest.raises(TypeError, match="not a handler"):
            collect_handlers(security)
    with KafkaSecurity(plugins=[type("Unknown", (), {"kafkasec_api_handlers": hookimpl(lambda self: {999: print})})()]) as security:
        with pytest.raises(ValueError, match="999"):
            collect_handlers(security)


@pytest.mark.parametrize(
    "raised, expected",
    [
        (KafkaError.for_code(44), (44, None)),  # the default text is not repeated
        (KafkaError.for_code(44, "no"), (44, "no")),
        (StateBusyError("locked by pid 7"), (7, None)),  # the store's text stays in the log
        (RuntimeError("secret detail"), (-1, None)),
    ],
)
def test_every_handler_failure_goes_through_one_encoder(raised, expected):
    class Raises:
        @hookimpl
        def kafkasec_api_handlers(self):
            def handler(security, context, body, version):
                raise raised

            return {ApiKey.DESCRIBE_ACLS: handler}

    with KafkaSecurity(plugins=[Raises()]) as security:
        response = handle(ApiHandlers.collect(security, accepts_envelopes=False), security, describe_acls_request())
        assert (int(response.error_code), response.error_message) == expected


def test_api_error_matches_kafkas_from_throwable():
    assert ApiError.from_exception(None) is ApiError.NONE
    assert ApiError.of(KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED, KafkaErrorCode.TOPIC_AUTHORIZATION_FAILED.message).message is None
    assert ApiError.of(-1, "a stack trace").message is None
    assert ApiError.of("INVALID_REQUEST", "bad").fields()["error_message"] == "bad"


def test_an_endpoint_serves_a_plugins_api_to_a_real_connection(tmp_path):
    security = KafkaSecurity.from_config({**CONFIG, "kafkasec.state.path": str(tmp_path / "state.db")}, plugins=[ServesDescribeConfigs()])
    add_users(security, {"admin": "admin-secret"}, iterations=4096)

    async def scenario(endpoint):
        async with await logged_in(endpoint, "admin") as connection:
            versions = await connection.request(wire.build(wire.request_schema(ApiKey.API_VERSIONS, 3),
                                                           client_software_name="t", client_software_version="1"))
            assert ApiKey.DESCRIBE_CONFIGS in {int(api.api_key) for api in versions.api_keys}
            body = wire.build(
                wire.request_schema(ApiKey.DESCRIBE_CONFIGS, 4),
                resources=(wire.build(wire.item_type(wire.request_schema(ApiKey.DESCRIBE_CONFIGS, 4), "resources"),
                                      resource_type=2, resource_name="orders", configuration_keys=None),),
                include_synonyms=False, include_documentation=False,
            )
            response = await connection.request(body)
            assert [(r.resource_name, int(r.error_code)) for r in response.results] == [("orders", 0)]

    with security, serving(security) as endpoint:
        run(scenario(endpoint))
