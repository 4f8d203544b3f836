"""What the tests share: the server under test, from the environment.

STEPWISE_URL is a running `stepwise serve` (the tests that need one skip
without it; the repository's Go test TestPythonPackage starts one and sets
it), STEPWISE_TOKEN its token if it has tokens, and
STEPWISE_TEST_AGENT_EXTERNAL and STEPWISE_TEST_AGENT_CHAT the names of the
testdata agents "external" (pauses for approve_purchase) and "chat" (a
conversation) in its agents directory.
"""

from __future__ import annotations

import os
import unittest

import stepwise

URL = os.environ.get("STEPWISE_URL", "")
TOKEN = os.environ.get("STEPWISE_TOKEN") or None
EXTERNAL = os.environ.get("STEPWISE_TEST_AGENT_EXTERNAL", "external")
CHAT = os.environ.get("STEPWISE_TEST_AGENT_CHAT", "chat")

# The chat agent's scripted replies (testdata/scripts/chat.jsonl), one a turn.
CHAT_ANSWERS = [
    "Hello! I can look up office equipment prices.",
    "The desk lamp costs 42.50 EUR.",
    "You're welcome. Goodbye!",
]

needs_server = unittest.skipUnless(URL, "STEPWISE_URL is not set: no server to test against")


def client(url: str = "", **kw) -> stepwise.Client:
    """client is a Client of the server under test (or of url, a proxy in
    front of it), quick to retry."""
    kw.setdefault("backoff", 0.05)
    kw.setdefault("max_backoff", 0.2)
    return stepwise.Client(url or URL, TOKEN, **kw)


def approve(args):
    """approve is the tests' approve_purchase: approved up to 100 EUR."""
    if float(args["amount_eur"]) > 100:
        raise ValueError("over the budget of 100 EUR")
    return "approved (%.2f EUR)" % float(args["amount_eur"])
