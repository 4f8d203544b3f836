// The types: src/api-types.d.ts is what scripts/gen-types.mjs makes of
// internal/server/openapi.json now, and src/index.d.ts declares the Client
// class's methods, no more and no fewer. (The type check, tsc over
// index.d.ts and test/usage.ts, is TestTypeScriptClient's.)

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { fresh, outputPath } from "../scripts/gen-types.mjs";
import { Client } from "../src/index.js";

test("src/api-types.d.ts is generated from the current openapi.json", () => {
  assert.ok(
    readFileSync(outputPath, "utf8") === fresh(),
    "src/api-types.d.ts is stale: internal/server/openapi.json changed; run node clients/typescript/scripts/gen-types.mjs and commit the result",
  );
});

test("index.d.ts declares every method of Client and no other", () => {
  const methods = Object.getOwnPropertyNames(Client.prototype)
    .filter((n) => n !== "constructor" && typeof Object.getOwnPropertyDescriptor(Client.prototype, n).value === "function")
    .sort();
  const dts = readFileSync(new URL("../src/index.d.ts", import.meta.url), "utf8");
  const body = dts.slice(dts.indexOf("export class Client {"));
  const declared = [...body.slice(0, body.indexOf("\n}")).matchAll(/^ {2}(\w+)\(/gm)].map((m) => m[1]).filter((n) => n !== "constructor").sort();
  assert.deepEqual(declared, methods);
});
