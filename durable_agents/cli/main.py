"""`agent`: start, follow and answer `AgentWorkflow` runs from the command line.

    agent run "What is 17 * 25?"          start a run and follow it live
    agent watch ID                        follow a run (running or finished)
    agent pending ID                      what waits for a person
    agent approve ID CALL / reject / reply
    agent status ID / result ID
    agent chat SESSION                    talk with a SessionWorkflow, turn by turn
    agent eval SUITE.yaml                 run a suite of scenarios, score and chart them
    agent mcp [--http --port N]           serve the agents to MCP clients
    agent a2a [--port N]                  serve the agents over A2A
    agent serve [--host H] [--port N]     the HTTP API (SSE), AG-UI and the web console
    agent token create NAME --roles R     a principal's token for the servers

Entry point of the `agent` console script (`cli.main:main`) and of `python -m cli.main`.
Errors are one line on stderr (`agent: ...`) with a non-zero exit code, never a traceback
(set AGENT_DEBUG=1 to get one).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, NoReturn

from temporalio.service import RPCError

from durable_agents.cli import (
    audit,
    chat,
    commands,
    decisions,
    definitions,
    replay,
    steering,
    tokens,
)
from durable_agents.cli.errors import CLI_ERROR, DETACHED, CliError
from durable_agents.cli.evaluation import command as evaluation
from durable_agents.client.connection import Target, explain_rpc, with_payload_stores
from durable_agents.contracts.workflow_ids import id_problem
from durable_agents.errors import AgentError
from durable_agents.runtime.extras import MissingExtra
from durable_agents.runtime.settings import EnvironmentSettings, SettingsError
from durable_agents.servers.a2a_gateway import command as a2a_gateway
from durable_agents.servers.http_api import serve as http_serve
from durable_agents.servers.mcp_gateway import command as mcp_gateway

Handler = Callable[[argparse.Namespace, commands.Context], Coroutine[Any, Any, int]]

EPILOG = """\
exit codes: 0 answered (completed, stopped_by_tool) or done · 1 run failed or timed out ·
2 stopped at a limit (max_iterations, empty_answer, repeated_calls, token_budget, cost_budget) ·
3 cancelled or terminated · 4 the command failed (unreachable server, unknown run, refused
decision, bad arguments) · 130 detached with Ctrl-C (the run goes on)"""


class Parser(argparse.ArgumentParser):
    """argparse, but usage errors exit with 4 so that 2 keeps meaning "stopped at a limit", and
    no option may be abbreviated: a typo such as `--max-iteration 3` is an error, not a silent
    prefix match. Subcommand parsers are built from this class too (argparse reuses the parent's
    class), so the rule holds on every parser."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(CLI_ERROR, f"{self.prog}: error: {message}\n")


def _user() -> str | None:
    try:
        return getpass.getuser()
    except Exception:  # no user name in this environment: decisions are recorded without one
        return None


def _add_global_options(parser: argparse.ArgumentParser, *, in_subcommand: bool) -> None:
    """The connection and output options, accepted before or after the subcommand. In the
    subcommands they default to SUPPRESS so they only override what was given before."""

    def default(value: object) -> object:
        return argparse.SUPPRESS if in_subcommand else value

    group = parser.add_argument_group("connection and output")
    group.add_argument(
        "--address",
        default=default(None),
        help="Temporal server (env TEMPORAL_ADDRESS or the TEMPORAL_PROFILE's address, "
        "default localhost:7233)",
    )
    group.add_argument(
        "--namespace",
        default=default(None),
        help="namespace (env TEMPORAL_NAMESPACE or the TEMPORAL_PROFILE's, default 'default')",
    )
    group.add_argument(
        "--task-queue",
        default=default(None),
        help="task queue new runs go to (env TASK_QUEUE, default 'agents')",
    )
    group.add_argument(
        "--json",
        action="store_true",
        default=default(False),
        help="machine-readable JSON on stdout (progress, if any, goes to stderr)",
    )


def _add_follow_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-input",
        action="store_true",
        help="never ask on stdin; print the commands that answer pending requests instead",
    )
    parser.add_argument(
        "--by", default=_user(), help="who decides, recorded with each decision (default: $USER)"
    )


