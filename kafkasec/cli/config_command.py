"""``kafkasec config``: the settings kafkasec and its installed plugins read (``--describe``),
and whether a properties file would be accepted (``--check``)."""

from __future__ import annotations

import argparse
import sys

from kafkasec.cli.config import read_properties
from kafkasec.cli.options import UsageError, option_parents, output_format
from kafkasec.cli.output import write_records
from kafkasec.plugins import make_plugin_manager
from kafkasec.settings import SettingsRegistry

SETTING_FIELDS = ("name", "kind", "default", "owner", "description")


def register(commands) -> None:
    """Add ``config`` to the top-level subparsers."""
    nested = option_parents(argparse.SUPPRESS)
    parser = commands.add_parser(
        "config",
        help="list the settings kafkasec and its plugins read, or check a properties file",
        description="List every setting kafkasec and the installed plugins read (name, kind, default, "
        "owner), or check the --command-config file as KafkaSecurity would at start-up.",
        parents=[nested.global_options, nested.output],
    )
    actions = parser.add_mutually_exclusive_group(required=True)
    actions.add_argument("--describe", action="store_true", help="list every setting")
    actions.add_argument("--check", action="store_true", help="check the --command-config file")
    parser.set_defaults(run=run)


def run(args) -> int:
    registry = SettingsRegistry.from_plugins(make_plugin_manager())
    if args.describe:
        records = [
            {"name": s.name, "kind": s.kind, "default": s.shown_default, "owner": s.owner, "description": s.doc}
            for s in registry.describe()
        ]
        write_records(sys.stdout, SETTING_FIELDS, records, output_format(args))
        return 0
    if not args.config:
        raise UsageError("--check needs --command-config FILE")
    properties = read_properties(args.config)
    registry.check(properties)
    sys.stdout.write(f"{args.config}: {len(properties)} settings, none misspelt or of the wrong kind.\n")
    return 0
