"""Output shown in the docs, generated from real runs, so it cannot drift (issue 31, item 17).

A fenced block in a Markdown file that follows a line `<!-- generated: NAME -->` is the output of
the recipe NAME below, run for real: `worker.py` with its embedded dev server and the offline
demo model, as `make run` starts it, then the commands a reader types (`temporal`, `agent`,
`curl`), each shown after a `$ ` line.

    python -m scripts.doc_excerpts --write     # run every recipe, rewrite the blocks
    python -m scripts.doc_excerpts --check     # exit 1 naming each block that differs

`tests/test_doc_excerpts.py` runs the check in `make test`. A block and a fresh run are compared
after `volatile` masks what differs from one run to the next (ids, clocks, process numbers).

BENCHMARKS.md and RELIABILITY.md use the same markers for their tables, each closed by a line
`<!-- end generated: NAME -->` instead of a fence: the table is rendered from the recorded
benchmark and soak runs under `bench/results/measured/` (`scripts/docs/benchmarks.py`, which
also records them) and compared exactly, since a figure is what such a table is for.

The stage runs in a temporary folder that links the project's `.venv`, so paths print as they do
in the project folder (`.venv/bin/temporal`, `.temporal/dev.db`). Its servers listen on free
ports (another Temporal server may hold 7233), and `shown_as_default` writes them as the default
ports a reader gets, dropping the `--address` flag that only a non-default port adds (`worker.py`'s
`address_flag` leaves it out for the default address).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import difflib
import os
import re
import shlex
import socket
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from scripts.docs.benchmarks import TABLES, registrar

ROOT = Path(__file__).resolve().parent.parent
DOCS = [
    ROOT / "README.md",
    ROOT / "BENCHMARKS.md",
    ROOT / "RELIABILITY.md",
    ROOT / "EVALS.md",
    *sorted((ROOT / "docs").rglob("*.md")),
]
"""Every Markdown file of the README, the figures' pages and the site (docs/ and its folders)."""
MARKER = re.compile(r"^<!-- generated: ([\w.-]+) -->$")
END_MARKER = "<!-- end generated: {name} -->"
"""Closes a generated table (a block rendered from recorded runs, not a fenced block)."""
DEFAULT_PORT, DEFAULT_UI_PORT, DEFAULT_API_PORT, DEFAULT_A2A_PORT = 7233, 8233, 8000, 8766
API_TOKEN = "docs-example-token-not-a-secret"
"""`agent serve`'s bearer token in the HTTP examples (they show it as `$AGENT_API_TOKEN`)."""
KEPT_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR", "XDG_CACHE_HOME")
"""The reader's environment: nothing of the caller's Temporal, model or agent settings."""