def new_id(value: str) -> str:
    """The id a run or session starts under, checked as the servers check it
    (`contracts.workflow_ids`): a usage error naming the problem, before anything starts."""
    problem = id_problem(value)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return value


def build_parser() -> argparse.ArgumentParser:
    """The `agent` command line."""
    common = Parser(add_help=False)
    _add_global_options(common, in_subcommand=True)
    parser = Parser(
        prog="agent",
        description="Start, follow and answer tool-calling agent runs (AgentWorkflow).",
        epilog=EPILOG,
    )
    _add_global_options(parser, in_subcommand=False)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler: Handler, help_text: str) -> argparse.ArgumentParser:
        child: argparse.ArgumentParser = sub.add_parser(
            name, parents=[common], help=help_text, description=help_text, epilog=EPILOG
        )
        child.set_defaults(handler=handler)
        return child

    run = command("run", commands.run, "start a run and follow it live")
    run.add_argument("prompt", help="the request")
    run.add_argument(
        "--tool",
        action="append",
        metavar="NAME",
        help="allow this tool (repeat for more; default: every registered tool)",
    )
    run.add_argument(
        "--agent",
        metavar="NAME",
        help="run as this agent of the catalog (its instructions, tools, model, limits; the "
        "other options go on top); default: the worker's defaults",
    )
    run.add_argument("--model", help="model name (default: the worker's MODEL)")
    run.add_argument("--max-iterations", type=int, metavar="N", help="most model calls")
    run.add_argument(
        "--model-call",
        choices=["activity", "local"],
        help="each model call an activity (the default), or a local activity in the worker: "
        "fewer server round trips, no live text (docs/how-to/real-models.md)",
    )
    run.add_argument(
        "--output-schema",
        metavar="FILE",
        help="a JSON Schema file: the answer must match it; prints the validated JSON",
    )
    run.add_argument(
        "--id",
        type=new_id,
        metavar="WORKFLOW_ID",
        help="workflow id (default: agent-<random>); letters, digits and -_.:/@",
    )
    run.add_argument(
        "--input-json",
        metavar="JSON",
        help="more AgentInput fields, e.g. '{\"max_total_tokens\": 5000}' (or @file.json)",
    )
    run.add_argument("--no-wait", action="store_true", help="start it and return at once")
    _add_follow_options(run)

    watch = command("watch", commands.watch, "follow a run live (or replay a finished one)")
    watch.add_argument("workflow_id", metavar="ID")
    _add_follow_options(watch)

    pending = command("pending", commands.pending, "list the calls waiting for a person")
    pending.add_argument("workflow_id", metavar="ID")
    pending.add_argument(
        "--full", action="store_true", help="show every argument in full (long ones are cut)"
    )

    approve = command("approve", decisions.approve, "approve a pending call ('*': all of them)")
    approve.add_argument("workflow_id", metavar="ID")
    approve.add_argument("call", metavar="CALL", help="call id, or '*' for every pending approval")
    approve.add_argument("--args", metavar="JSON", help="run it with these arguments instead")
    approve.add_argument(
        "--digest",
        metavar="HEX",
        help="the args_digest `agent pending` shows (at least 8 hex digits): approve only if "
        "the call still has exactly those arguments",
    )
    approve.add_argument("--by", default=_user(), help="who approves (default: $USER)")
    approve.add_argument("--comment", help="a note kept with the decision")

    reject = command("reject", decisions.reject, "reject a pending call ('*': all of them)")
    reject.add_argument("workflow_id", metavar="ID")
    reject.add_argument("call", metavar="CALL", help="call id, or '*' for every pending approval")
    reject.add_argument("--reason", required=True, help="what the model is told")
    reject.add_argument("--by", default=_user(), help="who rejects (default: $USER)")

    steer_cmd = command(
        "steer", steering.steer, "tell a running agent something it reads at its next call"
    )
    steer_cmd.add_argument("workflow_id", metavar="ID", help="a run, or a session")
    steer_cmd.add_argument("text", help="the message")
    steer_cmd.add_argument("--by", default=_user(), help="who sends it (default: $USER)")
    reply = command("reply", decisions.reply, "answer an ask_user question")
    reply.add_argument("workflow_id", metavar="ID")
    reply.add_argument("call", metavar="CALL", help="call id, or '*' for the only open question")
    reply.add_argument("text", help="the answer")
    reply.add_argument("--by", default=_user(), help="who answers (default: $USER)")

    status = command("status", commands.status, "where a run is: turn, tokens, pending, steps")
    status.add_argument("workflow_id", metavar="ID")

    result = command("result", commands.result, "wait for a run's answer")
    result.add_argument("workflow_id", metavar="ID")

    chat_cmd = command("chat", chat.chat, "talk with an agent session (starts it if needed)")
    chat_cmd.add_argument("session_id", type=new_id, metavar="SESSION")
    _add_follow_options(chat_cmd)

    evaluate = command("eval", evaluation.evaluate, "run a suite of scenarios and score them")
    evaluation.add_arguments(evaluate)

    mcp = command("mcp", mcp_gateway.mcp, "serve the agents to MCP clients (stdio, or --http)")
    mcp_gateway.add_arguments(mcp)
    a2a = command("a2a", a2a_gateway.a2a, "serve the agents over the A2A protocol")
    a2a_gateway.add_arguments(a2a)
    serve = command("serve", http_serve.serve, "serve the HTTP API, AG-UI and the web console")
    http_serve.add_arguments(serve)
    token_cmd = command("token", tokens.token, "make tokens for the servers' principals")
    tokens.add_arguments(token_cmd)
    audit_cmd = command(
        "audit", audit.audit, "every decision people made, from the runs' histories"
    )
    audit.add_arguments(audit_cmd)
    replay_cmd = command(
        "replay", replay.replay, "replay run histories against this code (files or downloaded)"
    )
    replay.add_arguments(replay_cmd)
    diff_cmd = command(
        "diff", definitions.diff, "what differs between the agent definitions of two runs"
    )
    definitions.add_arguments(diff_cmd)
    return parser


