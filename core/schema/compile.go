package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Schema is one compiled JSON Schema node: the keyword subset stepwise
// checks tool arguments against (docs/adr/0003-schema-validation.md). It is
// never modified after compiling, so it is safe for concurrent use.
type Schema struct {
	never bool     // the schema false: no value is allowed
	types []string // allowed JSON types, in schema order; nil allows any

	enum     []any
	constVal any
	hasConst bool
	def      any
	hasDef   bool

	minimum, maximum, exclMin, exclMax, multipleOf *numBound

	minLength, maxLength int // -1 when absent
	pattern              *regexp.Regexp

	items              *Schema // nil: any item
	prefixItems        []*Schema
	minItems, maxItems int // -1 when absent
	uniqueItems        bool

	props     map[string]*Schema
	propOrder []string // property names in schema order
	declared  bool     // "properties" is given (always true at the root)
	required  []string
	extra     *Schema // additionalProperties as a schema (true: the empty schema)
	closed    bool    // additionalProperties: false

	anyOf, oneOf []*Schema

	// At the root only: what compiling found but did not refuse, and the
	// JSON paths of the defaults it dropped (see checkDefaults).
	warnings []string
	dropped  [][]string
}

// Warnings lists what compiling found wrong but did not refuse (a default
// that does not fit its own schema, and is dropped), in the order the
// schema was checked; nil for a schema that was not compiled at the root.
func (s *Schema) Warnings() []string { return s.warnings }

// Dropped lists the JSON paths (object keys and array indexes, in the
// schema's text) of the defaults compiling dropped, for docs that must not
// show them.
func (s *Schema) Dropped() [][]string { return s.dropped }

// numBound is a numeric keyword: its exact value and its text for messages.
type numBound struct {
	r    *big.Rat
	text string
}

// schemaTypes are the JSON types a "type" keyword may name.
var schemaTypes = []string{"object", "array", "string", "integer", "number", "boolean", "null"}

// unsupportedKeywords change what a schema accepts but are not implemented;
// a schema using one is refused rather than silently checked less strictly.
// Any other unknown keyword is an annotation and is ignored.
var unsupportedKeywords = map[string]bool{
	"$ref": true, "$dynamicRef": true, "$recursiveRef": true, "allOf": true, "not": true,
	"if": true, "then": true, "else": true, "patternProperties": true, "propertyNames": true,
	"dependentRequired": true, "dependentSchemas": true, "dependencies": true,
	"contains": true, "minContains": true, "maxContains": true,
	"minProperties": true, "maxProperties": true, "additionalItems": true,
	"unevaluatedProperties": true, "unevaluatedItems": true,
}

// Compile compiles a tool's parameter schema, naming every problem (an
// unsupported keyword, a pattern that does not compile, a required name
// that is not a property). Empty or null means the tool takes no arguments;
// otherwise raw must be an object schema using only the supported keywords.
// A default that does not fit its schema is not an error: it is dropped,
// and Warnings and Dropped say so.
func Compile(raw json.RawMessage) (*Schema, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return &Schema{types: []string{"object"}, declared: true, minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}, nil
	}
	if raw[0] != '{' {
		return nil, errors.New("must be a JSON object (an object schema)")
	}
	c := &schemaCompiler{}
	s := c.node(raw, "", nil)
	if s.types != nil && !slices.Equal(s.types, []string{"object"}) {
		c.fail("", `type must be "object": the arguments are always an object`)
	}
	s.declared = true
	c.checkRequired()
	c.checkDefaults()
	if len(c.errs) > 0 {
		return nil, errors.New(strings.Join(c.errs, "; "))
	}
	s.warnings, s.dropped = c.warnings, c.dropped
	return s, nil
}

type schemaCompiler struct {
	errs     []string
	warnings []string   // problems that do not stop the schema (see checkDefaults)
	dropped  [][]string // the paths of the defaults checkDefaults dropped
	nodes    []compiled // every node compiled, for the checks that need the whole tree
}

type compiled struct {
	s    *Schema
	at   string
	path []string
}

func (c *schemaCompiler) fail(at, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if at != "" {
		msg = at + ": " + msg
	}
	c.errs = append(c.errs, msg)
}

