package codec

import (
	"fmt"

	"github.com/stepwise-agent/stepwise/core"
	"pgregory.net/rapid"
)

func genText(t *rapid.T, label string) string {
	return rapid.StringN(0, 40, -1).Draw(t, label)
}

func genCall(t *rapid.T, label string) core.ToolCall {
	return core.ToolCall{
		ID:   rapid.StringMatching(`[a-z0-9_]{0,8}`).Draw(t, label+".id"),
		Name: rapid.StringMatching(`[a-z_]{1,8}`).Draw(t, label+".name"),
		Args: rapid.SliceOfN(rapid.Byte(), 0, 20).Draw(t, label+".args"),
	}
}

func genMessage(t *rapid.T, label string) core.Message {
	m := core.Message{
		Role:    rapid.SampledFrom([]core.Role{core.RoleSystem, core.RoleUser, core.RoleAssistant, core.RoleTool, ""}).Draw(t, label+".role"),
		Content: genText(t, label+".content"),
	}
	for i, n := 0, rapid.IntRange(0, 2).Draw(t, label+".calls"); i < n; i++ {
		m.Calls = append(m.Calls, genCall(t, fmt.Sprintf("%s.call%d", label, i)))
	}
	if rapid.Bool().Draw(t, label+".answers") {
		m.CallID = genText(t, label+".call_id")
		m.Name = genText(t, label+".name")
		m.IsError = rapid.Bool().Draw(t, label+".is_error")
	}
	return m
}