def _tolerant_output() -> None:
    """Never die on a character the terminal's encoding lacks (✓, →, …)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")


def run_cli(argv: Sequence[str] | None = None) -> int:
    """Parse, run the subcommand, and turn every expected failure into one line on stderr.
    Returns the exit code (argparse still exits by itself for --help and usage errors)."""
    _tolerant_output()
    args = build_parser().parse_args(argv)
    handler: Handler = args.handler
    try:
        target = Target.resolve(
            EnvironmentSettings.from_env(), args.address, args.namespace, args.task_queue
        )
        ctx = commands.Context(target, json=args.json)
        return asyncio.run(with_payload_stores(handler(args, ctx)))
    except (SettingsError, MissingExtra) as error:
        message, code = str(error), CLI_ERROR
    except CliError as error:
        message, code = str(error), error.code
    except AgentError as error:  # the client's typed errors (`durable_agents.errors`)
        message, code = str(error), CLI_ERROR
    except RPCError as error:
        message, code = str(explain_rpc(error)), CLI_ERROR
    except KeyboardInterrupt:
        message, code = "interrupted", DETACHED
    except BrokenPipeError:
        return CLI_ERROR
    except Exception as error:
        if os.environ.get("AGENT_DEBUG"):
            raise
        first = (str(error).splitlines() or [""])[0][:300]
        message = f"unexpected {type(error).__name__}: {first} (AGENT_DEBUG=1 shows a traceback)"
        code = CLI_ERROR
    print(f"agent: {message}", file=sys.stderr, flush=True)
    return code


def main() -> NoReturn:
    """The console script: run, flush, and leave with `os._exit`.

    Skipping interpreter finalization is deliberate: the Temporal client's Rust threads can
    outlive the event loop and abort a finishing interpreter ("Fatal Python error:
    PyGILState_Release", temporalio/sdk-python#300), which would turn exit code 0 into 134.
    """
    try:
        code = run_cli()
    except SystemExit as done:  # argparse: --help, usage errors
        code = done.code if isinstance(done.code, int) else CLI_ERROR if done.code else 0
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BrokenPipeError, ValueError):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