// node compiles one schema; at locates it for messages (e.g.
// "properties.tags.items") and path in the schema's JSON (its keys and
// array indexes: ["properties", "tags", "items"]).
func (c *schemaCompiler) node(raw json.RawMessage, at string, path []string) *Schema {
	s := &Schema{minLength: -1, maxLength: -1, minItems: -1, maxItems: -1}
	switch string(bytes.TrimSpace(raw)) {
	case "true":
		return s
	case "false":
		s.never = true
		return s
	}
	var kw map[string]json.RawMessage
	if err := json.Unmarshal(raw, &kw); err != nil {
		c.fail(at, "must be a schema (a JSON object or a boolean)")
		return s
	}
	nullable := false
	keys := make([]string, 0, len(kw))
	for k := range kw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := kw[k]
		switch k {
		case "type":
			s.types = c.types(v, at)
		case "nullable":
			if err := json.Unmarshal(v, &nullable); err != nil {
				c.fail(at, "nullable must be true or false")
			}
		case "enum":
			vals, ok := decodeSchemaValue(v).([]any)
			if !ok || len(vals) == 0 {
				c.fail(at, "enum must be a non-empty array")
			}
			s.enum = vals
		case "const":
			s.constVal, s.hasConst = decodeSchemaValue(v), true
		case "default":
			s.def, s.hasDef = decodeSchemaValue(v), true
		case "minimum":
			s.minimum = c.number(v, at, k)
		case "maximum":
			s.maximum = c.number(v, at, k)
		case "exclusiveMinimum":
			s.exclMin = c.number(v, at, k)
		case "exclusiveMaximum":
			s.exclMax = c.number(v, at, k)
		case "multipleOf":
			if s.multipleOf = c.number(v, at, k); s.multipleOf != nil && s.multipleOf.r.Sign() <= 0 {
				c.fail(at, "multipleOf must be greater than 0")
				s.multipleOf = nil
			}
		case "minLength":
			s.minLength = c.count(v, at, k)
		case "maxLength":
			s.maxLength = c.count(v, at, k)
		case "minItems":
			s.minItems = c.count(v, at, k)
		case "maxItems":
			s.maxItems = c.count(v, at, k)
		case "pattern":
			s.pattern = c.pattern(v, at)
		case "uniqueItems":
			if err := json.Unmarshal(v, &s.uniqueItems); err != nil {
				c.fail(at, "uniqueItems must be true or false")
			}
		case "items":
			if t := bytes.TrimSpace(v); len(t) > 0 && t[0] == '[' {
				c.fail(at, "items must be one schema; use prefixItems for a tuple")
				continue
			}
			s.items = c.node(v, join(at, "items"), withKey(path, k))
		case "prefixItems":
			s.prefixItems = c.list(v, at, path, k, true)
		case "anyOf":
			s.anyOf = c.list(v, at, path, k, false)
		case "oneOf":
			s.oneOf = c.list(v, at, path, k, false)
		case "properties":
			c.properties(s, v, at, path)
		case "required":
			if err := json.Unmarshal(v, &s.required); err != nil {
				c.fail(at, "required must be an array of strings")
			} else if dup := firstDuplicate(s.required); dup != "" {
				c.fail(at, "required names %q twice", dup)
			}
		case "additionalProperties":
			switch string(bytes.TrimSpace(v)) {
			case "false":
				s.closed = true
			default:
				s.extra = c.node(v, join(at, k), withKey(path, k))
			}
		default:
			if unsupportedKeywords[k] {
				c.fail(at, "keyword %q is not supported (see docs/adr/0003-schema-validation.md)", k)
			}
		}
	}
	if nullable && s.types != nil && !slices.Contains(s.types, "null") {
		s.types = append(s.types, "null")
	}
	c.checkBounds(s, at)
	c.nodes = append(c.nodes, compiled{s, at, path})
	return s
}

func (c *schemaCompiler) types(v json.RawMessage, at string) []string {
	var list []string
	if err := json.Unmarshal(v, &list); err != nil {
		var one string
		if err := json.Unmarshal(v, &one); err != nil {
			c.fail(at, "type must be a type name or an array of type names")
			return nil
		}
		list = []string{one}
	}
	if len(list) == 0 {
		c.fail(at, "type must not be an empty array")
		return nil
	}
	for _, t := range list {
		if !slices.Contains(schemaTypes, t) {
			c.fail(at, "type %q is not one of %s", t, strings.Join(schemaTypes, ", "))
			return nil
		}
	}
	if dup := firstDuplicate(list); dup != "" {
		c.fail(at, "type names %q twice", dup)
	}
	return list
}

func (c *schemaCompiler) number(v json.RawMessage, at, k string) *numBound {
	n, ok := decodeSchemaValue(v).(json.Number)
	if !ok {
		c.fail(at, "%s must be a number", k)
		return nil
	}
	r, ok := numberRat(n)
	if !ok {
		c.fail(at, "%s is out of range", k)
		return nil
	}
	return &numBound{r: r, text: n.String()}
}

func (c *schemaCompiler) count(v json.RawMessage, at, k string) int {
	n, ok := decodeSchemaValue(v).(json.Number)
	if ok {
		if r, isNum := numberRat(n); isNum && r.IsInt() && r.Sign() >= 0 && r.Num().IsInt64() && r.Num().Int64() <= 1<<31 {
			return int(r.Num().Int64())
		}
	}
	c.fail(at, "%s must be a non-negative integer", k)
	return -1
}

