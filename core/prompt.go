package core

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// ToolDocs is the tool documentation for the system prompt, in the syntax of
// the agent's format (its FormatSpec's Docs): Python signatures and a
// <helpers> example for helpers, a parameter list per tool and a ```tool
// example for fenced (the shape of the seed's tool registry: "name (type,
// required, default: X): description"), the tool's JSON Schema and an
// example block or object for xml, json and strict, a short list of the
// accepted forms for auto, and an added format's Docs. It is empty for the
// native format, whose tools travel in the API request instead, for an
// agent without tools, and for a format cfg does not know.
//
// The output is deterministic: tools in the agent's order, parameters in the
// order their schema's "properties" are written (not sorted: that is also the
// order positional helpers arguments take), schemas as written, compacted,
// less any default the schema check dropped (see Config.Warnings).
func ToolDocs(cfg Config) string {
	tools := cfg.tools()
	spec, ok := cfg.formatSpec()
	if len(tools) == 0 || !ok {
		return ""
	}
	return spec.docs(tools)
}

// schemaDocs is intro followed by the tools, each with its description and
// its parameters' JSON Schema: the docs of xml, json, strict and auto.
func schemaDocs(intro string, tools []Tool) string {
	var b strings.Builder
	b.WriteString(intro)
	b.WriteString("\nTools:\n")
	for _, t := range tools {
		fmt.Fprintf(&b, "\n%s", t.Name)
		if d := strings.TrimSpace(t.Description); d != "" {
			fmt.Fprintf(&b, ": %s", d)
		}
		fmt.Fprintf(&b, "\n  parameters (JSON Schema): %s\n", docParams(t))
	}
	return b.String()
}

// writeHelpersDocs documents tools as Python signatures.
func writeHelpersDocs(b *strings.Builder, tools []Tool) {
	b.WriteString("You can call these tools as Python functions:\n")
	for _, t := range tools {
		sig, notes := pySignature(t)
		fmt.Fprintf(b, "\n%s\n", sig)
		if d := strings.TrimSpace(t.Description); d != "" {
			fmt.Fprintf(b, "    %s\n", strings.ReplaceAll(d, "\n", "\n    "))
		}
		for _, n := range notes {
			fmt.Fprintf(b, "    %s\n", n)
		}
	}
	ex := exampleCall(tools[0])
	ex.ID = ""
	fmt.Fprintf(b, "\nTo call tools, write statements inside a <helpers> block:\n\n%s\n\n", renderHelpersBlock(ex))
	b.WriteString(helpersRules)
}

// helpersRules is what the system prompt tells a model about the helpers
// subset (helperProgram documents it in full).
const helpersRules = "- One statement per line (or separate statements with ;); they run in the order written. " +
	"Every call's result comes back in the next message, in a <helpers_result> block.\n" +
	"- Pass arguments by keyword, or by position in the order of the signature.\n" +
	"- To use a result in the same block, assign it to a name (r = tool(...)) and use the name in a later statement. " +
	"A result is text; when it is JSON, r[\"key\"] and r[0] read its fields and items.\n" +
	"- Values are literals (strings, numbers, True, False, None, lists, tuples, dicts), names assigned before, " +
	"x[\"key\"] and x[i], a + b (two strings, or two numbers) and f-strings such as f\"id {r['id']}\". " +
	"Nothing else: no other operators, no conditions or loops, no attributes or methods, no call inside another call's arguments.\n" +
	"- If a statement cannot be computed (a missing key, a result that is not JSON), the block stops there: " +
	"the next message has the results so far and the error, in a <helpers_error> block.\n" +
	"- An argument shown as \"= ...\" is optional: leave it out rather than pass None.\n" +
	"- Text outside the block is your message. To give your final answer, reply without a <helpers> block.\n"

// toolParams reads a tool's schema: each property's schema text by name,
// the required names, and the property names in the order written.
func toolParams(t Tool) (props map[string]string, required map[string]bool, names []string) {
	props, required = map[string]string{}, map[string]bool{}
	schema := map[string]string{}
	if json.Valid(t.Parameters) {
		schema = schemaNode(docSchema(t))
		for _, m := range jsonMembers(schema["properties"]) {
			props[m.key] = m.raw
		}
	}
	for _, m := range jsonMembers(schema["required"]) {
		if s, ok := jsonStringOf(m.raw); ok {
			required[s] = true
		}
	}
	return props, required, helperParamOrder(t.Parameters)
}

// pySignature is a tool's Python signature, such as
// find_user(name: str, zip: str = "10001") -> str, and one note per
// parameter that has a description or constraints.
func pySignature(t Tool) (string, []string) {
	props, required, names := toolParams(t)
	// In Python a parameter without a default cannot follow one with a
	// default positionally: from the first defaulted parameter that comes
	// before an undefaulted one, the rest are keyword-only (a "*" marker).
	defaulted := func(name string) bool {
		_, def := schemaNode(props[name])["default"]
		return def || !required[name]
	}
	kwOnly, last := -1, -1
	for i, name := range names {
		if !defaulted(name) {
			last = i
		} else if kwOnly < 0 {
			kwOnly = i
		}
	}
	if kwOnly > last {
		kwOnly = -1
	}
	var parts, notes []string
	for i, name := range names {
		if i == kwOnly {
			parts = append(parts, "*")
		}
		node := schemaNode(props[name])
		part := name + ": " + pyType(props[name], 0)
		if def, ok := node["default"]; ok {
			part += " = " + pyLiteral(def)
		} else if !required[name] {
			part += " = ..."
		}
		parts = append(parts, part)
		if note := paramNote(node); note != "" {
			notes = append(notes, name+": "+note)
		}
	}
	return fmt.Sprintf("%s(%s) -> str", t.Name, strings.Join(parts, ", ")), notes
}

