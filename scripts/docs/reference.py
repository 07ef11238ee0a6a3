"""The site's reference pages, generated from the code so they cannot drift (issue 34).

Each function returns one page's Markdown:

- `settings_page`: every field of `durable_agents.runtime.settings.EnvironmentSettings` (its
  environment variable, type, default and docstring);
- `cli_page`: every command of the `agent` parser (`durable_agents.cli.main.build_parser`) with
  its arguments and flags;
- `contract_page`: the workflows' input and result, and every signal, update and query of
  `AgentWorkflow` and `SessionWorkflow` (the handlers temporalio registers), each payload as
  its pydantic model's JSON Schema;
- `events_page`: every event type of the stream (`durable_agents.contracts.events.AgentEvent`);
- `root_page`: BENCHMARKS.md and RELIABILITY.md as site pages.

`scripts/docs/gen_reference.py` writes them into the site at `mkdocs build` time
(mkdocs-gen-files); `tests/test_docs_site.py` checks that each page covers every field, flag,
handler and event, and that the site builds with `--strict`.
"""

from __future__ import annotations

import argparse
import enum
import inspect
import json
import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr, TypeAdapter
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined
from temporalio import workflow

ROOT = Path(__file__).resolve().parent.parent.parent

GENERATED_NOTE = (
    "<!-- Generated from the code by scripts/docs/reference.py at build time: edit the code's "
    "docstrings, not this page. -->\n\n"
)
ROOT_PAGES = {"benchmarks.md": "BENCHMARKS.md", "reliability.md": "RELIABILITY.md"}
"""Site page -> the repository file it shows."""


def page_head(title: str) -> list[str]:
    """The first lines of a generated page: its title and the note that it is generated."""
    return [f"# {title}", "", GENERATED_NOTE.rstrip()]


def cell(text: object) -> str:
    """`text` fit for one Markdown table cell: one line, pipes escaped."""
    return re.sub(r"\s*\n\s*", " ", str(text)).replace("|", "\\|").strip()


def type_name(annotation: Any) -> str:
    """A reader's name for a field's type: `str`, `int or unset`, `"a" or "b"`, `secret`."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin in (typing.Union, types.UnionType):
        names = [type_name(a) for a in args if a is not type(None)]
        optional = len(names) < len(args)
        return " or ".join(names) + (" (optional)" if optional else "")
    if origin is typing.Literal:
        return " or ".join(f"`{value}`" for value in args)
    if origin in (list, tuple, set, frozenset):
        return f"list of {type_name(args[0])}" if args else "list"
    if origin is dict:
        return "object"
    if annotation is SecretStr:
        return "secret string"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return " or ".join(f"`{member.value}`" for member in annotation)
    if isinstance(annotation, type) and issubclass(annotation, Path):
        return "path"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def default_text(field: FieldInfo) -> str:
    """A field's default as a reader writes it; `unset` for none."""
    if field.default_factory is not None:
        value: Any = field.default_factory()  # type: ignore[call-arg]
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if value is None or value == [] or value == {}:
        return "unset"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, enum.Enum):
        value = value.value
    return f"`{value}`"


# -- settings ---------------------------------------------------------------------------------


def settings_fields() -> list[tuple[str, FieldInfo]]:
    """(environment variable, field) for every setting, in the class's order."""
    from durable_agents.runtime.settings import EnvironmentSettings

    return [
        (str(f.validation_alias or name), f) for name, f in EnvironmentSettings.model_fields.items()
    ]


def settings_page() -> str:
    from durable_agents.runtime import settings

    lines = [
        *page_head("Settings"),
        "",
        inspect.cleandoc(settings.__doc__ or ""),
        "",
        "Every variable below is a field of `durable_agents.runtime.settings.EnvironmentSettings`; "
        "the worker, the `agent` CLI and the codec server read the same ones.",
        "",
        "| variable | type | default | meaning |",
        "| --- | --- | --- | --- |",
    ]
    for variable, field in settings_fields():
        lines.append(
            f"| `{variable}` | {cell(type_name(field.annotation))} | {cell(default_text(field))} "
            f"| {cell(field.description or '')} |"
        )
    return "\n".join(lines) + "\n"


# -- the command line -------------------------------------------------------------------------


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def shown_actions(parser: argparse.ArgumentParser, skip: set[str]) -> list[argparse.Action]:
    """The parser's arguments and flags, without help and without those in `skip`."""
    return [
        action
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)
        and not set(action.option_strings) & skip
    ]


