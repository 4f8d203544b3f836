package core

import (
	"fmt"
	"slices"
	"strings"
)

// writeFencedDocs documents tools for the fenced format in the shape of the
// seed's tool registry: each tool's name and description, its parameters
// as a list, then how to call one in a ```tool block.
func writeFencedDocs(b *strings.Builder, tools []Tool) {
	b.WriteString("You have access to the following tools:\n")
	writeToolList(b, tools)
	fmt.Fprintf(b, "\nTo use a tool, respond with a fenced block like this:\n\n%s\n\n", renderFencedCall(exampleCall(tools[0])))
	b.WriteString("- One call per block: a JSON object with \"tool\" and \"parameters\" (and optionally \"tag\", naming the call). Several blocks run in the order written.\n" +
		"- Text outside the blocks is your message. The tools are run, and each result comes back to you in a ```tool_result block.\n" +
		"- To give your final answer, reply without a ```tool block.\n")
}

// customDocs documents tools for a format that has no Docs of its own:
// the tool list, and an example written by its RenderCall.
func customDocs(f FormatSpec, tools []Tool) string {
	var b strings.Builder
	b.WriteString("You have access to the following tools:\n")
	writeToolList(&b, tools)
	fmt.Fprintf(&b, "\nTo use a tool, write a call like this:\n\n%s\n\n", f.RenderCall(exampleCall(tools[0])))
	b.WriteString("Each result comes back to you in the next message. To give your final answer, reply without a call.\n")
	return b.String()
}

// writeToolList writes, for each tool, a blank line, "name: description"
// and its parameters as ToolParamDocs lists them.
func writeToolList(b *strings.Builder, tools []Tool) {
	for _, t := range tools {
		b.WriteString("\n" + t.Name)
		if d := strings.TrimSpace(t.Description); d != "" {
			b.WriteString(": " + d)
		}
		b.WriteString("\n" + ToolParamDocs(t))
	}
}

// ToolParamDocs lists a tool's parameters as the fenced format documents
// them, one line each, in the order its schema's "properties" are written:
//
//	Parameters:
//	  - query (string, required): Search query
//	  - num_results (integer, optional, default: 5, minimum 1): Number of results to return
//	  - filters (object, optional)
//	    - site (string, required)
//
// An object's (or a list of objects') own properties follow it, indented.
// Defaults are JSON values; a default the schema check dropped is left out.
// A tool without parameters reads "Parameters: none". Custom formats'
// Docs may use it.
func ToolParamDocs(t Tool) string {
	var b strings.Builder
	writeParamLines(&b, docParams(t), "  ", 0)
	if b.Len() == 0 {
		return "Parameters: none\n"
	}
	return "Parameters:\n" + b.String()
}

// maxParamDepth bounds how deep nested properties are listed.
const maxParamDepth = 3

// writeParamLines writes one line per property of the object schema raw,
// and one for its other arguments when additionalProperties allows them.
func writeParamLines(b *strings.Builder, raw, indent string, depth int) {
	node := schemaNode(raw)
	required := map[string]bool{}
	for _, m := range jsonMembers(node["required"]) {
		if s, ok := jsonStringOf(m.raw); ok {
			required[s] = true
		}
	}
	seen := map[string]bool{}
	for _, p := range jsonMembers(node["properties"]) {
		if seen[p.key] {
			continue
		}
		seen[p.key] = true
		writeParamLine(b, p.key, p.raw, required[p.key], indent, depth)
	}
	switch extra := node["additionalProperties"]; {
	case extra == "true" || strings.HasPrefix(extra, "{"):
		writeParamLine(b, "(any other name)", extra, false, indent, depth)
	}
}

// writeParamLine writes "- name (type, required, ...): description" and the
// properties of an object (or of an array's object items) below it.
func writeParamLine(b *strings.Builder, name, raw string, required bool, indent string, depth int) {
	node := schemaNode(raw)
	attrs := []string{paramType(node, 0)}
	if required {
		attrs = append(attrs, "required")
	} else {
		attrs = append(attrs, "optional")
	}
	if def, ok := node["default"]; ok {
		attrs = append(attrs, "default: "+compactJSONText(def))
	}
	if enum := jsonMembers(node["enum"]); strings.HasPrefix(node["enum"], "[") && len(enum) > 0 {
		vals := make([]string, len(enum))
		for i, m := range enum {
			vals[i] = compactJSONText(m.raw)
		}
		attrs = append(attrs, "one of: "+strings.Join(vals, ", "))
	}
	if c, ok := node["const"]; ok {
		attrs = append(attrs, "always "+compactJSONText(c))
	}
	for _, k := range []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "minItems", "maxItems", "pattern", "format"} {
		if v, ok := node[k]; ok {
			attrs = append(attrs, k+" "+compactJSONText(v))
		}
	}
	if node["uniqueItems"] == "true" {
		attrs = append(attrs, "unique items")
	}
	fmt.Fprintf(b, "%s- %s (%s)", indent, name, strings.Join(attrs, ", "))
	if desc, _ := jsonStringOf(node["description"]); strings.TrimSpace(desc) != "" {
		b.WriteString(": " + strings.Join(strings.Fields(desc), " "))
	}
	b.WriteByte('\n')
	if depth+1 >= maxParamDepth {
		return
	}
	sub := raw
	if items := node["items"]; strings.HasPrefix(items, "{") && !strings.HasPrefix(node["properties"], "{") {
		sub = items
	}
	if strings.HasPrefix(schemaNode(sub)["properties"], "{") {
		writeParamLines(b, sub, indent+"  ", depth+1)
	}
}

// paramType names a schema's type as JSON Schema does ("string", "integer",
// ...), alternatives joined with "or", an array with its items' type
// ("array of string"), "any" when nothing says.
func paramType(node map[string]string, depth int) string {
	var alts []string
	add := func(t string) {
		if t != "" && !slices.Contains(alts, t) {
			alts = append(alts, t)
		}
	}
	typ := node["type"]
	names := []string{typ}
	if strings.HasPrefix(typ, "[") {
		names = nil
		for _, m := range jsonMembers(typ) {
			names = append(names, m.raw)
		}
	}
	for _, n := range names {
		name, _ := jsonStringOf(n)
		if name == "array" && depth < maxParamDepth {
			if items := node["items"]; strings.HasPrefix(items, "{") {
				if it := paramType(schemaNode(items), depth+1); it != "any" {
					name = "array of " + it
				}
			}
		}
		add(name)
	}
	if len(alts) == 0 && depth < maxParamDepth {
		for _, k := range []string{"anyOf", "oneOf"} {
			for _, m := range jsonMembers(node[k]) {
				add(paramType(schemaNode(m.raw), depth+1))
			}
		}
		values := jsonMembers(node["enum"])
		if c, ok := node["const"]; ok {
			values = append(values, jsonMember{raw: c})
		}
		for _, v := range values {
			add(valueType(v.raw))
		}
	}
	if node["nullable"] == "true" && len(alts) > 0 {
		add("null")
	}
	if len(alts) == 0 || slices.Contains(alts, "any") {
		return "any"
	}
	return strings.Join(alts, " or ")
}

// valueType is the JSON Schema type name of a JSON value.
func valueType(raw string) string {
	switch kind := describeJSONKind(raw); kind {
	case "a string":
		return "string"
	case "an object":
		return "object"
	case "an array":
		return "array"
	case "a boolean":
		return "boolean"
	case "null":
		return "null"
	case "a number":
		if strings.ContainsAny(raw, ".eE") {
			return "number"
		}
		return "integer"
	}
	return ""
}
