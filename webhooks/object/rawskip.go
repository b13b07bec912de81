package object

// structural marks the bytes skipValue stops at inside a container.
var structural = func() (t [256]bool) {
	for _, c := range []byte(`"{}[]`) {
		t[c] = true
	}
	return t
}()

// skipValue returns the index after the value that starts at data[i],
// without validating it (lazy reading): a string ends at its first
// unescaped quote, a container at the bracket that brings the count of
// open brackets outside strings back to zero (of whichever kind), and
// anything else at the next white space, comma or closing bracket. ok is
// false when the value does not end before the data does, or is empty.
func skipValue(data []byte, i int) (int, bool) {
	if i >= len(data) {
		return i, false
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		for depth := 0; i < len(data); i++ {
			c := data[i]
			if !structural[c] {
				continue
			}
			switch c {
			case '"':
				// A string that does not end takes the container with it.
				end, _ := skipString(data, i)
				i = end - 1
			case '{', '[':
				depth++
			default:
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
		}
		return i, false
	}
	start := i
	for i < len(data) && !isSpace(data[i]) && data[i] != ',' && data[i] != '}' && data[i] != ']' {
		i++
	}
	return i, i > start
}