def action_row(action: argparse.Action) -> str:
    names = ", ".join(f"`{name}`" for name in action.option_strings)
    names = names or f"`{action.metavar or action.dest}`"
    if action.option_strings and action.nargs != 0:
        names += f" `{action.metavar or action.dest.upper()}`"
    notes = []
    if action.choices is not None and not isinstance(action.choices, dict):
        notes.append("one of " + ", ".join(f"`{c}`" for c in action.choices))
    if isinstance(action, argparse._AppendAction):
        notes.append("repeatable")
    if action.required and action.option_strings:
        notes.append("required")
    if not action.option_strings and action.nargs == "?":
        notes.append("optional")
    text = (action.help or "").replace("%(default)s", str(action.default))
    if notes:
        text += f" ({'; '.join(dict.fromkeys(notes))})"
    return f"| {names} | {cell(text)} |"


def cli_page() -> str:
    from durable_agents.cli.main import build_parser

    parser = build_parser()
    global_actions = shown_actions(parser, set())
    global_flags = {name for action in global_actions for name in action.option_strings}
    lines = [
        *page_head("The `agent` command line"),
        "",
        f"{parser.description}",
        "",
        "How to use it, with real output: [The agent CLI](../cli.md).",
        "",
        "## Options of every command",
        "",
        "Given before or after the command.",
        "",
        "| argument or flag | meaning |",
        "| --- | --- |",
        *(action_row(action) for action in global_actions),
        "",
        "## Exit codes",
        "",
        "```text",
        parser.epilog or "",
        "```",
    ]
    for name, sub in subcommands(parser).items():
        usage = " ".join(sub.format_usage().split())
        lines += [
            "",
            f"## agent {name}",
            "",
            f"{sub.description}",
            "",
            "```text",
            usage,
            "```",
            "",
            "| argument or flag | meaning |",
            "| --- | --- |",
            *(action_row(action) for action in shown_actions(sub, global_flags)),
        ]
    return "\n".join(lines) + "\n"


def cli_commands() -> dict[str, list[str]]:
    """Every command and the arguments and flags it takes (what `cli_page` must show)."""
    from durable_agents.cli.main import build_parser

    parser = build_parser()
    shared = [n for a in shown_actions(parser, set()) for n in a.option_strings]
    out = {"": shared}
    for name, sub in subcommands(parser).items():
        own = shown_actions(sub, set(shared))
        out[name] = [n for a in own for n in a.option_strings]
        out[name] += [str(a.metavar or a.dest) for a in own if not a.option_strings]
    return out


# -- the workflow contract --------------------------------------------------------------------


def schema_fields(model: Any) -> list[tuple[str, str, str, str]]:
    """(name, type, default, description) of each property of a model's JSON Schema."""
    schema = TypeAdapter(model).json_schema(mode="validation")
    defs = schema.get("$defs", {})
    if "$ref" in schema:
        schema = defs[schema["$ref"].split("/")[-1]]
    required = set(schema.get("required", []))
    rows = []
    for name, prop in schema.get("properties", {}).items():
        value = prop.get("default")
        default = "required" if name in required else json.dumps(value)
        if default == "null":
            default = "unset"
        elif isinstance(value, dict) and len(default) > 60:
            default = "each of its fields' defaults"
        rows.append((name, schema_type(prop, defs), default, prop.get("description", "")))
    return rows


def schema_type(prop: dict[str, Any], defs: dict[str, Any]) -> str:
    """A short reading of a JSON Schema property's type."""
    if "$ref" in prop:
        name = prop["$ref"].split("/")[-1]
        target = defs.get(name, {})
        if "enum" in target:
            return " or ".join(f"`{v}`" for v in target["enum"])
        return name
    if "anyOf" in prop:
        kinds = [schema_type(p, defs) for p in prop["anyOf"] if p.get("type") != "null"]
        optional = any(p.get("type") == "null" for p in prop["anyOf"])
        return " or ".join(kinds) + (" or null" if optional else "")
    if "enum" in prop:
        return " or ".join(f"`{v}`" for v in prop["enum"])
    if "const" in prop:
        return f"`{prop['const']}`"
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list of {schema_type(prop.get('items', {}), defs)}"
    if kind == "object" and "additionalProperties" in prop:
        return "object"
    return str(kind)


def model_section(
    title: str, model: Any, level: str = "###", *, with_schema: bool = False
) -> list[str]:
    """A heading, the model's docstring, its fields as a table (read from its JSON Schema),
    and with `with_schema` the whole JSON Schema, folded."""
    name = model.__name__ if isinstance(model, type) else str(model)
    name = re.sub(r"durable_agents\.contracts\.\w+\.", "", name)
    doc = inspect.cleandoc(getattr(model, "__doc__", "") or "") if isinstance(model, type) else ""
    schema = json.dumps(TypeAdapter(model).json_schema(mode="validation"), indent=2)
    lines = [f"{level} {title}", "", f"`{name}`" + (f": {doc}" if doc else ""), ""]
    is_model = isinstance(model, type) and issubclass(model, BaseModel)
    fields = schema_fields(model) if is_model else []
    if fields:
        lines += ["| field | type | default | meaning |", "| --- | --- | --- | --- |"]
        lines += [f"| `{n}` | {cell(t)} | {cell(d)} | {cell(m)} |" for n, t, d, m in fields]
        lines.append("")
    if not with_schema:
        return lines
    lines += [
        '??? note "JSON Schema"',
        "",
        "    ```json",
        *("    " + line for line in schema.splitlines()),
        "    ```",
        "",
    ]
    return lines


