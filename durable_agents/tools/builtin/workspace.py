"""Confining file tools to the worker's workspace folder.

Every file tool takes a path written by the model, so the path is untrusted input. The rule
is simple and strict: a path must be relative, must not contain `..` components or NUL bytes,
and must, after every symbolic link is resolved, still lie inside the (resolved) workspace.
A symlink inside the workspace that points outside is therefore refused, as is one in a
directory component (`linked_dir/secret`).

The part of the rule that needs only the string (`path_problem`) is also each file tool's
`precheck`: the workflow runs it before a call that needs approval asks a person, so a call
that can never succeed is refused at once, and nobody is asked to approve it.

`..` is refused even when it would stay inside (`a/../b`): the model can always write the
plain path, and refusing it outright keeps the rule easy to state and to audit.

Remaining limitation: the check happens before the file is opened, so a process that can
rewrite the workspace concurrently could swap a checked directory for a symlink in between.
Callers open the final component with `O_NOFOLLOW` to narrow this; the workspace is assumed
not to be modified by hostile local processes.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath, PureWindowsPath

from durable_agents.tools.definition import ToolError


def path_problem(path: str) -> str | None:
    """Why `path` can never name a file inside a workspace, from the string alone, or None.

    The rule every file tool applies first: the path must not be empty or blank, hold a NUL
    byte, be absolute (POSIX or Windows, a drive included) or contain a `..` component. Pure
    (no filesystem, no clock, no environment), so the workflow also runs it as the file tools'
    `precheck`, before a call that needs approval asks a person; the symlink check needs the
    filesystem and stays in `resolve_in_workspace`.
    """
    if not path or not path.strip():
        return "the path is empty; give a path relative to the workspace, e.g. 'notes.txt'"
    if "\x00" in path:
        return "the path contains a NUL byte, which is not allowed"
    if (
        PurePosixPath(path).is_absolute()
        or PureWindowsPath(path).is_absolute()
        or (PureWindowsPath(path).drive)
    ):
        return (
            f"absolute paths are not allowed ({path!r}); give a path relative to the workspace, "
            "e.g. 'docs/readme.md'"
        )
    if ".." in PurePosixPath(path).parts or ".." in PureWindowsPath(path).parts:
        return (
            f"'..' is not allowed in paths ({path!r}); give a path from the workspace root, "
            "e.g. 'docs/readme.md'"
        )
    return None


def resolve_in_workspace(workspace: Path, path: str, *, must_exist: bool = True) -> Path:
    """Resolve `path` (relative to `workspace`) to an absolute path inside the workspace.

    Raises `ToolError` with a message for the model when the path breaks `path_problem`'s rule
    (empty, absolute, `..` or a NUL byte), leads (through symlinks) outside the workspace, or,
    when `must_exist` (the default; a write tool passes False), does not exist. The returned
    path has all symlinks resolved.
    """
    problem = path_problem(path)
    if problem is not None:
        raise ToolError(problem)
    try:
        root = workspace.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise ToolError(f"the workspace folder is not available: {exc}") from None

    candidate = root / path
    outside = ToolError(
        f"{path!r} leads outside the workspace (through a symbolic link); only files inside "
        "the workspace can be used"
    )
    # First without strict: follows every symlink that exists, so an escape is reported as an
    # escape (and not as "missing") even when the link's target does not exist.
    try:
        loose = candidate.resolve(strict=False)
    except (OSError, RuntimeError):
        raise ToolError(f"{path!r} cannot be resolved (symbolic link loop?)") from None
    if not loose.is_relative_to(root):
        raise outside
    if not must_exist:
        return loose
    try:
        resolved = candidate.resolve(strict=True)
    except FileNotFoundError:
        raise ToolError(f"no such file or directory in the workspace: {path!r}") from None
    except NotADirectoryError:
        raise ToolError(f"{path!r}: a component of the path is a file, not a directory") from None
    except RuntimeError:
        raise ToolError(f"{path!r} cannot be resolved (symbolic link loop)") from None
    except OSError as exc:
        raise ToolError(f"{path!r} cannot be accessed: {exc.strerror or exc}") from None
    if not resolved.is_relative_to(root):
        raise outside
    return resolved
