"""The `agent` command line's parsers: no option may be abbreviated (issue 31, item 15), so a
typo such as `--max-iteration 3` is a usage error (exit 4) instead of a silent prefix match."""

from __future__ import annotations

import argparse

import pytest

from durable_agents.cli.errors import CLI_ERROR
from durable_agents.cli.main import build_parser


def all_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """`parser` and every subcommand parser under it, however deep."""
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found += all_parsers(child)
    return found


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "x", "--max-iteration", "3"],
        ["run", "x", "--max-iter=3"],
        ["--addr", "localhost:7233", "status", "r1"],
        ["approve", "r1", "c1", "--dig", "abcdef12"],
        ["pending", "r1", "--ful"],
    ],
)
def test_an_abbreviated_option_is_a_usage_error(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(argv)
    assert exited.value.code == CLI_ERROR
    assert "error:" in capsys.readouterr().err


def test_the_full_option_names_still_parse() -> None:
    args = build_parser().parse_args(["run", "x", "--max-iterations", "3", "--address", "h:1"])
    assert args.max_iterations == 3 and args.address == "h:1"


def test_no_parser_allows_abbreviations() -> None:
    parsers = all_parsers(build_parser())
    assert len(parsers) > 10
    assert [p.prog for p in parsers if p.allow_abbrev] == []
