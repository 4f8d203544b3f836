"""_coverage against the API's description: every route and schema of
openapi.json has its method or class (or a reason in MISSING), every method
is on Client and AsyncClient, every property of a schema is a field of its
class, and the error codes and statuses are the API's."""

import dataclasses
import json
import os
import unittest

import stepwise
from stepwise import _coverage
from _support import URL, client

_FILE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "internal", "server", "openapi.json")


def load_spec():
    """load_spec is the server's openapi.json, else the repository's."""
    if URL:
        return client().openapi()
    if os.path.exists(_FILE):
        with open(_FILE) as f:
            return json.load(f)
    raise unittest.SkipTest("no server (STEPWISE_URL) and no internal/server/openapi.json")


def properties(schema, schemas):
    """properties are a schema's property names, its allOf parts' included."""
    out = set(schema.get("properties", {}))
    for part in schema.get("allOf", []):
        ref = part.get("$ref", "")
        out |= properties(schemas[ref.rsplit("/", 1)[-1]] if ref else part, schemas)
    return out


class TestCoverage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.spec = load_spec()
        cls.schemas = cls.spec["components"]["schemas"]

    def test_routes(self):
        routes = {f"{m.upper()} {p}" for p, ops in self.spec["paths"].items() for m in ops}
        listed = set(_coverage.ROUTES) | {k for k in _coverage.MISSING if " " in k}
        self.assertEqual(routes - listed, set(), "routes the client does not list")
        self.assertEqual(set(_coverage.ROUTES) - routes, set(), "routes the API does not have")
        for route, method in list(_coverage.ROUTES.items()) + [(r, m) for m, r in _coverage.HELPERS.items()]:
            self.assertIn(route, routes)
            self.assertTrue(callable(getattr(stepwise.Client, method, None)), f"Client.{method} ({route})")
            self.assertTrue(callable(getattr(stepwise.AsyncClient, method, None)), f"AsyncClient.{method} ({route})")

    def test_schemas(self):
        listed = set(_coverage.SCHEMAS) | {k for k in _coverage.MISSING if " " not in k}
        self.assertEqual(set(self.schemas) - listed, set(), "schemas the client does not list")
        self.assertEqual(listed - set(self.schemas), set(), "schemas the API does not have")
        for name, cls_name in _coverage.SCHEMAS.items():
            cls = getattr(stepwise, cls_name, None)
            self.assertIsNotNone(cls, f"stepwise.{cls_name} (schema {name})")
            if dataclasses.is_dataclass(cls):
                fields = {f.name for f in dataclasses.fields(cls)}
                missing = properties(self.schemas[name], self.schemas) - fields
                self.assertEqual(missing, set(), f"{cls_name} lacks fields of schema {name}")

    def test_error_codes(self):
        codes = self.schemas["Error"]["properties"]["error"]["properties"]["code"]["enum"]
        self.assertEqual(set(codes), set(stepwise.CODES))

    def test_statuses(self):
        ours = {v for k, v in vars(stepwise.Status).items() if k.isupper() and isinstance(v, str)}
        self.assertEqual(set(self.schemas["Status"]["enum"]), ours)


if __name__ == "__main__":
    unittest.main()
