"""``kafkasec serve``: run the Kafka-protocol endpoint on the state file until interrupted.

Kafka clients log in with SCRAM (users from ``kafkasec scram``, or delegation tokens), and
describe and administer ACLs, SCRAM credentials and tokens; topics and groups come from the
``--catalogue`` JSON file. With ``--controller-port`` the process runs two endpoints, a broker
for clients and a controller on its own listener, and the broker forwards admin writes to the
controller in envelopes, logging in as ``--broker-user`` (who needs CLUSTER_ACTION on the
cluster, e.g. as a super user). docs/embedding.md walks through the code.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from kafkasec.cli.config import open_security
from kafkasec.cli.options import UsageError, global_options
from kafkasec.settings import CONTROLLER_LISTENER_NAMES

CONTROLLER_LISTENER = "CONTROLLER"


def register(commands) -> None:
    parser = commands.add_parser(
        "serve",
        help="run the Kafka-protocol security endpoint",
        description="Serve SASL/SCRAM logins, Metadata, DescribeCluster, FindCoordinator, DescribeGroups and "
        "the ACL, SCRAM and delegation-token admin APIs to Kafka clients, from the state file.",
        parents=[global_options(argparse.SUPPRESS)],
    )
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=9092, help="the port to listen on (default: 9092; 0: any free port)")
    parser.add_argument("--node-id", type=int, default=1, help="this node's id (default: 1)")
    parser.add_argument("--cluster-id", default="kafkasec-cluster", help="the cluster id clients are told")
    parser.add_argument("--catalogue", metavar="FILE", help='a JSON file {"topics": [...], "groups": [...]}')
    parser.add_argument(
        "--security-protocol",
        choices=("SASL_PLAINTEXT", "PLAINTEXT"),
        default="SASL_PLAINTEXT",
        help="SASL_PLAINTEXT (SCRAM logins; the default) or PLAINTEXT (everyone is User:ANONYMOUS)",
    )
    parser.add_argument("--controller-port", type=int, help="also run a controller on this port and forward admin writes to it")
    parser.add_argument("--broker-user", help="the SCRAM user the broker logs in to the controller as")
    parser.add_argument("--broker-password-file", metavar="FILE", help="a file whose first line is that user's password")
    parser.set_defaults(run=run)


def _password(path: str) -> str:
    with open(path, encoding="utf-8") as file:
        return file.readline().rstrip("\r\n")


def _check(args) -> None:
    if args.controller_port is None and (args.broker_user or args.broker_password_file):
        raise UsageError("--broker-user and --broker-password-file go with --controller-port")
    if args.controller_port is not None and not (args.broker_user and args.broker_password_file):
        raise UsageError("--controller-port needs --broker-user and --broker-password-file")


async def _serve(args, security, catalogue) -> None:
    from kafkasec.server import ControllerLink, Endpoint

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signal_number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signal_number, stop.set)
    node = {"node_id": args.node_id, "cluster_id": args.cluster_id}
    started = []

    async def start(endpoint):
        started.append(await endpoint.start())
        print(f"kafkasec serve: {endpoint.listener_name} listening on {endpoint.bootstrap}", flush=True)
        return endpoint

    try:
        link = None
        if args.controller_port is not None:
            # The controller first: the broker's link needs its port, which may be a free one.
            controller = await start(Endpoint(security, catalogue, host=args.host, port=args.controller_port,
                                              listener_name=CONTROLLER_LISTENER, **node))
            link = ControllerLink(args.host, controller.port, username=args.broker_user,
                                  password=_password(args.broker_password_file))
        await start(Endpoint(security, catalogue, host=args.host, port=args.port, security_protocol=args.security_protocol,
                             controller=link, **node))
        await stop.wait()
    finally:
        for endpoint in reversed(started):
            await endpoint.stop()


def run(args) -> int:
    # The endpoint needs the 'wire' extra; the other commands must work without it.
    from kafkasec.server import Catalogue

    _check(args)
    catalogue = Catalogue.from_file(args.catalogue) if args.catalogue else Catalogue()
    overrides = {CONTROLLER_LISTENER_NAMES: CONTROLLER_LISTENER} if args.controller_port is not None else {}
    with open_security(args, overrides=overrides) as security:
        asyncio.run(_serve(args, security, catalogue))
    print("kafkasec serve: stopped", file=sys.stderr)
    return 0
