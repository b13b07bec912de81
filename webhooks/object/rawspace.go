package object

// isSpace reports whether c is JSON white space.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// skipSpace returns the index of the first byte at or after i that is not
// white space, or len(data).
func skipSpace(data []byte, i int) int {
	// Every white space byte is <= ' ': the API server sends compact
	// JSON, and this one comparison is usually all there is to do.
	for i < len(data) && data[i] <= ' ' && isSpace(data[i]) {
		i++
	}
	return i
}

// trimSpace returns data without the white space around it.
func trimSpace(data []byte) []byte {
	i, j := 0, len(data)
	for i < j && isSpace(data[i]) {
		i++
	}
	for j > i && isSpace(data[j-1]) {
		j--
	}
	return data[i:j]
}
