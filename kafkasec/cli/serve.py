"""``kafkasec serve``: run the Kafka-protocol endpoint on the security state until interrupted.

Kafka clients log in with SCRAM (users from ``kafkasec scram``, or delegation tokens), and
describe and administer ACLs, SCRAM credentials and tokens; topics and groups come from the
``--catalogue`` JSON file. Every process follows the security log of its state (a SQLite file,
or PostgreSQL with ``kafkasec.state.url``), so any number of them agree on every change, and
the other commands may change the state while they run.

A cluster, as in KRaft (``--process-roles``): a ``controller`` process serves the CONTROLLER
listener on ``--port`` and writes; ``broker`` processes given ``--controller-bootstrap-server``
forward admin writes to it in envelopes (KIP-590), logging in as ``--broker-user`` (who needs
CLUSTER_ACTION on the cluster, e.g. as a super user). A broker without a controller writes
itself; ``--controller-port`` runs a controller inside the broker's process.
docs/cluster.md shows a cluster; docs/embedding.md walks through the code.

A gateway (``--upstream HOST:PORT[,HOST:PORT...]``, or ``kafkasec.upstream.bootstrap.servers``):
in front of a Kafka-compatible broker without security, every request is authorized as Kafka
authorizes it and what may go on is carried to that broker (``kafkasec.server.gateway``);
``--upstream-config FILE`` holds how the gateway logs in upstream, in the client properties
``--command-config`` reads. docs/gateway.md shows one.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import socket
import sys

from kafkasec.cli.config import open_security
from kafkasec.cli.log_format import LOG_FORMATS, configure_logging
from kafkasec.cli.options import CommandError, UsageError, global_options
from kafkasec.settings import CONTROLLER_LISTENER_NAMES, SECURITY_PROTOCOLS, parse_count, parse_milliseconds

CONTROLLER_LISTENER = "CONTROLLER"
SHUTDOWN_TIMEOUT_MS = "kafkasec.server.shutdown.timeout.ms"
DEFAULT_SHUTDOWN_TIMEOUT_MS = 30_000
SWITCH_INTERVAL_S = 0.001
BROKER, CONTROLLER = "broker", "controller"


def register(commands) -> None:
    parser = commands.add_parser(
        "serve",
        help="run the Kafka-protocol security endpoint",
        description="Serve SASL/SCRAM logins, Metadata, DescribeCluster, FindCoordinator, DescribeGroups and "
        "the ACL, SCRAM and delegation-token admin APIs to Kafka clients, from the state file.",
        parents=[global_options(argparse.SUPPRESS)],
    )
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None,
                        help="the port to listen on (default: 9092; 0: any free port); or set Kafka's 'listeners'")
    parser.add_argument("--node-id", type=int, default=1, help="this node's id (default: 1)")
    parser.add_argument("--cluster-id", default="kafkasec-cluster", help="the cluster id clients are told")
    parser.add_argument("--catalogue", metavar="FILE", help='a JSON file {"topics": [...], "groups": [...]}')
    parser.add_argument(
        "--security-protocol",
        choices=SECURITY_PROTOCOLS,
        default="SASL_PLAINTEXT",
        help="SASL_PLAINTEXT (SASL logins; the default), PLAINTEXT (everyone is User:ANONYMOUS), SSL (the "
             "principal from the client certificate) or SASL_SSL; TLS from the ssl.* settings of the config file",
    )
    parser.add_argument(
        "--process-roles",
        choices=(BROKER, CONTROLLER),
        default=BROKER,
        help="broker (the default: clients' listener) or controller (the CONTROLLER listener on --port, "
        "which brokers forward admin writes to)",
    )
    parser.add_argument(
        "--controller-bootstrap-server",
        metavar="HOST:PORT",
        help="a broker forwards admin writes to the controller listening there",
    )
    parser.add_argument("--controller-port", type=int, help="also run a controller in this process, on this port, and forward admin writes to it")
    parser.add_argument("--broker-user", help="the SCRAM user the broker logs in to the controller as")
    parser.add_argument(
        "--broker-mechanism",
        choices=("SCRAM-SHA-256", "SCRAM-SHA-512"),
        default="SCRAM-SHA-512",
        help="the SCRAM mechanism of that login (default: SCRAM-SHA-512; the user needs a credential for it)",
    )
    parser.add_argument(
        "--log-level",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        default="INFO",
        help="what goes to stderr (default: INFO: listeners, refused logins, closed connections, the security log)",
    )
    parser.add_argument("--log-format", choices=LOG_FORMATS, default="text",
                        help="text lines (the default) or one JSON object a line, for a log pipeline")
    parser.add_argument("--broker-password-file", metavar="FILE", help="a file whose first line is that user's password")
    parser.add_argument(
        "--upstream",
        metavar="HOST:PORT[,HOST:PORT...]",
        help="be a gateway in front of the Kafka-compatible broker(s) there (kafkasec.upstream.bootstrap.servers): "
        "every request is authorized, and what may go on is carried to them",
    )
    parser.add_argument(
        "--upstream-config",
        metavar="FILE",
        help="how the gateway connects and logs in upstream: Kafka client properties (security.protocol, sasl.*, "
        "ssl.*), as --command-config reads them",
    )
    parser.set_defaults(run=run)


def _password(path: str) -> str:
    with open(path, encoding="utf-8") as file:
        return file.readline().rstrip("\r\n")


def _controller_address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--controller-bootstrap-server takes HOST:PORT, not {text!r}")
    return host.strip("[]"), int(port)


def _check_listeners(args, config) -> None:
    from kafkasec.server.listeners import parse_listeners

    try:
        listeners = parse_listeners(config)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if listeners and (args.port is not None or args.security_protocol != "SASL_PLAINTEXT"):
        raise UsageError("the 'listeners' setting names the listeners: --port and --security-protocol go without it")
    if listeners and args.process_roles == CONTROLLER:
        raise UsageError("a controller listens on --host and --port; 'listeners' are a broker's")


def _check(args) -> None:
    if getattr(args, "bootstrap_server", None) is not None:
        raise UsageError("serve is a cluster's node: --bootstrap-server is for the commands that administer one "
                         "(a broker finds its controller with --controller-bootstrap-server)")
    forwards = args.controller_port is not None or args.controller_bootstrap_server is not None
    if args.controller_port is not None and args.controller_bootstrap_server is not None:
        raise UsageError("--controller-port and --controller-bootstrap-server exclude each other")
    if args.process_roles == CONTROLLER and forwards:
        raise UsageError("a controller forwards to nobody: --controller-port and --controller-bootstrap-server go with broker")
    if not forwards and (args.broker_user or args.broker_password_file):
        raise UsageError("--broker-user and --broker-password-file go with --controller-port or --controller-bootstrap-server")
    if forwards and not (args.broker_user and args.broker_password_file):
        raise UsageError("forwarding to a controller needs --broker-user and --broker-password-file")
    if args.controller_bootstrap_server is not None:
        _controller_address(args.controller_bootstrap_server)
    if args.upstream_config is not None and args.upstream is None:
        raise UsageError("--upstream-config goes with --upstream")
    if args.upstream is not None and (forwards or args.process_roles == CONTROLLER or args.catalogue):
        raise UsageError("a gateway (--upstream) answers from the broker behind it: no controller, no --catalogue")
    if args.upstream is not None:
        from kafkasec.client.settings import parse_bootstrap_servers

        try:
            parse_bootstrap_servers(args.upstream)
        except ValueError as error:
            raise UsageError(f"--upstream: {error}") from None


def _upstream_overrides(args) -> dict[str, str]:
    """--upstream and --upstream-config as the kafkasec.upstream.* settings."""
    from kafkasec.cli.config import read_properties
    from kafkasec.server.gateway import UPSTREAM_BOOTSTRAP_SERVERS, UPSTREAM_PREFIX

    overrides = {}
    if args.upstream_config is not None:
        overrides = {UPSTREAM_PREFIX + key: value for key, value in read_properties(args.upstream_config).items()}
    if args.upstream is not None:
        overrides[UPSTREAM_BOOTSTRAP_SERVERS] = args.upstream
    return overrides


async def _serve(args, security, catalogue) -> None:
    from kafkasec.server import ControllerLink, Endpoint
    from kafkasec.server.certificates import reload_listener_certificates
    from kafkasec.server.event_loop import loop_name
    from kafkasec.server.gateway import GatewayEndpoint
    from kafkasec.server.heap import freeze_startup_heap, tune_allocator, tune_collector
    from kafkasec.server.listeners import Listener, parse_listeners
    from kafkasec.server.operations_http import METRICS_PORT

    stop, stop_now = asyncio.Event(), asyncio.Event()
    loop = asyncio.get_running_loop()
    logging.getLogger("kafkasec.server").info("event loop: %s", loop_name(loop))
    tune_allocator(security.config)
    tune_collector(security.config)

    def on_stop_signal() -> None:
        # The first SIGTERM (or ^C) stops gracefully: no new connection or request, and what
        # is in hand is answered; the second stops at once.
        (stop_now if stop.is_set() else stop).set()

    for signal_number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signal_number, on_stop_signal)
    # SIGHUP, as for most daemons: the TLS listeners re-read their key, certificate and truststore files.
    loop.add_signal_handler(signal.SIGHUP, reload_listener_certificates, "SIGHUP")
    node = {"node_id": args.node_id, "cluster_id": args.cluster_id}
    started: list = []
    metrics = operations = None
    if security.config.get(METRICS_PORT) is not None:
        metrics, operations = _operations(security, started)
        node["metrics"] = metrics

    async def start(endpoint):
        started.append(await endpoint.start())
        print(f"kafkasec serve: {endpoint.listener_name} listening on {endpoint.bootstrap}", flush=True)
        return endpoint

    try:
        link = None
        if args.process_roles == CONTROLLER:
            await start(Endpoint(security, catalogue, host=args.host, port=9092 if args.port is None else args.port,
                                 listener_name=CONTROLLER_LISTENER, **node))
        else:
            if args.controller_port is not None:
                # The controller first: the broker's link needs its port, which may be a free one.
                controller = await start(Endpoint(security, catalogue, host=args.host, port=args.controller_port,
                                                  listener_name=CONTROLLER_LISTENER, **node))
                link = ControllerLink(args.host, controller.port, mechanism=args.broker_mechanism, username=args.broker_user,
                                      password=_password(args.broker_password_file))
            elif args.controller_bootstrap_server is not None:
                controller_host, controller_port = _controller_address(args.controller_bootstrap_server)
                link = ControllerLink(controller_host, controller_port, mechanism=args.broker_mechanism,
                                      username=args.broker_user,
                                      password=_password(args.broker_password_file))
            listeners = parse_listeners(security.config)
            if not listeners:  # --host, --port and --security-protocol make the one listener
                listeners = [Listener(args.security_protocol, args.host, 9092 if args.port is None else args.port,
                                      args.security_protocol)]
            gateway = await _gateway(security)
            for listener in listeners:
                where = {"host": listener.host, "port": listener.port, "listener_name": listener.name,
                         "security_protocol": listener.security_protocol, **node}
                if gateway is None:
                    await start(Endpoint(security, catalogue, controller=link, **where))
                    continue
                bootstrap = await start(GatewayEndpoint(security, gateway, **where))
                for node_id, broker in sorted(bootstrap.broker_listeners.items()):
                    print(f"kafkasec serve: {listener.name} upstream broker {node_id} at {broker.bootstrap}", flush=True)
        freeze_startup_heap(security.config)
        await stop.wait()
        await _stop_gracefully(started, parse_milliseconds(security.config, SHUTDOWN_TIMEOUT_MS, DEFAULT_SHUTDOWN_TIMEOUT_MS),
                               stop_now)
    finally:
        for endpoint in reversed(started):
            await endpoint.stop()
        if operations is not None:
            operations.stop()
        if metrics is not None:
            security.authorization.observe_results(None)


async def _stop_gracefully(endpoints, grace_ms: int, stop_now: asyncio.Event) -> None:
    """Every listener stops taking connections and requests, and each connection is closed
    once what it has in hand is answered, within ``grace_ms``; sooner on ``stop_now``."""
    stopping = asyncio.ensure_future(asyncio.gather(*(endpoint.stop(grace_ms=grace_ms) for endpoint in endpoints)))
    interrupted = asyncio.ensure_future(stop_now.wait())
    await asyncio.wait([stopping, interrupted], return_when=asyncio.FIRST_COMPLETED)
    interrupted.cancel()
    if not stopping.done():
        logging.getLogger("kafkasec.server").warning("stopping at once (a second signal)")
        stopping.cancel()
        await asyncio.gather(stopping, return_exceptions=True)


def _operations(security, endpoints):
    """The metrics of this process, observing every authorization, and the HTTP port that
    serves them with /healthz and /readyz (kafkasec.metrics.port)."""
    from kafkasec.server.gateway import UPSTREAM_BOOTSTRAP_SERVERS, upstream_settings
    from kafkasec.server.metrics import ServerMetrics
    from kafkasec.server.operations_http import METRICS_HOST, METRICS_PORT, OperationsServer

    config = security.config
    try:
        metrics = ServerMetrics.from_config(security)
        port = parse_count(config, METRICS_PORT, 0, unit="port")
        # The upstream's addresses as the gateway reads them (HOST:PORT, IPv6 in brackets).
        upstream = upstream_settings(config).bootstrap_servers if config.get(UPSTREAM_BOOTSTRAP_SERVERS) else []
    except ValueError as error:
        raise UsageError(str(error)) from None
    security.authorization.observe_results(metrics.authorized)
    readiness = [
        ("security state loaded and followed", lambda: security.ready),
        ("listeners open", lambda: bool(endpoints) and all(endpoint.listening for endpoint in endpoints)),
    ]
    if upstream:
        readiness.append(("upstream answers", lambda: _any_answers(upstream)))
    operations = OperationsServer(metrics, readiness, host=str(config.get(METRICS_HOST) or "127.0.0.1"), port=port)
    try:
        operations.start()
    except OSError as error:
        raise UsageError(f"{METRICS_PORT}={port}: {error}") from None
    print(f"kafkasec serve: metrics on http://{operations.host}:{operations.port}/metrics", flush=True)
    return metrics, operations


def _any_answers(addresses) -> bool:
    """Whether one of ``addresses`` ((host, port) pairs) accepts a TCP connection within a second."""
    for address in addresses:
        try:
            socket.create_connection(address, timeout=1).close()
            return True
        except OSError:
            continue
    return False


async def _gateway(security):
    """The gateway of ``security``'s kafkasec.upstream.* settings, started; None without them."""
    from kafkasec.server.gateway import UPSTREAM_BOOTSTRAP_SERVERS, Gateway
    from kafkasec.server.upstream import UpstreamError

    if UPSTREAM_BOOTSTRAP_SERVERS not in security.config:
        return None
    try:
        gateway = Gateway(security)
    except ValueError as error:
        raise UsageError(str(error)) from None
    try:
        return await gateway.start()
    except UpstreamError as error:
        raise UsageError(f"the upstream does not answer: {error}") from None