VOLATILE = [
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"), "<time>"),
    (re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ ", re.MULTILINE), "<log time> "),
    (re.compile(r"process group \d+"), "process group <pid>"),
    (re.compile(r"\b\d+(\.\d+)? ?(ms|s)\b"), "<duration>"),
    (re.compile(r"^( +)\d+( +)<time>", re.MULTILINE), r"\1<n>\2<time>"),
    # the live view's turn header shows only when one of its looks (every ~0.2 s) catches the
    # turn running, with the tokens used so far: a fast demo turn may pass between two looks
    (re.compile(r"^turn \d+(/\d+)?( · [^\n]*)?\n", re.MULTILINE), ""),
    # likewise a plan's checklist that a revision replaced shows only if a look caught it
    (re.compile(r"^plan:\n(?:  .*\n)+?(?=plan \(revision)", re.MULTILINE), ""),
    # and a call's line printed again for a retried step shows twice only if a look caught both
    (re.compile(r"^(  [✗✓] .*\n)\1+", re.MULTILINE), r"\1"),
    (re.compile(r"\beval-\d{8}T\d{6}Z-[0-9a-f]+"), "eval-<id>"),
    # a definition's digest (any change to a tool's schema or a setting's default changes it)
    (re.compile(r"@[0-9a-f]{12}\b"), "@<digest>"),
    (re.compile(r"\([0-9a-f]{12}\)"), "(<digest>)"),
    # the MCP and A2A gateways' progress lines: a turn's line shows when a look (every 300 ms)
    # catches the turn, so the numbering of the MCP notifications after it shifts too
    (re.compile(r"^  (progress \d+: |TASK_STATE_WORKING +)turn \d+.*\n", re.MULTILINE), ""),
    (re.compile(r"^  progress \d+: ", re.MULTILINE), "  progress <n>: "),
    (re.compile(r"\bmcp-[0-9a-f]{8,}\b"), "mcp-<id>"),
    (re.compile(r"\b(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b"), "<weekday>"),
    # a session's token counts: the demo model's time answer names the weekday, whose length
    # changes the prompt of the turns after it
    (
        re.compile(r'"prompt_tokens":\d+,"total_tokens":\d+'),
        '"prompt_tokens":<n>,"total_tokens":<n>',
    ),
    (re.compile(r"(\d+ turns? · )\d+ tokens"), r"\1<n> tokens"),
    (re.compile(r"prompt_tokens:\d+ total_tokens:\d+"), "prompt_tokens:<n> total_tokens:<n>"),
    (re.compile(r"\b(\d+|an?) (second|minute)s? ago\b"), "<a while> ago"),
    # a `temporal workflow list` row's StartTime within the last second
    (re.compile(r"^( +\w+ +\S+ +\w+Workflow +)now$", re.MULTILINE), r"\1<a while> ago"),
    # `temporal workflow list` centres its StartTime header over the widest "... ago"
    (re.compile(r"^ +Status +WorkflowId +Type +StartTime$", re.MULTILINE), "<list header>"),
    # an eval table's latency columns (p50, p95), after its cost column
    (re.compile(r"(\$\d+\.\d{4}|n/a) +\d+\.\d\d +\d+\.\d\d$", re.MULTILINE), r"\1 <p50> <p95>"),
]
"""What differs between two real runs of one recipe: masked on both sides before comparing."""


def volatile(text: str) -> str:
    """`text` with what changes from run to run masked (see `VOLATILE`)."""
    for pattern, mask in VOLATILE:
        text = pattern.sub(mask, text)
    return text


def free_port() -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Stage:
    """A reader's shell beside a running `make run` worker: its folder, environment and ports."""

    folder: Path
    port: int = field(default_factory=free_port)
    ui_port: int = field(default_factory=free_port)
    api_port: int = field(default_factory=free_port)
    a2a_port: int = field(default_factory=free_port)
    worker_output: str = ""
    last_code: int | None = None
    """The exit code of the last command `sh` ran."""
    background: dict[str, asyncio.Task[str]] = field(default_factory=dict)
    """Commands still running (a stream a reader follows in another shell), by name."""
    services: contextlib.AsyncExitStack = field(default_factory=contextlib.AsyncExitStack)

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k in KEPT_ENV}
        env["PATH"] = f"{self.folder / '.venv' / 'bin'}:{env.get('PATH', '')}"
        env["TEMPORAL_DEV_PORT"] = str(self.port)
        env["TEMPORAL_DEV_UI_PORT"] = str(self.ui_port)
        env["COLUMNS"] = "200"
        return env

    def shown_as_default(self, text: str) -> str:
        """`text` as a reader on the default ports sees it (see the module's docstring)."""
        text = text.replace(f" --address localhost:{self.port}", "")
        text = text.replace(f"localhost:{self.port}", f"localhost:{DEFAULT_PORT}")
        text = text.replace(f"127.0.0.1:{self.port}", f"127.0.0.1:{DEFAULT_PORT}")
        text = text.replace(f":{self.ui_port}", f":{DEFAULT_UI_PORT}")
        text = text.replace(f":{self.a2a_port}", f":{DEFAULT_A2A_PORT}")
        return text.replace(f":{self.api_port}", f":{DEFAULT_API_PORT}")

    async def sh(self, command: str, *, shown: str | None = None, stdin: str = "") -> str:
        """Run `command` in a shell as the reader would; `$ command` and what it printed.

        `shown` is the command as the doc writes it when it differs (the reader's own port)."""
        env = self.env | {
            "TEMPORAL_ADDRESS": f"localhost:{self.port}",
            "AGENT_API_TOKEN": API_TOKEN,
            "U": f"http://127.0.0.1:{self.api_port}",
            "H": f"Authorization: Bearer {API_TOKEN}",
        }
        process = await asyncio.create_subprocess_shell(
            command,
            cwd=self.folder,
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await asyncio.wait_for(process.communicate(stdin.encode()), timeout=60)
        self.last_code = process.returncode
        printed = "\n".join(line.rstrip() for line in out.decode().splitlines())
        return self.shown_as_default(f"$ {shown or command}\n{printed}".rstrip())


@contextlib.asynccontextmanager
async def stage() -> AsyncIterator[Stage]:
    """`make run`'s worker (embedded dev server, demo model) in a fresh folder, until exit."""
    with tempfile.TemporaryDirectory(prefix="doc-excerpts-") as folder:
        here = Stage(Path(folder))
        (here.folder / ".venv").symlink_to(ROOT / ".venv")
        async with make_run(here) as printed, here.services:
            here.worker_output = printed
            yield here


@contextlib.asynccontextmanager
async def make_run(here: Stage, settings: dict[str, str] | None = None) -> AsyncIterator[str]:
    """A `worker.py` as `make run` starts it, in the stage's folder, with the reader's
    `settings` (environment variables) if any; what it printed when ready."""
    worker = await asyncio.create_subprocess_exec(
        str(here.folder / ".venv" / "bin" / "python"),
        str(ROOT / "worker.py"),
        cwd=here.folder,
        env=here.env | {"PYTHONUNBUFFERED": "1"} | (settings or {}),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        yield await asyncio.wait_for(_until_ready(worker), timeout=90)
    finally:
        if worker.returncode is None:
            worker.terminate()
            try:
                await asyncio.wait_for(worker.wait(), timeout=60)
            except TimeoutError:  # its drain outlasted a minute on busy cores: the stage is done
                worker.kill()  # (its embedded server stops with it: dev_server.py)
                await worker.wait()


async def _until_ready(worker: asyncio.subprocess.Process) -> str:
    """What the worker printed up to its last start-up line, each line's end trimmed."""
    assert worker.stdout is not None
    lines: list[str] = []
    while True:
        line = (await worker.stdout.readline()).decode()
        if not line:
            raise RuntimeError("the worker exited before it was ready:\n" + "".join(lines))
        lines.append(line.rstrip())
        if line.startswith("Ctrl-C stops the worker"):
            return "\n".join(lines)


Recipe = Callable[[Stage], Awaitable[str]]
RECIPES: dict[str, Recipe] = {}


def recipe(name: str) -> Callable[[Recipe], Recipe]:
    """Register a block's recipe under the name its marker uses."""
    return registrar(RECIPES, name)


@dataclass
class Block:
    """One generated block in a Markdown file: its recipe and where its text stands."""

    path: Path
    name: str
    first: int
    """Index of the block's first line of text (after the opening fence)."""
    end: int
    """Index of the closing fence (of the end marker, for a table)."""

    @property
    def table(self) -> bool:
        """Rendered from recorded runs (`scripts/docs/benchmarks.py`), compared exactly."""
        return self.name in TABLES


def blocks_in(path: Path) -> list[Block]:
    """The generated blocks of one Markdown file, each checked to be a fenced block."""
    lines = path.read_text().splitlines()
    found = []
    for index, line in enumerate(lines):
        match = MARKER.match(line)
        if not match:
            continue
        name = match.group(1)
        fence = lines[index + 1] if index + 1 < len(lines) else ""
        if fence.startswith("```"):
            end = next(i for i in range(index + 2, len(lines)) if lines[i].startswith("```"))
            found.append(Block(path, name, index + 2, end))
        elif END_MARKER.format(name=name) in lines[index + 1 :]:
            end = lines.index(END_MARKER.format(name=name), index + 1)
            found.append(Block(path, name, index + 1, end))
        else:
            raise ValueError(
                f"{path.name}:{index + 1}: a generated marker must precede a fence "
                f"or be closed by {END_MARKER.format(name=name)}"
            )
    return found


def all_blocks() -> list[Block]:
    """Every generated block in the README and docs/, each naming a known recipe."""
    found = [block for path in DOCS for block in blocks_in(path)]
    unknown = sorted({b.name for b in found} - RECIPES.keys() - TABLES.keys())
    if unknown:
        raise ValueError(f"generated blocks name unknown recipes: {', '.join(unknown)}")
    return found


async def generate(names: set[str]) -> dict[str, str]:
    """Each named recipe's text, from one stage (recipes run in the order they were registered,
    so a later one may read a run an earlier one started); tables are rendered without one."""
    texts = {name: TABLES[name]() for name in names & TABLES.keys()}
    if not names - TABLES.keys():
        return texts
    async with stage() as here:
        for name, function in RECIPES.items():
            if name in names:
                texts[name] = await function(here)
    return texts


def block_text(block: Block) -> str:
    lines = block.path.read_text().splitlines()
    return "\n".join(lines[block.first : block.end])


def write(blocks: list[Block], texts: dict[str, str]) -> None:
    """Put each block's fresh text in its file (from the last block up, so indexes hold)."""
    for block in sorted(blocks, key=lambda b: (str(b.path), b.first), reverse=True):
        lines = block.path.read_text().splitlines()
        lines[block.first : block.end] = texts[block.name].splitlines()
        block.path.write_text("\n".join(lines) + "\n")


def stale(blocks: list[Block], texts: dict[str, str], root: Path = ROOT) -> list[str]:
    """The blocks whose text differs from a fresh run's beyond what is volatile, each named by
    its path below `root`, its line and its recipe."""
    return [
        f"{b.path.relative_to(root)}:{b.first}: {b.name}"
        for b in blocks
        if difference(b, texts[b.name])
    ]


# -- the recipes -------------------------------------------------------------------------------


@recipe("quickstart-worker")
async def quickstart_worker(here: Stage) -> str:
    """What `make run` prints up to "Ctrl-C stops the worker" (the README's quick start)."""
    return here.shown_as_default(here.worker_output)


@recipe("worker-reuse")
async def worker_reuse(here: Stage) -> str:
    """A second `make run` while the first one's server is up: it says it reuses that server."""
    async with make_run(here) as printed:
        return here.shown_as_default(printed)


@recipe("tool-modules-worker")
async def tool_modules_worker(here: Stage) -> str:
    """A second worker with a tool module loaded: its ready line names the module's tool."""
    async with make_run(here, {"AGENT_TOOL_MODULES": "examples.unit_tools"}) as printed:
        shown = here.shown_as_default(printed).splitlines()
    ready = next(i for i, line in enumerate(shown) if line.startswith("Worker ready"))
    until = next(i for i, line in enumerate(shown) if line.startswith("Web UI"))
    banner = "\n".join(shown[ready:until])
    return f"$ AGENT_TOOL_MODULES=examples.unit_tools make run\n...\n{banner}"


DEMO_INPUT = '{"prompt": "What is 17 * 25?"}'


def command_recipe(name: str, command: str) -> None:
    """Register a block that is one command and what it printed."""

    async def run(here: Stage) -> str:
        return await here.sh(command)

    recipe(name)(run)


for _name, _command in [
    (
        "temporal-start",
        "temporal workflow start --type AgentWorkflow --task-queue agents "
        f"--workflow-id agent-demo-1 --input {shlex.quote(DEMO_INPUT)}",
    ),
    ("temporal-result", "temporal workflow result --workflow-id agent-demo-1"),
    ("temporal-status", "temporal workflow query --workflow-id agent-demo-1 --type status"),
    ("temporal-show", "temporal workflow show --workflow-id agent-demo-1"),
    ("temporal-metadata", "temporal workflow metadata --workflow-id agent-demo-1"),
    ("agent-run", "agent run 'What is 17 * 25?' --id calc-1"),
    ("agent-run-failed", "agent run x --tool nope --id failed-1"),
]:
    command_recipe(_name, _command)


APPROVAL_INPUT = '{"prompt": "Write hello world to notes.txt"}'
APPROVE = '{"call_id": "demo_call_1", "by": "alice"}'


@recipe("temporal-approval")
async def temporal_approval(here: Stage) -> str:
    """The README's first approval with the Temporal CLI: start a run whose `write_file` waits,
    read what waits (a reader looks again until it does), approve it, read the result."""
    return await approval_with_the_temporal_cli(here, "approve-1")


@recipe("first-approval")
async def first_approval(here: Stage) -> str:
    """The Getting started page's approval: as the README's, with the run's current details
    (what the Web UI's "User Metadata" tab shows) while it waits."""
    return await approval_with_the_temporal_cli(here, "approve-2", details=True)


async def approval_with_the_temporal_cli(
    here: Stage, workflow_id: str, *, details: bool = False
) -> str:
    """Start a run whose `write_file` waits, read what waits (a reader looks again until it
    does), with `details` its `temporal workflow metadata`, approve it, read the result."""
    started = await here.sh(
        "temporal workflow start --type AgentWorkflow --task-queue agents "
        f"--workflow-id {workflow_id} --input {shlex.quote(APPROVAL_INPUT)}"
    )
    for _ in range(100):
        pending = await here.sh(
            f"temporal workflow query --workflow-id {workflow_id} --type pending_approvals"
        )
        if '"call_id"' in pending:
            break
        await asyncio.sleep(0.2)
    shown = [started, pending]
    if details:
        shown.append(await here.sh(f"temporal workflow metadata --workflow-id {workflow_id}"))
    shown.append(
        await here.sh(
            f"temporal workflow signal --workflow-id {workflow_id} --name approve "
            f"--input {shlex.quote(APPROVE)}"
        )
    )
    shown.append(await here.sh(f"temporal workflow result --workflow-id {workflow_id}"))
    return "\n\n".join(shown)


@recipe("agent-run-no-wait")
async def agent_run_no_wait(here: Stage) -> str:
    started = await here.sh("agent run 'Write hello world to notes.txt' --id notes-1 --no-wait")
    await here.sh("agent reject notes-1 '*' --reason 'only a docs example'")
    return started


@recipe("agent-run-exit-codes")
async def agent_run_exit_codes(here: Stage) -> str:
    """A run stopped at its limit (exit 2), then `--json`: progress on stderr, JSON on stdout."""
    limited = await here.sh("agent run 'What is 17 * 25?' --max-iterations 1 --id calc-2")
    code = f"$ echo $?\n{here.last_code}"
    as_json = await here.sh("agent run 'What is 2 + 2?' --id calc-3 --json")
    return f"{limited}\n{code}\n\n{as_json}"


@recipe("agent-run-piped")
async def agent_run_piped(here: Stage) -> str:
    """Approvals, a rejection and a reply answered on a pipe."""
    edited = await here.sh(
        'printf \'e\\n{"path": "plan-v2.txt", "content": "final plan"}\\n\' | '
        "agent run 'Write hello world to notes.txt' --id notes-3 --by bob"
    )
    rejected = await here.sh(
        "printf 'n\\nnot in this folder\\n' | "
        "agent run 'Write hello world to notes.txt' --id notes-4 --by bob"
    )
    replied = await here.sh("echo 'I like blue' | agent run 'Ask me something' --id ask-1")
    return f"{edited}\n\n{rejected}\n\n{replied}"


async def agent_serve(here: Stage) -> None:
    """`agent serve` with a token on the stage's API port, until the stage ends."""
    await served(here, "serve", here.api_port, {"AGENT_API_TOKEN": API_TOKEN})


async def served(
    here: Stage, command: str, port: int, settings: dict[str, str] | None = None
) -> None:
    """`agent COMMAND --port PORT` (serve, a2a) beside the stage's worker, with the reader's
    `settings` (environment variables) if any, once it listens; stopped when the stage ends."""
    server = await asyncio.create_subprocess_exec(
        str(here.folder / ".venv" / "bin" / "agent"),
        command,
        "--port",
        str(port),
        cwd=here.folder,
        env=here.env | {"TEMPORAL_ADDRESS": f"localhost:{here.port}"} | (settings or {}),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )

    async def stop() -> None:
        server.terminate()
        await server.wait()

    here.services.push_async_callback(stop)
    for _ in range(600):  # a minute: it imports its server stack first, slowly on busy cores
        with contextlib.suppress(OSError):
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"agent {command} did not listen within 60 s")


async def waiting_call(here: Stage) -> str:
    """`$ curl .../pending` once the demo's write waits (a reader looks again until it does)."""
    for _ in range(100):
        pending = await here.sh('curl -s $U/v1/runs/notes-2/pending -H "$H"')
        if '"args_digest"' in pending:
            return pending
        await asyncio.sleep(0.2)
    raise RuntimeError(f"nothing waits in notes-2: {pending}")


def digest_of(pending_output: str) -> str:
    """The `args_digest` in a `$ curl .../pending` excerpt's JSON line."""
    match = re.search(r'"args_digest":"([0-9a-f]{64})"', pending_output)
    if match is None:
        raise ValueError(f"no args_digest in: {pending_output}")
    return match.group(1)


NOTES = '{"id": "notes-2", "prompt": "Write hello world to notes.txt"}'
JSON = '-H "$H" -H "Content-Type: application/json"'
CODE = '-w "  (HTTP %{http_code})"'


@recipe("http-start")
async def http_start(here: Stage) -> str:
    """Start a run over HTTP, read what waits, two wrong decisions, the result too early; a
    reader follows the events in another shell (`http-events`)."""
    await agent_serve(here)
    started = await here.sh(f"curl -s -X POST $U/v1/runs {JSON} -d '{NOTES}'")
    here.background["events"] = asyncio.create_task(
        here.sh('curl -s -N "$U/v1/runs/notes-2/events" -H "$H"')
    )
    pending = await waiting_call(here)
    digest = digest_of(pending)
    wrong_digest = await here.sh(
        f"curl -s -X POST $U/v1/runs/notes-2/decisions {JSON} -d "
        '\'{"call_id": "demo_call_1", "decision": "approve", "args_digest": "0000000000000000"}\' '
        + CODE
    )
    wrong_call = await here.sh(
        f"curl -s -X POST $U/v1/runs/notes-2/decisions {JSON} -d "
        f'\'{{"call_id": "nope", "decision": "approve", "args_digest": "{digest}"}}\' ' + CODE
    )
    early = await here.sh(f'curl -s $U/v1/runs/notes-2/result -H "$H" {CODE}')
    return "\n".join([started, pending, wrong_digest, wrong_call, early])


@recipe("http-approve")
async def http_approve(here: Stage) -> str:
    """Approve with the digest, approve again, the result, resume the events, three
    refusals."""
    pending = await here.sh('curl -s $U/v1/runs/notes-2/pending -H "$H"')
    decision = (
        f'{{"call_id": "demo_call_1", "decision": "approve", "args_digest": '
        f'"{digest_of(pending)}", "by": "ann"}}'
    )
    approved = await here.sh(f"curl -s -X POST $U/v1/runs/notes-2/decisions {JSON} -d '{decision}'")
    again = await here.sh(
        f"curl -s -X POST $U/v1/runs/notes-2/decisions {JSON} -d '{decision}' {CODE}"
    )
    result = await here.sh('curl -s "$U/v1/runs/notes-2/result?wait=true" -H "$H"')
    resumed = await here.sh('curl -s -N "$U/v1/runs/notes-2/events" -H "$H" -H "Last-Event-ID: 4"')
    no_token = await here.sh(f"curl -s $U/v1/runs/notes-2 {CODE}")
    invalid = await here.sh(
        f"curl -s -X POST $U/v1/runs {JSON} -d "
        '\'{"prompt": "hi", "max_iterations": "ten"}\' ' + CODE
    )
    not_json = await here.sh(  # curl -d alone sends a form: refused as a browser's would be
        f'curl -s -X POST $U/v1/runs -H "$H" -d \'{{"prompt": "hi"}}\' {CODE}'
    )
    return "\n".join([approved, again, result, resumed, no_token, invalid, not_json])


@recipe("http-events")
async def http_events(here: Stage) -> str:
    """What the reader `http-start` started saw, from the run's start to its end."""
    followed = await asyncio.wait_for(here.background.pop("events"), timeout=60)
    return followed.split("\n", 1)[1]


def evals_linked(here: Stage) -> None:
    """The project's `evals/` suites in the stage's folder, as a reader has them (each file
    linked, so that a suite saved there, `agent eval --save`, stays in the stage)."""
    folder = here.folder / "evals"
    folder.mkdir(exist_ok=True)
    for suite in (ROOT / "evals").glob("*.yaml"):
        if not (folder / suite.name).exists():
            (folder / suite.name).symlink_to(suite)


@recipe("eval-seed-cases")
async def eval_seed_cases(here: Stage) -> str:
    """`agent eval` of the shipped suite against the demo model, one run at a time so the
    progress lines come in the suite's order."""
    evals_linked(here)
    return await here.sh("agent eval evals/seed_cases.yaml --concurrency 1")


BROKEN_SUITE = """name: broken
scenarios:
  - name: missing_information
    prompt: Split a bill of 120 euros
    people:
      - {action: reply, txt: There are 4 of us}
    expect: {answer_contain: "30"}
"""
FAILING_SUITE = """name: failing
scenarios:
  - name: nobody_approves
    prompt: Write hello world to notes.txt
    input: {tools: [write_file]}
"""


@recipe("eval-refused-and-failing")
async def eval_refused_and_failing(here: Stage) -> str:
    """A malformed suite refused before anything starts, and a scenario that fails (nobody
    answers its approval), each suite shown first."""
    (here.folder / "broken.yaml").write_text(BROKEN_SUITE)
    (here.folder / "failing.yaml").write_text(FAILING_SUITE)
    shown = [
        await here.sh("cat broken.yaml"),
        await here.sh("agent eval broken.yaml"),
        await here.sh("cat failing.yaml"),
        await here.sh("agent eval failing.yaml"),
    ]
    return "\n".join(shown)


@recipe("eval-multi-step")
async def eval_multi_step(here: Stage) -> str:
    """ReAct against plan-and-execute on the same tasks (`evals/multi_step.yaml`)."""
    evals_linked(here)
    return await here.sh("agent eval evals/multi_step.yaml --concurrency 1")


@recipe("plan-approved")
async def plan_approved(here: Stage) -> str:
    """A planned run whose plan waits for approval, approved on the pipe."""
    return await here.sh(
        'echo y | agent run "What is 17 * 25, then add 8 to it" --id plan-1 --input-json '
        '\'{"mode": "plan_and_execute", "plan_approval": true}\' --by alice'
    )


command_recipe(
    "plan-replanned",
    'agent run "What is 10 / 0, then add 1 to it" --id plan-2 --input-json '
    '\'{"mode": "plan_and_execute", "tools": ["calculator"], "max_replans": 1}\'',
)


SESSION_SEND = (
    "temporal workflow execute-update-with-start --type SessionWorkflow --task-queue agents "
    "--workflow-id chat-1 --id-conflict-policy UseExisting --input '{}' --update-name send "
    '--update-input \'{"text": "What is 17 * 25?"}\''
)


@recipe("session-chat")
async def session_chat(here: Stage) -> str:
    """A session with the Temporal CLI: three messages (an update-with-start, an update, a
    signal-with-start), its queries, a refused message, its details, its end and result."""
    shown = [
        await here.sh(SESSION_SEND),
        await here.sh(
            "temporal workflow update execute --workflow-id chat-1 --name send "
            '--input \'{"text": "And what time is it?"}\''
        ),
        await here.sh(
            "temporal workflow signal-with-start --type SessionWorkflow --task-queue agents "
            '--workflow-id chat-1 --signal-name send --signal-input \'{"text": "Tell me a joke"}\''
        ),
    ]
    status = "temporal workflow query --workflow-id chat-1 --type status"
    for _ in range(100):  # the signalled turn runs after the signal returns: wait for it
        now = await here.sh(status)
        if '"turns":3' in now and '"state":"idle"' in now:
            break
        await asyncio.sleep(0.1)
    for command in [
        "temporal workflow query --workflow-id chat-1 --type history",
        status,
        "temporal workflow update execute --workflow-id chat-1 --name send "
        '--input \'{"text": ""}\'',
        "temporal workflow metadata --workflow-id chat-1",
        'temporal workflow signal --workflow-id chat-1 --name end --input \'{"reason": "done"}\'',
        "temporal workflow result --workflow-id chat-1",
        "temporal workflow list --query 'WorkflowId STARTS_WITH \"chat-1\"'",
    ]:
        shown.append(await here.sh(command))
    return "\n\n".join(shown)


@recipe("eval-runs-listed")
async def eval_runs_listed(here: Stage) -> str:
    """The eval's runs in `temporal workflow list`, found by the eval id in their workflow ids."""
    listing = await here.sh("temporal workflow list --query 'WorkflowType = \"AgentWorkflow\"'")
    eval_id = next(  # the seed cases' eval (the one with a `normal` scenario)
        m.group(1) for m in re.finditer(r"(eval-\d{8}T\d{6}Z-[0-9a-f]+)/normal/", listing)
    )
    return await here.sh(f"temporal workflow list --query 'WorkflowId STARTS_WITH \"{eval_id}\"'")


command_recipe("agent-run-weather", "agent run 'What is the weather like in Paris?' --id weather-1")


@recipe("mcp-session")
async def mcp_session(here: Stage) -> str:
    """The official MCP client starting `agent mcp` over stdio (`scripts/docs/mcp_session.py`):
    a run with progress, an approval decided with its digest, an unknown agent refused."""
    script = "scripts/docs/mcp_session.py"  # the gateway's log (stderr) kept out of the page
    return await here.sh(
        f"python {ROOT / script} 2>agent-mcp.log", shown=f"python {script} 2>agent-mcp.log"
    )


@recipe("a2a-session")
async def a2a_session(here: Stage) -> str:
    """`a2a-sdk`'s streaming client against `agent a2a` (`scripts/docs/a2a_session.py`): a task
    that waits for approval answered on the task, a skill picked, an unknown agent refused."""
    await served(here, "a2a", here.a2a_port)
    script = "scripts/docs/a2a_session.py"
    return await here.sh(
        f"python {ROOT / script} --url http://127.0.0.1:{here.a2a_port}/",
        shown=f"python {script}",
    )


@recipe("definitions-diff")
async def definitions_diff(here: Stage) -> str:
    """Two runs of different agents (the default one with the calculator, the `researcher`
    profile), what differs between their definitions, and the runs listed by label."""
    await here.sh("agent run 'What is 17 * 25?' --tool calculator --id defs-1")
    await here.sh("agent run 'What is 17 * 25?' --agent researcher --id defs-2")
    shown = [
        await here.sh("agent diff defs-1 defs-2"),
        await here.sh(
            "temporal workflow list --query "
            '\'AgentDefinition STARTS_WITH "researcher@" AND WorkflowId STARTS_WITH "defs-"\''
        ),
    ]
    return "\n".join(shown)


RECORDED_RUNS = (
    'agent run "What is 17 * 25?" --id shop-1',
    'echo y | agent run "Write hello to shop-notes.txt" --id shop-2 --by ann',
)
"""The runs the evals-from-runs how-to rebuilds: a calculation, and a write a person approved."""


@recipe("eval-from-runs")
async def eval_from_runs(here: Stage) -> str:
    """Recorded runs rebuilt as cases and rerun with another system prompt (their tool outputs
    replayed, so the write does not happen again), saved as a suite."""
    evals_linked(here)
    for command in RECORDED_RUNS:
        await here.sh(command)
    written = here.folder / "workspace" / "shop-notes.txt"
    written.unlink()  # the rerun must not write it again
    shown = await here.sh(
        "agent eval --from-runs 'WorkflowId STARTS_WITH \"shop-\"' --system-prompt "
        '"Be terse. Double-check every calculation." --save shop --concurrency 1'
    )
    assert not written.exists(), "the rerun wrote the file again"
    return shown


@recipe("eval-saved-suite")
async def eval_saved_suite(here: Stage) -> str:
    """The suite `eval-from-runs` saved, and its rerun with the recorded definition, compared
    exactly."""
    shown = [
        await here.sh("cat evals/shop.yaml"),
        await here.sh("agent eval shop --compare exact --concurrency 1"),
    ]
    return "\n".join(shown)


def difference(block: Block, text: str) -> str:
    """A unified diff from the block's text to a fresh run's, both with what is volatile
    masked (a table's figures are compared as they are): what `--check` and the test print
    for a stale block."""
    shown = (lambda t: t) if block.table else volatile
    lines = difflib.unified_diff(
        shown(block_text(block)).splitlines(keepends=True),
        shown(text).splitlines(keepends=True),
        fromfile=f"{block.path.name} ({block.name})",
        tofile="a fresh run",
    )
    return "".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite every generated block")
    mode.add_argument("--check", action="store_true", help="exit 1 if a block is stale")
    args = parser.parse_args()
    blocks = all_blocks()
    texts = asyncio.run(generate({b.name for b in blocks}))
    if args.write:
        write(blocks, texts)
        print(f"wrote {len(blocks)} generated blocks")
        return
    differing = stale(blocks, texts)
    for block in blocks:
        print(difference(block, texts[block.name]), end="")
    for line in differing:
        print(f"stale: {line}")
    sys.exit(1 if differing else 0)


if __name__ == "__main__":
    main()
