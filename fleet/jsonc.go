package fleet

// stripJSONC returns data with JSONC's additions to JSON made blank: line
// and block comments, and commas before a closing bracket or brace, are
// replaced by spaces (a comment's newlines are kept). Every other byte
// stays where it was, so that the offset in a json.SyntaxError, and the line
// it is on, are those of the file the user wrote. Strings are copied as
// they are: a "//" inside one is text.
func stripJSONC(data []byte) []byte {
	out := make([]byte, len(data))
	copy(out, data)
	lastComma := -1 // offset of a comma not yet followed by a value
	for i := 0; i < len(out); i++ {
		switch c := out[i]; {
		case c == '"':
			lastComma = -1
			for i++; i < len(out) && out[i] != '"'; i++ {
				if out[i] == '\\' {
					i++
				}
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			out[i], out[i+1] = ' ', ' '
			for i += 2; i < len(out); i++ {
				if out[i] == '*' && i+1 < len(out) && out[i+1] == '/' {
					out[i], out[i+1] = ' ', ' '
					i++
					break
				}
				if out[i] != '\n' && out[i] != '\r' {
					out[i] = ' '
				}
			}
		case c == ',':
			lastComma = i
		case c == ']' || c == '}':
			if lastComma >= 0 {
				out[lastComma] = ' '
			}
			lastComma = -1
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			lastComma = -1
		}
	}
	return out
}

// lineOf is the 1-based line and column of offset in data.
func lineOf(data []byte, offset int64) (line, col int) {
	line, col = 1, 1
	for i := int64(0); i < offset && i < int64(len(data)); i++ {
		if data[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}
