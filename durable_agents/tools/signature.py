"""Tools from plain signatures: `async def price(ctx: ToolContext[Deps], item: str) -> float`.

The schema the model sees comes from the parameters after the optional context (their
annotations and defaults, validated by a pydantic model made for the tool) and from the
docstring: its text is the tool's description, and a Google-style `Args:` section describes
each parameter. The context is never part of the schema. This is what `Agent.tool` builds on;
the older form, one pydantic argument model (`tools.definition.make_tool`), stays for tools
written that way.
"""

from __future__ import annotations

import inspect
from typing import Any, get_type_hints

from griffe import Docstring, DocstringSectionKind
from pydantic import BaseModel, ConfigDict, Field, create_model

from durable_agents.tools.definition import (
    Tool,
    ToolContext,
    ToolFunction,
    ToolOptions,
    check_tool_name,
    is_tool_context,
)


def tool_from_signature(
    function: ToolFunction, *, name: str | None = None, options: ToolOptions | None = None
) -> Tool:
    """A `Tool` that calls `function(ctx, **arguments)` (or `function(**arguments)` when it
    takes no context). Refused (`TypeError`, naming the function) when it is not async, has no
    docstring, or has a parameter without an annotation or a `*args` / `**kwargs`."""
    label = getattr(function, "__name__", repr(function))
    if not inspect.iscoroutinefunction(function):
        raise TypeError(f"tool {label!r} must be an async function")
    parameters = list(inspect.signature(function).parameters.values())
    hints = get_type_hints(function)
    takes_context = bool(parameters) and is_tool_context(hints.get(parameters[0].name))
    arguments = parameters[1:] if takes_context else parameters
    description, documented = _read_docstring(label, function.__doc__)
    args_model = _arguments_model(label, arguments, hints, documented)
    tool_name = check_tool_name(name or label)
    fields = list(args_model.model_fields)

    async def call(args: BaseModel, ctx: ToolContext[Any]) -> Any:
        values = {field: getattr(args, field) for field in fields}
        if takes_context:
            return await function(ctx, **values)
        return await function(**values)

    call.__name__ = call.__qualname__ = tool_name
    return Tool(
        name=tool_name,
        description=description,
        args_model=args_model,
        function=call,
        options=options or ToolOptions(),
        wants_context=True,
    )


def _read_docstring(label: str, doc: str | None) -> tuple[str, dict[str, str]]:
    """The description (the docstring's text sections) and each documented parameter's text."""
    text = inspect.cleandoc(doc or "").strip()
    if not text:
        raise TypeError(f"tool {label!r} needs a docstring: it is the description")
    sections = Docstring(text, lineno=1).parse("google", warnings=False)
    description = "\n\n".join(
        str(section.value).strip()
        for section in sections
        if section.kind is DocstringSectionKind.text
    )
    documented = {
        parameter.name: parameter.description
        for section in sections
        if section.kind is DocstringSectionKind.parameters
        for parameter in section.value
    }
    return description or text, documented


def _arguments_model(
    label: str,
    parameters: list[inspect.Parameter],
    hints: dict[str, Any],
    documented: dict[str, str],
) -> type[BaseModel]:
    """A pydantic model of the tool's arguments: what the model must send, validated."""
    fields: dict[str, Any] = {}
    for parameter in parameters:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"tool {label!r}: *args and **kwargs have no schema; name each one")
        if parameter.name not in hints:
            raise TypeError(f"tool {label!r}: parameter {parameter.name!r} needs an annotation")
        if is_tool_context(hints[parameter.name]):
            raise TypeError(f"tool {label!r}: the ToolContext must be the first parameter")
        default = ... if parameter.default is inspect.Parameter.empty else parameter.default
        fields[parameter.name] = (
            hints[parameter.name],
            Field(default, description=documented.get(parameter.name) or None),
        )
    model_name = "".join(part.capitalize() for part in label.split("_")) + "Args"
    model: type[BaseModel] = create_model(
        model_name, __config__=ConfigDict(extra="forbid"), **fields
    )
    return model
