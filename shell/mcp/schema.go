package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// maxSchemaNodes bounds a schema after inlining: shared definitions can make
// it grow exponentially.
const maxSchemaNodes = 10000

// keptKeywords are copied as they are: the keywords the core checks, and
// description, which the model needs.
var keptKeywords = map[string]bool{
	"type": true, "nullable": true, "enum": true, "const": true, "default": true,
	"minimum": true, "maximum": true, "multipleOf": true,
	"minLength": true, "maxLength": true, "pattern": true,
	"minItems": true, "maxItems": true, "uniqueItems": true,
	"required": true, "description": true,
}

// refusedKeywords change what a schema accepts and the core cannot check
// them; a schema using one is refused rather than checked less strictly.
var refusedKeywords = map[string]bool{
	"$dynamicRef": true, "$recursiveRef": true, "not": true,
	"if": true, "then": true, "else": true, "patternProperties": true, "propertyNames": true,
	"dependentRequired": true, "dependentSchemas": true, "dependencies": true,
	"contains": true, "minContains": true, "maxContains": true,
	"minProperties": true, "maxProperties": true,
	"unevaluatedProperties": true, "unevaluatedItems": true,
}

// NormalizeSchema rewrites a tool's input schema into the subset of JSON
// Schema the core checks:
//
//   - a local $ref ("#/$defs/X", "#/definitions/X", any "#/..." pointer) is
//     replaced by its target; keywords beside it are merged in (theirs win
//     for description and default); a recursive $ref is an error;
//   - allOf is merged into its schema (properties merged, required united,
//     types intersected); conflicting values are an error;
//   - draft-07 tuples (items as an array, additionalItems) become prefixItems
//     and items; draft-04 boolean exclusiveMinimum/exclusiveMaximum become
//     numbers;
//   - $defs and definitions are dropped, and so is every keyword the core
//     neither checks nor needs ($schema, $id, title, examples, format,
//     readOnly, deprecated, vendor extensions, ...); description is kept;
//   - keywords that constrain values but that the core cannot check (not,
//     if/then/else, patternProperties, minProperties, ...) are an error
//     naming the keyword and where it is.
//
// An empty schema stays empty (no arguments). The output is deterministic
// JSON (object keys sorted).
func NormalizeSchema(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if dec.More() {
		return nil, errors.New("not JSON: data after the schema")
	}
	if _, ok := root.(map[string]any); !ok {
		return nil, errors.New("must be a JSON object")
	}
	n := &normalizer{root: root}
	out, err := n.schema(root, "")
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return b, nil
}

type normalizer struct {
	root  any
	refs  []string // the $refs being inlined, outermost first
	nodes int
}

func errAt(at, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if at == "" {
		return errors.New(msg)
	}
	return errors.New(at + ": " + msg)
}

func join(at, k string) string {
	if at == "" {
		return k
	}
	return at + "." + k
}

// schema normalizes one schema (a boolean or an object).
func (n *normalizer) schema(v any, at string) (any, error) {
	if b, ok := v.(bool); ok {
		return b, nil
	}
	s, ok := v.(map[string]any)
	if !ok {
		return nil, errAt(at, "must be a schema (a JSON object or a boolean)")
	}
	if n.nodes++; n.nodes > maxSchemaNodes {
		return nil, fmt.Errorf("more than %d schemas after inlining $ref", maxSchemaNodes)
	}
	out := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(s)) {
		v := s[k]
		var err error
		switch {
		case (k == "minimum" && s["exclusiveMinimum"] == true) || (k == "maximum" && s["exclusiveMaximum"] == true):
			// draft-04: the bound moves to exclusiveMinimum/Maximum
		case keptKeywords[k]:
			out[k] = v
		case k == "exclusiveMinimum" || k == "exclusiveMaximum":
			err = n.exclusive(out, s, k, v, at)
		case k == "items":
			if list, isList := v.([]any); isList { // draft-07 tuple
				out["prefixItems"], err = n.list(list, join(at, "items"))
				if err == nil {
					if extra, has := s["additionalItems"]; has {
						out["items"], err = n.schema(extra, join(at, "additionalItems"))
					}
				}
			} else {
				out[k], err = n.schema(v, join(at, k))
			}
		case k == "additionalProperties":
			out[k], err = n.schema(v, join(at, k))
		case k == "prefixItems" || k == "anyOf" || k == "oneOf":
			list, isList := v.([]any)
			if !isList {
				return nil, errAt(at, "%s must be an array of schemas", k)
			}
			out[k], err = n.list(list, join(at, k))
		case k == "properties":
			out[k], err = n.properties(v, at)
		case k == "$ref", k == "allOf", k == "additionalItems", k == "$defs", k == "definitions":
			// $ref and allOf are merged below; additionalItems went with items.
		case refusedKeywords[k]:
			return nil, errAt(at, "keyword %q is not supported", k)
		}
		if err != nil {
			return nil, err
		}
	}
	var merged any = out
	if ref, has := s["$ref"]; has {
		target, err := n.ref(ref, join(at, "$ref"))
		if err != nil {
			return nil, err
		}
		if merged, err = merge(merged, target, at); err != nil {
			return nil, err
		}
	}
	if all, has := s["allOf"]; has {
		list, isList := all.([]any)
		if !isList || len(list) == 0 {
			return nil, errAt(at, "allOf must be a non-empty array of schemas")
		}
		for i, sub := range list {
			part, err := n.schema(sub, fmt.Sprintf("%s[%d]", join(at, "allOf"), i))
			if err != nil {
				return nil, err
			}
			if merged, err = merge(merged, part, at); err != nil {
				return nil, err
			}
		}
	}
	return merged, nil
}

