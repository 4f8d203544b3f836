package core

// Placeholders until the text formats land (issue 3).

func parseXML(text string) (Parsed, error)               { return Parsed{Text: text}, nil }
func parseJSON(text string) (Parsed, error)              { return Parsed{Text: text}, nil }
func parseFenced(text string) (Parsed, error)            { return Parsed{Text: text}, nil }
func parseStrict(text string) (Parsed, error)            { return Parsed{Text: text}, nil }
func parseHelpers(text string, _ []Tool) (Parsed, error) { return Parsed{Text: text}, nil }
func parseAuto(r ModelReply, _ []Tool) (Parsed, error)   { return parseNative(r), nil }
