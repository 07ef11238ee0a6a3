"""The history growth benchmark's verdicts and Markdown report (see `bench.history_growth`)."""

from __future__ import annotations

from typing import Any

from testkit.history_reading import MIB, human_bytes

SEGMENT_MAX_BYTES = 10 * MIB  # Temporal's history size warning (the hard limit is 50 MiB)
SEGMENT_MAX_EVENTS = 10_000  # Temporal's history length warning (the hard limit is 51,200)
FLAT_RATIO = 1.5  # bytes per iteration/turn at the last point within 1.5x of the middle point


def carried_text(carried: dict[str, int]) -> str:
    """The largest carried fields, e.g. `messages 410 KiB, steps 690 KiB`."""
    top = sorted(carried.items(), key=lambda item: -item[1])[:4]
    return ", ".join(f"{key} {human_bytes(size)}" for key, size in top) or "–"


def point_total(run: dict[str, Any], point: int) -> int | None:
    value = run["points"].get(str(point))
    return None if value is None else int(value["total"])


def check_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target, for ours (must pass) and, beside it, for the naive baseline."""
    targets: list[dict[str, Any]] = []
    for workload, name in (("agent", "A"), ("session", "B")):
        for label in ("ours", "naive"):
            run = results[workload].get(label)
            if run is None:
                continue
            segments = run["segments"]
            max_bytes = max(s["bytes"] for s in segments)
            max_events = max(s["events"] for s in segments)
            if workload == "session":
                max_bytes = max(max_bytes, run["children"]["max_segment_bytes"])
                max_events = max(max_events, run["children"]["max_segment_events"])
            targets.append(
                {
                    "target": f"{name}: completed",
                    "config": label,
                    "value": f"{run['outcome']['status']} ({run['outcome']['detail']})",
                    "passed": run["outcome"]["status"] == "completed",
                }
            )
            targets.append(
                {
                    "target": f"{name}: every run segment ≤ {human_bytes(SEGMENT_MAX_BYTES)}",
                    "config": label,
                    "value": human_bytes(max_bytes),
                    "passed": max_bytes <= SEGMENT_MAX_BYTES,
                }
            )
            targets.append(
                {
                    "target": f"{name}: every run segment ≤ {SEGMENT_MAX_EVENTS:,} events",
                    "config": label,
                    "value": f"{max_events:,}",
                    "passed": max_events <= SEGMENT_MAX_EVENTS,
                }
            )
            points = [int(p) for p in run["points"]]
            middle, last = points[-2] if len(points) > 1 else points[0], points[-1]
            at_middle, at_last = point_total(run, middle), point_total(run, last)
            unit = "iteration" if workload == "agent" else "turn"
            ratio = at_last / at_middle if at_last is not None and at_middle else None
            targets.append(
                {
                    "target": f"{name}: bytes per {unit} at {last} ≤ {FLAT_RATIO}x at {middle}",
                    "config": label,
                    "value": (
                        f"{human_bytes(at_last)} vs {human_bytes(at_middle)}"
                        + (f" ({ratio:.2f}x)" if ratio is not None else " (not reached)")
                    ),
                    "passed": ratio is not None and ratio <= FLAT_RATIO,
                }
            )
    return targets


def markdown(results: dict[str, Any]) -> str:
    meta = results["meta"]
    lines = [
        "# History growth",
        "",
        f"{meta['date']} · {meta['machine']} · temporalio {meta['temporalio']} · "
        f"server suggests continue-as-new: {meta['server_suggests_can']} · "
        f"total {meta['wall_seconds']:.0f} s",
        "",
        "Bytes: sum of the serialized sizes of the history events; *server* is the server's own "
        "`history_size_bytes`. KiB/MiB are 1024-based.",
        "",
    ]
    for workload, title in (
        ("agent", f"A. One AgentWorkflow run, {meta['iterations']} iterations"),
        ("session", f"B. One SessionWorkflow, {meta['turns']} turns"),
    ):
        runs = results[workload]
        if not runs:
            continue
        lines += [f"## {title}", ""]
        lines += [
            "| config | outcome | wall | segments | events | bytes |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for label, run in runs.items():
            outcome = run["outcome"]
            lines.append(
                f"| {label} | {outcome['status']}: {outcome['detail']} | {run['wall_seconds']} s "
                f"| {len(run['segments'])} | {run['total_events']:,} "
                f"| {human_bytes(run['total_bytes'])} |"
            )
        lines += [
            "",
            "Segments:",
            "",
            "| config | # | events | bytes | server | start event | carried in it | close |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for label, run in runs.items():
            for index, s in enumerate(run["segments"], 1):
                lines.append(
                    f"| {label} | {index} | {s['events']:,} | {human_bytes(s['bytes'])} "
                    f"| {human_bytes(s['server_bytes'])} | {human_bytes(s['start_bytes'])} "
                    f"| {carried_text(s.get('carried', {}))} "
                    f"| {s['close']} ({human_bytes(s['close_bytes'])}) |"
                )
        unit = "iteration" if workload == "agent" else "turn"
        lines += ["", f"Bytes added per {unit}:", ""]
        if workload == "agent":
            lines += [
                "| config | iteration | total | call_model input | call_model result "
                "| tool input | tool result | other |",
                "| --- | --- | --- | --- | --- | --- | --- | --- |",
            ]
            for label, run in runs.items():
                for point, value in run["points"].items():
                    if value is None:
                        lines.append(f"| {label} | {point} | not reached |" + " |" * 5)
                        continue
                    other = sum(value.get(k, 0) for k in ("model_other", "tool_other", "other"))
                    cells = [
                        human_bytes(value.get(k, 0))
                        for k in ("total", "model_input", "model_output", "tool_input")
                    ]
                    cells += [human_bytes(value.get("tool_output", 0)), human_bytes(other)]
                    lines.append(f"| {label} | {point} | " + " | ".join(cells) + " |")
        else:
            lines += [
                "| config | turn | session + child | session | child (events) "
                "| session: child input | child events | update | signal | other |",
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
            ]
            for label, run in runs.items():
                for point, value in run["points"].items():
                    if value is None:
                        lines.append(f"| {label} | {point} | not reached |" + " |" * 7)
                        continue
                    parts = value["session_parts"]
                    lines.append(
                        f"| {label} | {point} | {human_bytes(value['total'])} "
                        f"| {human_bytes(value['session_bytes'])} "
                        f"| {human_bytes(value['child_bytes'])} ({value['child_events']}) | "
                        + " | ".join(
                            human_bytes(parts.get(k, 0))
                            for k in ("child_input", "child_events", "update", "signal", "other")
                        )
                        + " |"
                    )
            lines += [
                "",
                "Inside each turn's own history (the child AgentWorkflow):",
                "",
                "| config | turn | child | input (memory) | call_model inputs "
                "| call_model results | tool inputs | tool results | turn_finished signal "
                "| result | other |",
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
            ]
            for label, run in runs.items():
                for point, value in run["points"].items():
                    if value is None:
                        continue
                    parts = value["child_parts"]
                    keys = (
                        "total", "input", "model_input", "model_output", "tool_input",
                        "tool_output", "signal_out", "result", "other",
                    )  # fmt: skip
                    cells = [human_bytes(parts.get(k, 0)) for k in keys]
                    lines.append(f"| {label} | {point} | " + " | ".join(cells) + " |")
            lines.append("")
            for label, run in runs.items():
                children = run["children"]
                lines.append(
                    f"- {label}: largest child turn history "
                    f"{human_bytes(children['max_segment_bytes'])}, "
                    f"{children['max_segment_events']} events; all children together "
                    f"{human_bytes(children['total_bytes'])}; "
                    f"{children['usual_events']} events per turn except turns "
                    f"{', '.join(str(t) for t in children['unusual']) or 'none'}"
                )
        lines.append("")
    lines += ["## Targets", "", "| target | config | value | result |", "| --- | --- | --- | --- |"]
    for target in results["targets"]:
        verdict = "PASS" if target["passed"] else "FAIL"
        lines.append(f"| {target['target']} | {target['config']} | {target['value']} | {verdict} |")
    return "\n".join(lines) + "\n"