// paramNote is a parameter's description and constraints, in one line.
func paramNote(node map[string]string) string {
	var cons []string
	for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems", "pattern", "format"} {
		if v, ok := node[k]; ok {
			cons = append(cons, k+" "+v)
		}
	}
	desc, _ := jsonStringOf(node["description"])
	desc = strings.Join(strings.Fields(desc), " ")
	switch {
	case len(cons) == 0:
		return desc
	case desc == "":
		return "(" + strings.Join(cons, ", ") + ")"
	}
	return desc + " (" + strings.Join(cons, ", ") + ")"
}

// pyType writes a JSON Schema as a Python type: str, int, float, bool, None,
// list[T], Literal[...] for enums, unions with |, and {"key": T,
// "opt": NotRequired[T]} for objects with properties.
func pyType(schema string, depth int) string {
	node := schemaNode(schema)
	if enum, ok := node["enum"]; ok && strings.HasPrefix(enum, "[") {
		var vals []string
		for _, m := range jsonMembers(enum) {
			vals = append(vals, pyLiteral(m.raw))
		}
		return "Literal[" + strings.Join(vals, ", ") + "]"
	}
	if c, ok := node["const"]; ok {
		return "Literal[" + pyLiteral(c) + "]"
	}
	var alts []string
	for _, k := range []string{"anyOf", "oneOf"} {
		for _, m := range jsonMembers(node[k]) {
			alts = append(alts, pyType(m.raw, depth+1))
		}
	}
	if t := node["type"]; strings.HasPrefix(t, "[") {
		for _, m := range jsonMembers(t) {
			alts = append(alts, pyTypeName(m.raw, node, depth))
		}
	} else if t != "" {
		alts = append(alts, pyTypeName(t, node, depth))
	}
	if len(alts) == 0 {
		return "Any"
	}
	var uniq []string
	for _, a := range alts {
		if !slices.Contains(uniq, a) {
			uniq = append(uniq, a)
		}
	}
	return strings.Join(uniq, " | ")
}

func pyTypeName(rawName string, node map[string]string, depth int) string {
	name, _ := jsonStringOf(rawName)
	switch name {
	case "string":
		return "str"
	case "integer":
		return "int"
	case "number":
		return "float"
	case "boolean":
		return "bool"
	case "null":
		return "None"
	case "array":
		if items := node["items"]; strings.HasPrefix(items, "{") && depth < 4 {
			return "list[" + pyType(items, depth+1) + "]"
		}
		return "list"
	case "object":
		props := jsonMembers(node["properties"])
		if len(props) == 0 || depth >= 4 {
			return "dict"
		}
		required := map[string]bool{}
		for _, m := range jsonMembers(node["required"]) {
			if s, ok := jsonStringOf(m.raw); ok {
				required[s] = true
			}
		}
		var fields []string
		for _, p := range props {
			t := pyType(p.raw, depth+1)
			if !required[p.key] {
				t = "NotRequired[" + t + "]"
			}
			fields = append(fields, pyString(p.key)+": "+t)
		}
		return "{" + strings.Join(fields, ", ") + "}"
	}
	return "Any"
}

// schemaNode maps the keys of a JSON object to their values (the first of
// duplicates); anything else gives an empty map.
func schemaNode(raw string) map[string]string {
	node := map[string]string{}
	if !strings.HasPrefix(raw, "{") {
		return node
	}
	for _, m := range jsonMembers(raw) {
		if _, dup := node[m.key]; !dup {
			node[m.key] = m.raw
		}
	}
	return node
}

// exampleCall is a call of t for the docs: its required parameters (or its
// first one) with their default, first example or enum value, or a value of
// their type.
func exampleCall(t Tool) NativeCall {
	props, required, names := toolParams(t)
	var args []helperArg
	for i, name := range names {
		if required[name] || (len(required) == 0 && i == 0) {
			args = append(args, helperArg{key: name, json: exampleValue(props[name])})
		}
	}
	return NativeCall{ID: "a1", Name: t.Name, Arguments: membersJSON(args)}
}

func exampleValue(schema string) string {
	node := schemaNode(schema)
	if v, ok := node["default"]; ok {
		return compactJSONText(v)
	}
	for _, k := range []string{"examples", "enum"} {
		if ms := jsonMembers(node[k]); strings.HasPrefix(node[k], "[") && len(ms) > 0 {
			return compactJSONText(ms[0].raw)
		}
	}
	if c, ok := node["const"]; ok {
		return compactJSONText(c)
	}
	t := node["type"]
	if ms := jsonMembers(t); strings.HasPrefix(t, "[") && len(ms) > 0 {
		t = ms[0].raw
	}
	switch t {
	case `"string"`:
		return `"..."`
	case `"integer"`:
		return "1"
	case `"number"`:
		return "1.5"
	case `"boolean"`:
		return "true"
	case `"array"`:
		return "[]"
	case `"object"`:
		return "{}"
	}
	return "null"
}
