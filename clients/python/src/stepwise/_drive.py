"""What drive and say share, sync and async: which calls a pause still
waits for, and a tool's outcome as an Answer."""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Mapping, Optional, Set, Tuple

from .models import Answer, Run, ToolCall

# A tool of drive and say: called with a call's arguments, it returns the
# result (a string or any JSON value); what it raises becomes an error
# result, which the model reads.
Tool = Callable[[Dict[str, Any]], Any]


def error_text(e: BaseException) -> str:
    """error_text is what the model reads of a tool that raised e."""
    text = str(e)
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def answer_call(call: ToolCall, tools: Mapping[str, Tool]) -> Tuple[Optional[Answer], Any]:
    """answer_call runs call's tool; it returns the answer and, for a tool
    whose result must be awaited (AsyncClient), that awaitable instead of a
    result (the answer is then None)."""
    fn = tools.get(call.name)
    if fn is None:
        return Answer.fail(call.id, f"this client has no tool {call.name!r}"), None
    try:
        result = fn(call.arguments)
    except Exception as e:  # a tool's failure is a result the model reads
        return Answer.fail(call.id, error_text(e)), None
    if hasattr(result, "__await__"):
        return None, result
    return result_answer(call, result), None


def result_answer(call: ToolCall, result: Any) -> Answer:
    """result_answer is the answer that carries a tool's result; a result
    that is not JSON is an error the model reads."""
    try:
        json.dumps(result)
    except (TypeError, ValueError) as e:
        return Answer.fail(call.id, f"the result of {call.name} is not JSON: {e}")
    return Answer.ok(call.id, result)


def unanswered(run: Run, answered: Set[Tuple[int, str]]) -> List[ToolCall]:
    """unanswered are the calls a paused run waits for that this follower
    has not answered yet (a call is known by the pause's step and its id)."""
    if not run.paused:
        return []
    return [c for c in run.pending_tool_calls if (run.steps, c.id) not in answered]