def run(args) -> int:
    # The endpoint needs the 'wire' extra; the other commands must work without it.
    try:
        from kafkasec.server import Catalogue
        from kafkasec.server.event_loop import loop_factory, run as run_on_loop
    except ImportError as error:
        if error.name != "kio":
            raise
        raise CommandError("serve needs the 'wire' extra: pip install 'kafkasec[wire]'") from None

    _check(args)
    # An operator sees refused logins, closed connections and the follower's state; secrets
    # never reach these records (tests/server/test_server_hostile_clients.py).
    configure_logging(args.log_level, args.log_format)
    catalogue = Catalogue.from_file(args.catalogue) if args.catalogue else Catalogue()
    serves_controller = args.controller_port is not None or args.process_roles == CONTROLLER
    overrides = {CONTROLLER_LISTENER_NAMES: CONTROLLER_LISTENER} if serves_controller else {}
    overrides.update(_upstream_overrides(args))
    with open_security(args, writes=True, overrides=overrides) as security:
        _check_listeners(args, security.config)
        try:
            new_loop = loop_factory(security.config)
        except ValueError as error:
            raise UsageError(str(error)) from None
        # The handler threads are CPU-bound at times (a large Metadata answer); a shorter
        # switch interval hands the interpreter lock back to the loop and the logins sooner.
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        run_on_loop(_serve(args, security, catalogue), new_loop)
    print("kafkasec serve: stopped", file=sys.stderr)
    return 0
