"""One user turn of N tool calls through the Strands Agents SDK, offline.

The same work `tau chat` does in the side-by-side harness: a scripted model asks for one
`clock` call per model call, N times, then answers with a text; a before-tool-call hook
looks the tool's tier up and allows or cancels it, like tau's gate; an after-tool-call
hook appends one JSON line per call to an audit file and flushes it, like tau's audit log.

Usage: python strands_run.py N AUDIT_FILE
"""

import json
import sys
import threading
import time
from datetime import datetime, timezone
from typing import Any, AsyncIterable

from strands import Agent, tool
from strands.hooks import AfterToolCallEvent, BeforeToolCallEvent, HookProvider, HookRegistry
from strands.models.model import Model

TIERS = {"clock": 0}
NOT_REGISTERED = "Tool '{tool}' is not registered; it was not run."
REFUSED = "The user did not approve this action: {tool}. Do not perform it; tell the user briefly."


@tool
def clock() -> str:
    """Reads the current date and time."""
    return datetime.now(timezone.utc).isoformat()


class Gate(HookProvider):
    """A tier check before each call and an audit line after it."""

    def __init__(self, audit_path: str) -> None:
        self.audit = open(audit_path, "a", encoding="utf-8")
        self.seq = 0

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.before)
        registry.add_callback(AfterToolCallEvent, self.after)

    def before(self, event: BeforeToolCallEvent) -> None:
        name = event.tool_use["name"]
        tier = TIERS.get(name)
        if tier is None:
            event.cancel_tool = NOT_REGISTERED.format(tool=name)
        elif tier >= 2:
            # Nobody is asked in this workload: a tier-2 call is refused.
            event.cancel_tool = REFUSED.format(tool=name)

    def after(self, event: AfterToolCallEvent) -> None:
        self.seq += 1
        line = {
            "seq": self.seq,
            "at": datetime.now(timezone.utc).isoformat(),
            "type": "tool_call",
            "tool": event.tool_use["name"],
            "tool_use_id": event.tool_use["toolUseId"],
            "arguments": event.tool_use["input"],
            "status": event.result["status"],
        }
        self.audit.write(json.dumps(line, sort_keys=True) + "\n")
        self.audit.flush()


class ScriptedModel(Model):
    """Streams one `clock` tool use per call, `calls` times, then a final text."""

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.played = 0
        self.config: dict[str, Any] = {}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> Any:
        return self.config

    def structured_output(self, output_model, prompt, system_prompt=None, **kwargs):
        raise NotImplementedError("the scripted model has no structured output")

    async def stream(self, messages, tool_specs=None, system_prompt=None, **kwargs: Any) -> AsyncIterable[Any]:
        index = self.played
        self.played += 1
        yield {"messageStart": {"role": "assistant"}}
        if index < self.calls:
            yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": f"t{index}", "name": "clock"}}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": "{}"}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
        else:
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": f"Read the clock {self.calls} times."}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
        yield {"metadata": {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, "metrics": {"latencyMs": 0}}}


def main() -> None:
    calls = int(sys.argv[1])
    # Strands' event loop recurses once per model call (through async generators, which use
    # the C stack too): without room for that it fails with a RecursionError before N=1000.
    sys.setrecursionlimit(max(10_000, 40 * calls))
    threading.stack_size(1 << 29)
    agent = Agent(
        model=ScriptedModel(calls),
        tools=[clock],
        hooks=[Gate(sys.argv[2])],
        callback_handler=None,
    )
    start = time.perf_counter()
    result = agent(f"read the clock {calls} times")
    elapsed = time.perf_counter() - start
    uses = sum(
        1 for m in agent.messages for b in m["content"] if "toolResult" in b and b["toolResult"]["status"] == "success"
    )
    # The window trims the history after the turn; the audit file counts every call.
    print(json.dumps({"stop_reason": str(result.stop_reason), "turn_seconds": elapsed, "results_kept": uses}))


if __name__ == "__main__":
    main()
