package core

import (
	"encoding/json"
	"sync"

	"github.com/stepwise-agent/stepwise/core/schema"
)

// schemaCacheSize bounds the compiled schemas kept; past it the cache starts
// over. Agents have few tools, so in practice every schema compiles once.
const schemaCacheSize = 512

// schemaCache holds compiled argument schemas by their JSON text. Compiled
// schemas are never modified after compiling, so sharing them is safe, and
// the cache changes no result: it only saves recompiling on every call.
var schemaCache = struct {
	sync.Mutex
	m map[string]*argSchema
}{m: map[string]*argSchema{}}

// cachedArgSchema is schema.Compile with the cache in front.
func cachedArgSchema(raw json.RawMessage) (*argSchema, error) {
	schemaCache.Lock()
	s, ok := schemaCache.m[string(raw)] // a lookup by string(raw) does not copy raw
	schemaCache.Unlock()
	if ok {
		return s, nil
	}
	s, err := schema.Compile(raw)
	if err != nil {
		return nil, err
	}
	schemaCache.Lock()
	if len(schemaCache.m) >= schemaCacheSize {
		schemaCache.m = map[string]*argSchema{}
	}
	schemaCache.m[string(raw)] = s
	schemaCache.Unlock()
	return s, nil
}