def workflow_contracts() -> dict[str, dict[str, Any]]:
    """Per workflow: its class, input and result models, and the models of its handlers'
    payloads (None: no input). The handler names come from temporalio's own reading of the
    class, so a new handler without an entry here is caught by the test."""
    from durable_agents.contracts.agent_input import AgentInput
    from durable_agents.contracts.agent_result import AgentResult
    from durable_agents.contracts.agents import ChildPending
    from durable_agents.contracts.approvals import (
        ApproveSignal,
        DecideUpdate,
        RejectSignal,
        ReplySignal,
    )
    from durable_agents.contracts.client_tools import ToolResultUpdate
    from durable_agents.contracts.messages import SteerMessage
    from durable_agents.contracts.plan import EditPlan
    from durable_agents.contracts.session import (
        CancelTurn,
        EndSession,
        PendingList,
        SendMessage,
        SessionInput,
        SessionResult,
        TurnReport,
    )
    from durable_agents.workflows.agent_workflow import AgentWorkflow
    from durable_agents.workflows.session_workflow import SessionWorkflow

    people = {
        "approve": ApproveSignal,
        "reject": RejectSignal,
        "reply": ReplySignal,
        "steer": SteerMessage,
        "decide": DecideUpdate,
        "tool_result": ToolResultUpdate,
        "edit_plan": EditPlan,
        "child_pending": ChildPending,
    }
    return {
        "AgentWorkflow": {
            "class": AgentWorkflow,
            "input": AgentInput,
            "result": AgentResult,
            "payloads": people,
        },
        "SessionWorkflow": {
            "class": SessionWorkflow,
            "input": SessionInput,
            "result": SessionResult,
            "payloads": people
            | {
                "send": SendMessage,
                "end": EndSession,
                "cancel_turn": CancelTurn,
                "turn_finished": TurnReport,
                "turn_pending": PendingList,
            },
        },
    }


SYSTEM_HANDLERS = {"child_pending", "turn_finished", "turn_pending"}
"""Handlers one workflow sends another (a child run to its parent, a child turn to its
session), never a person: listed, marked as such."""


def handlers(cls: type) -> Iterator[tuple[str, str, Any]]:
    """(kind, name, function) of each signal, update and query the class registers, without
    the workflow stream's own (`__temporal_...`) and temporalio's built-ins."""
    definition = workflow._Definition.from_class(cls)
    assert definition is not None
    tables: list[tuple[str, dict[str | None, Any]]] = [
        ("signal", dict(definition.signals)),
        ("update", dict(definition.updates)),
        ("query", dict(definition.queries)),
    ]
    for kind, table in tables:
        for name, handler in sorted(table.items(), key=lambda item: str(item[0])):
            if name is None or name.startswith("__"):
                continue
            yield kind, name, handler.fn


def returned(fn: Any) -> Any:
    hints = typing.get_type_hints(fn)
    return hints.get("return")


def contract_page() -> str:
    lines = [
        *page_head("The workflow contract"),
        "",
        "What a client sends to and reads from the two workflow types, as the Temporal CLI, the "
        "Web UI, the `agent` CLI and the HTTP API see them. Every payload is JSON; each table "
        "and schema below is read from the pydantic model the workflow validates it with. How "
        "input is read and what is refused: [rules and limits](input-and-limits.md).",
    ]
    for workflow_type, contract in workflow_contracts().items():
        lines += ["", f"## {workflow_type}", ""]
        cls = contract["class"]
        lines += [inspect.cleandoc(cls.__doc__ or ""), ""]
        lines += model_section("Input", contract["input"], with_schema=True)
        lines += model_section("Result", contract["result"], with_schema=True)
        for kind, name, fn in handlers(cls):
            doc = inspect.cleandoc(fn.__doc__ or "")
            system = " (sent by the system, not by people)" if name in SYSTEM_HANDLERS else ""
            lines += [f"### {kind} `{name}`", "", f"{doc}{system}".strip(), ""]
            if kind != "query":
                lines += model_section("Input", contract["payloads"][name], level="####")
            answer = returned(fn)
            if answer not in (None, type(None), Any):
                lines += model_section("Returns", answer, level="####")
    return "\n".join(lines) + "\n"