func (n *normalizer) list(list []any, at string) ([]any, error) {
	out := make([]any, len(list))
	for i, v := range list {
		var err error
		if out[i], err = n.schema(v, fmt.Sprintf("%s[%d]", at, i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (n *normalizer) properties(v any, at string) (map[string]any, error) {
	props, ok := v.(map[string]any)
	if !ok {
		return nil, errAt(at, "properties must be an object of schemas")
	}
	out := make(map[string]any, len(props))
	for _, name := range slices.Sorted(maps.Keys(props)) {
		var err error
		if out[name], err = n.schema(props[name], join(at, "properties."+name)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// exclusive copies exclusiveMinimum/Maximum, turning the draft-04 boolean
// form (a flag on minimum/maximum) into the number form.
func (n *normalizer) exclusive(out, s map[string]any, k string, v any, at string) error {
	b, isBool := v.(bool)
	if !isBool {
		out[k] = v
		return nil
	}
	if !b {
		return nil
	}
	bound := strings.ToLower(strings.TrimPrefix(k, "exclusive"))
	limit, has := s[bound]
	if !has {
		return errAt(at, "%s is true without %s", k, bound)
	}
	out[k] = limit
	return nil
}

// ref resolves and normalizes a local $ref.
func (n *normalizer) ref(v any, at string) (any, error) {
	ref, ok := v.(string)
	if !ok {
		return nil, errAt(at, "must be a string")
	}
	if !strings.HasPrefix(ref, "#") {
		return nil, errAt(at, "%q: only local references (#/...) are supported", ref)
	}
	if slices.Contains(n.refs, ref) {
		return nil, errAt(at, "%q is recursive; recursive schemas are not supported", ref)
	}
	target, err := n.pointer(ref)
	if err != nil {
		return nil, errAt(at, "%q: %v", ref, err)
	}
	n.refs = append(n.refs, ref)
	defer func() { n.refs = n.refs[:len(n.refs)-1] }()
	return n.schema(target, "("+ref+")")
}

// pointer resolves a JSON pointer fragment ("#/a/b") against the root.
func (n *normalizer) pointer(ref string) (any, error) {
	frag, err := url.PathUnescape(strings.TrimPrefix(ref, "#"))
	if err != nil {
		return nil, err
	}
	if frag == "" {
		return n.root, nil
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, errors.New("anchors are not supported; use a JSON pointer (#/$defs/NAME)")
	}
	cur := n.root
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, errors.New("not found")
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, errors.New("not found")
			}
			cur = c[i]
		default:
			return nil, errors.New("not found")
		}
	}
	return cur, nil
}

// merge combines two normalized schemas that must both hold (a $ref and its
// siblings, or allOf). a's description and default win.
func merge(a, b any, at string) (any, error) {
	if ab, ok := a.(bool); ok {
		if !ab {
			return false, nil
		}
		return b, nil
	}
	if bb, ok := b.(bool); ok {
		if !bb {
			return false, nil
		}
		return a, nil
	}
	am, bm := a.(map[string]any), b.(map[string]any)
	out := maps.Clone(am)
	for _, k := range slices.Sorted(maps.Keys(bm)) {
		bv := bm[k]
		av, has := out[k]
		switch {
		case !has:
			out[k] = bv
		case k == "description" || k == "default":
			// a's wins
		case k == "required":
			out[k] = unite(av, bv)
		case k == "type":
			t, err := intersectTypes(av, bv)
			if err != nil {
				return nil, errAt(at, "%v", err)
			}
			out[k] = t
		case k == "properties":
			ap, bp := av.(map[string]any), bv.(map[string]any)
			props := maps.Clone(ap)
			for _, name := range slices.Sorted(maps.Keys(bp)) {
				if prev, dup := props[name]; dup {
					m, err := merge(prev, bp[name], join(at, "properties."+name))
					if err != nil {
						return nil, err
					}
					props[name] = m
				} else {
					props[name] = bp[name]
				}
			}
			out[k] = props
		case reflect.DeepEqual(av, bv):
		default:
			return nil, errAt(at, "cannot merge $ref/allOf: conflicting values for %q", k)
		}
	}
	return out, nil
}

func unite(a, b any) any {
	al, _ := a.([]any)
	bl, _ := b.([]any)
	out := slices.Clone(al)
	for _, v := range bl {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func typeList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

func intersectTypes(a, b any) (any, error) {
	bl := typeList(b)
	var both []any
	for _, t := range typeList(a) {
		if slices.Contains(bl, t) || (t == "integer" && slices.Contains(bl, "number")) {
			both = append(both, t)
		} else if t == "number" && slices.Contains(bl, "integer") {
			both = append(both, "integer")
		}
	}
	switch len(both) {
	case 0:
		return nil, fmt.Errorf("cannot merge $ref/allOf: types %v and %v have nothing in common", a, b)
	case 1:
		return both[0], nil
	}
	return both, nil
}