func (c *schemaCompiler) pattern(v json.RawMessage, at string) *regexp.Regexp {
	var p string
	if err := json.Unmarshal(v, &p); err != nil {
		c.fail(at, "pattern must be a string")
		return nil
	}
	re, err := regexp.Compile(p)
	if err != nil {
		c.fail(at, "pattern %q is not a regular expression stepwise supports (Go RE2 syntax: no lookaround or backreferences): %v", p, err)
		return nil
	}
	return re
}

func (c *schemaCompiler) list(v json.RawMessage, at string, path []string, k string, mayBeEmpty bool) []*Schema {
	var raws []json.RawMessage
	if err := json.Unmarshal(v, &raws); err != nil || (len(raws) == 0 && !mayBeEmpty) {
		c.fail(at, "%s must be a non-empty array of schemas", k)
		return nil
	}
	out := make([]*Schema, len(raws))
	for i, r := range raws {
		out[i] = c.node(r, fmt.Sprintf("%s[%d]", join(at, k), i), withKey(path, k, strconv.Itoa(i)))
	}
	return out
}

func (c *schemaCompiler) properties(s *Schema, v json.RawMessage, at string, path []string) {
	order, err := objectKeys(v)
	if err != nil {
		c.fail(at, "properties must be an object of schemas")
		return
	}
	var raws map[string]json.RawMessage
	_ = json.Unmarshal(v, &raws) // objectKeys proved v is an object
	s.declared = true
	s.props = make(map[string]*Schema, len(raws))
	for _, name := range order {
		if _, seen := s.props[name]; seen {
			continue
		}
		s.propOrder = append(s.propOrder, name)
		s.props[name] = c.node(raws[name], join(at, "properties."+name), withKey(path, "properties", name))
	}
}

// checkBounds refuses numeric and length bounds that no value can meet.
func (c *schemaCompiler) checkBounds(s *Schema, at string) {
	if s.minimum != nil && s.maximum != nil && s.minimum.r.Cmp(s.maximum.r) > 0 {
		c.fail(at, "minimum %s is greater than maximum %s", s.minimum.text, s.maximum.text)
	}
	if s.minLength >= 0 && s.maxLength >= 0 && s.minLength > s.maxLength {
		c.fail(at, "minLength %d is greater than maxLength %d", s.minLength, s.maxLength)
	}
	if s.minItems >= 0 && s.maxItems >= 0 && s.minItems > s.maxItems {
		c.fail(at, "minItems %d is greater than maxItems %d", s.minItems, s.maxItems)
	}
}

// checkRequired makes sure a required property is one the node keeps: with
// declared properties, an undeclared required name would be dropped as unknown.
func (c *schemaCompiler) checkRequired() {
	for _, n := range c.nodes {
		s, at := n.s, n.at
		if !s.declared || s.extra != nil {
			continue
		}
		for _, r := range s.required {
			if _, ok := s.props[r]; !ok {
				c.fail(at, "required argument %q is not among the properties", r)
			}
		}
	}
}

// checkDefaults validates every default against its own schema, strictly
// (unknown properties refused), so injecting one never makes a call invalid.
// A default that does not fit (real-world schemas carry "false" for a
// boolean, null for a string) is dropped with a warning rather than
// refusing the tool: it is never injected, and the tool docs leave it out.
// Nodes are checked children first, so a parent's default is checked
// without its children's dropped ones.
func (c *schemaCompiler) checkDefaults() {
	for _, n := range c.nodes {
		s, at := n.s, n.at
		if !s.hasDef {
			continue
		}
		v := &argChecker{rejectUnknown: true, isDefault: true}
		v.value(s, s.def, nil, true)
		if len(v.errs) > 0 {
			msg := fmt.Sprintf("default %s is ignored: it does not fit the schema (%v)", shortJSON(s.def), v.result())
			if at != "" {
				msg = at + ": " + msg
			}
			c.warnings = append(c.warnings, msg)
			c.dropped = append(c.dropped, n.path)
			s.def, s.hasDef = nil, false
		}
	}
}

// withKey is path with keys appended, never sharing path's backing array.
func withKey(path []string, keys ...string) []string {
	return append(slices.Clip(path), keys...)
}

// objectKeys returns the keys of a JSON object in document order.
func objectKeys(raw json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// decodeSchemaValue decodes a keyword's JSON value with exact numbers.
func decodeSchemaValue(raw json.RawMessage) any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	return v
}

func join(at, k string) string {
	if at == "" {
		return k
	}
	return at + "." + k
}

func firstDuplicate(names []string) string {
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if seen[n] {
			return n
		}
		seen[n] = true
	}
	return ""
}