# -- the event stream -------------------------------------------------------------------------


def event_models() -> list[type[BaseModel]]:
    """Every event type of the stream, in `AgentEvent`'s order."""
    from durable_agents.contracts.events import AgentEvent

    union = typing.get_args(AgentEvent)[0]
    return list(typing.get_args(union))


def event_type(model: type[BaseModel]) -> str:
    return str(model.model_fields["type"].default)


def events_page() -> str:
    from durable_agents.contracts import events

    lines = [
        *page_head("Events"),
        "",
        inspect.cleandoc(events.__doc__ or ""),
        "",
        "How to follow the stream: [The event stream](../events.md).",
        "",
        "| type | model |",
        "| --- | --- |",
        *(f"| [`{event_type(m)}`](#{event_type(m)}) | `{m.__name__}` |" for m in event_models()),
        "",
    ]
    for model in event_models():
        lines += model_section(event_type(model), model, level="##")
    return "\n".join(lines) + "\n"


# -- the Python API ---------------------------------------------------------------------------

API_MODULES = ("durable_agents", "durable_agents.testing", "durable_agents.errors")
"""The public modules: each name in their `__all__` is documented by mkdocstrings."""


def public_names() -> dict[str, list[tuple[str, Any]]]:
    """Per public module: (name, object) of each name of its `__all__`, imported."""
    import importlib

    out: dict[str, list[tuple[str, Any]]] = {}
    for module_name in API_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            continue
        found = []
        for name in getattr(module, "__all__", []):
            try:
                found.append((name, getattr(module, name)))
            except (AttributeError, ImportError):
                continue  # not importable yet: `unresolved_names` reports it, the page skips it
        out[module_name] = found
    return out


def unresolved_names() -> list[str]:
    """Names a public module's `__all__` lists but that do not import."""
    import importlib

    resolved = {f"{m}.{n}" for m, names in public_names().items() for n, _ in names}
    listed = []
    for module_name in API_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            continue
        listed += [f"{module_name}.{n}" for n in getattr(module, "__all__", [])]
    return [name for name in listed if name not in resolved]


def python_api_page() -> str:
    lines = [
        *page_head("Python API"),
        "",
        "Every public name of the `durable_agents` package, from its docstrings. An agent "
        "defined with them: [Your first agent](../getting-started/first-agent.md#defining-an-"
        "agent-with-its-own-tool-in-python).",
    ]
    for module_name, names in public_names().items():
        lines += ["", f"::: {module_name}", "    options:", "      members: false"]
        lines += ["      heading_level: 2", "      show_root_full_path: true", ""]
        for name, obj in names:
            where = getattr(obj, "__module__", module_name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                where = module_name
            lines += [f"::: {where}.{name}", "    options:", "      heading_level: 3", ""]
    return "\n".join(lines) + "\n"


# -- the repository's measured pages ----------------------------------------------------------


def root_page(name: str) -> str:
    """A repository file shown as a site page: links to docs/ pages made site-relative, links
    to other repository files written as code (the site holds no source)."""
    text = (ROOT / name).read_text()
    text = re.sub(r"\]\(docs/([^)]+)\)", r"](\1)", text)
    return text


# -- the examples -----------------------------------------------------------------------------


def example_folders() -> list[Path]:
    """Every example: a folder of examples/ with a README."""
    return sorted(path.parent for path in (ROOT / "examples").glob("*/README.md"))


def examples_page() -> str:
    """One entry per example folder: its title and first paragraph, from its README."""
    lines = [
        *page_head("Examples"),
        "",
        "One folder per use in `examples/`, in the spirit of Temporal's samples-python: a README "
        "and a small program each, on the public API (`durable_agents`, `durable_agents.testing`; "
        "the MCP and memory examples also open the engine's MCP servers and memory store). "
        "`make test` runs every example's test against a scripted model.",
    ]
    for folder in example_folders():
        readme = (folder / "README.md").read_text()
        title = readme.splitlines()[0].lstrip("# ").strip()
        paragraph = readme.split("\n\n")[1].strip()
        # links into the repository become their text (the site holds no source files)
        paragraph = re.sub(r"\[([^\]]*)\]\((?!https?:)[^)]*\)", r"\1", paragraph)
        lines += ["", f"## {title}", "", f"`examples/{folder.name}/`", "", paragraph]
    return "\n".join(lines) + "\n"


def pages() -> dict[str, str]:
    """Every generated page, by its path in the site."""
    return {
        "reference/python-api.md": python_api_page(),
        "reference/settings.md": settings_page(),
        "reference/cli.md": cli_page(),
        "reference/workflow-contract.md": contract_page(),
        "reference/events.md": events_page(),
        "examples.md": examples_page(),
        **{page: root_page(source) for page, source in ROOT_PAGES.items()},
    }
