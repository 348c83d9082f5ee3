"""``kafkasec completion bash``: a bash completion script for the command, made from its parser.

Install it with ``source <(kafkasec completion bash)`` (or save it under
``/etc/bash_completion.d/``; zsh users run ``autoload bashcompinit && bashcompinit`` first). It
completes the command names, each command's options and the ``acls`` subcommands, from the same
parser that reads the command line, so it never lists an option that does not exist.
"""

from __future__ import annotations

import argparse
import shlex

from kafkasec.cli.options import global_options

SHELLS = ("bash",)


def register(commands) -> None:
    parser = commands.add_parser(
        "completion",
        help="print a shell completion script",
        description="Print a completion script for your shell: source <(kafkasec completion bash).",
        parents=[global_options(argparse.SUPPRESS)],
    )
    parser.add_argument("shell", choices=SHELLS, help="the shell (bash; zsh through bashcompinit)")
    parser.set_defaults(run=run_completion)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return sorted({option for action in parser._actions for option in action.option_strings if option.startswith("--")})


def bash_script(parser: argparse.ArgumentParser) -> str:
    """The completion function for ``parser``'s command tree."""
    commands = _subparsers(parser)
    cases = []
    for name, command in sorted(commands.items()):
        words = _options(command) + sorted(_subparsers(command))
        cases.append(f"        {shlex.quote(name)}) words={shlex.quote(' '.join(words))} ;;")
    top = " ".join([*sorted(commands), *_options(parser)])
    return "\n".join([
        "# kafkasec bash completion: source <(kafkasec completion bash)",
        "_kafkasec() {",
        '    local current="${COMP_WORDS[COMP_CWORD]}" command="" words="" index',
        "    for ((index = 1; index < COMP_CWORD; index++)); do",
        '        case "${COMP_WORDS[index]}" in',
        f"            {'|'.join(sorted(commands))}) command=\"${{COMP_WORDS[index]}}\"; break ;;",
        "        esac",
        "    done",
        '    case "$command" in',
        *cases,
        f"        *) words={shlex.quote(top)} ;;",
        "    esac",
        '    COMPREPLY=($(compgen -W "$words" -- "$current"))',
        "}",
        "complete -o default -F _kafkasec kafkasec",
        "",
    ])


def run_completion(args) -> int:
    from kafkasec.cli import build_parser  # the whole tree, this command included

    print(bash_script(build_parser()), end="")
    return 0
