"""The examples of the READMEs (the repository's, this package's) run and
print what they say they print."""

import contextlib
import io
import os
import re
import unittest

from _support import URL, needs_server

_HERE = os.path.dirname(os.path.abspath(__file__))
READMES = [os.path.join(_HERE, "..", "README.md"), os.path.join(_HERE, "..", "..", "..", "README.md")]


def examples(path):
    """examples are the python blocks of a README that make a Client."""
    with open(path) as f:
        text = f.read()
    return [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "stepwise.Client(" in b]


@needs_server
class TestReadmes(unittest.TestCase):
    def test_examples(self):
        ran = 0
        for path in READMES:
            if not os.path.exists(path):
                continue
            for block in examples(path):
                want = re.search(r"print\(.*\)\s+# (.*)", block).group(1)
                code = block.replace('"http://127.0.0.1:8080"', repr(URL))
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    exec(compile(code, path, "exec"), {})
                self.assertEqual(out.getvalue().strip(), want.strip(), path)
                ran += 1
        self.assertGreater(ran, 0)


if __name__ == "__main__":
    unittest.main()
